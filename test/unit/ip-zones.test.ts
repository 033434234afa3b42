/**
 * An IPv6 literal with a zone (`fe80::1%eth0`) is no address a setting takes: `%` has a meaning
 * of its own in systemd units and URLs. Each case is the same link-local address, which passes
 * without its zone, so the zone alone is what is refused: by the value check, by every
 * component schema that takes a host or an address, and by the SSH client. The stack's schema
 * is pinned in safety-rules.test.ts.
 */
import * as assert from "assert";
import { sshTargetProblem } from "../../components/providers/host/ssh";
import { isHostAddress, isIpAddress } from "../../components/lib/settings/value-patterns";
import { lxdTransportSchema, lxdWorkerTransportSchema, sshJumpHostSchema, sshTransportSchema } from "../../components/lib/settings/transport-schema";
import { externalDatabaseFields } from "../../components/lib/settings/web-settings";
import { parseSettings } from "../../components/lib/settings/settings";
import { HOST_KEY } from "../fixtures/ssh-keys/keys";

const ZONED = ["fe80::1%eth0", "fe80::1%25eth0", "fe80::1%1"];

/** The messages `schema` refuses `value` with, none when it takes it. */
function refusals(
    schema: { safeParse(v: unknown): { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } } },
    value: unknown,
): string[] {
    const parsed = schema.safeParse(value);
    return parsed.success ? [] : parsed.error!.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
}

describe("an IPv6 address with a zone", () => {
    it("is no IP address and no host address; the same address without its zone is", () => {
        assert.strictEqual(isIpAddress("fe80::1"), true);
        assert.strictEqual(isHostAddress("fe80::1"), true);
        for (const zoned of ZONED) {
            assert.strictEqual(isIpAddress(zoned), false, zoned);
            assert.strictEqual(isHostAddress(zoned), false, zoned);
        }
    });

    const HOST = "expected a DNS name or an IP address, e.g. ci.example.com or 10.0.0.5";
    const lxd = { instance: "w", image: "img", sshPort: 2200 };
    const cases: [string, { safeParse(v: unknown): unknown }, (address: string) => unknown, string][] = [
        ["an SSH host", sshTransportSchema, (a) => ({ host: a, hostKey: HOST_KEY }), `host: ${HOST}`],
        ["a jump host", sshTransportSchema, (a) => ({ host: "10.0.0.5", hostKey: HOST_KEY, proxy: { host: a, hostKey: HOST_KEY } }), `proxy.host: ${HOST}`],
        ["a jump host alone", sshJumpHostSchema, (a) => ({ host: a, hostKey: HOST_KEY }), `host: ${HOST}`],
        ["an LXD instance's sshAddress", lxdTransportSchema, (a) => ({ ...lxd, sshAddress: a }), `sshAddress: ${HOST}`],
        [
            "a server port's address",
            lxdWorkerTransportSchema,
            (a) => ({ ...lxd, serverPorts: { tsa: { port: 2222, server: { address: a, port: 2222 } } } }),
            `serverPorts.tsa.server.address: ${HOST}`,
        ],
        ["an external database's host", externalDatabaseFields, (a) => ({ host: a, user: "concourse" }), `host: ${HOST}`],
    ];
    for (const [what, schema, given, problem] of cases)
        it(`is refused as ${what} by the components' schema`, () => {
            const check = schema as Parameters<typeof refusals>[0];
            assert.deepStrictEqual(refusals(check, given("fe80::1")), []);
            assert.deepStrictEqual(refusals(check, given("fe80::1%eth0")), [problem]);
        });

    it("is refused as the TSA's host by the worker's settings", () => {
        const problems = (tsaHost: string) => {
            const parsed = parseSettings([{ concourse: { tsaHost } }]);
            return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
        };
        assert.deepStrictEqual(problems("fe80::1"), []);
        assert.deepStrictEqual(problems("fe80::1%eth0"), [`concourse.tsaHost: ${HOST}`]);
    });

    it("is refused by the SSH client, as the host and as the jump host", () => {
        const target = { host: "fe80::1", port: 22, user: "root", hostKey: HOST_KEY };
        assert.strictEqual(sshTargetProblem(target), undefined);
        assert.strictEqual(sshTargetProblem({ ...target, host: "fe80::1%eth0" }), 'ssh: the host "fe80::1%eth0" is neither a DNS name nor an IP address');
        assert.strictEqual(
            sshTargetProblem({ ...target, proxy: { ...target, privateKey: "unused", host: "fe80::1%eth0" } }),
            'ssh: the jump host\'s host "fe80::1%eth0" is neither a DNS name nor an IP address',
        );
    });
});
