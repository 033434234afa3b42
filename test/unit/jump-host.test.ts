/**
 * A jump host (`transport.ssh.proxy`): the stack's schema checks its values as strictly as the
 * host's own and reports each bad one at its path; the mapping reads its key from the secret it
 * names; every remote command of the host and every check that reaches it over SSH goes through
 * it; and the SSH client refuses a jump host value that is no plain user, host, port or key.
 */
import * as assert from "assert";
import * as pulumi from "@pulumi/pulumi";
import { GpuWorker } from "../../components/chain/gpu-worker";
import { sshTargetProblem, SshTarget } from "../../components/providers/host/ssh";
import { sshTransportArgs, workerArgs } from "../../stacks/args/component-args";
import { parseStack, parseStackConfig } from "../../stacks/checks/stack";
import { sshTransportSchema } from "../../stacks/config/schema";
import { NO_GPU, stackWith } from "../fixtures/stacks/inventories";
import { recordGraph, settle } from "../support/pulumi-graph";
import { problemsOf } from "../support/stack-problems";
import { HOST_KEY, JUMP_KEY } from "../fixtures/ssh-keys/keys";
import { SSH_KEY_PASTE } from "../../components/lib/settings/ssh-public-key";

function stackWithProxy(proxy: unknown) {
    const raw = stackWith({ name: "a", inventory: NO_GPU });
    (raw.hosts[0].transport.ssh as Record<string, unknown>).proxy = proxy;
    return raw;
}

describe("transport.ssh.proxy in the stack config", () => {
    it("takes a jump host with the same defaults as the host's own connection", () => {
        const [host] = parseStack(stackWithProxy({ host: "bastion.example.test", privateKeySecret: "bastion-key", hostKey: JUMP_KEY })).hosts;
        assert.deepStrictEqual((host.transport as { ssh: unknown }).ssh, {
            host: "10.0.0.10",
            port: 22,
            user: "root",
            privateKeySecret: "a-ssh-key",
            hostKey: HOST_KEY,
            proxy: { host: "bastion.example.test", port: 22, user: "root", privateKeySecret: "bastion-key", hostKey: JUMP_KEY },
        });
    });

    it("reports every bad value of the jump host at its path, all at once", () => {
        const problems = problemsOf(
            stackWithProxy({
                host: "-oProxyCommand=touch /tmp/pwned",
                port: 0,
                user: "jump user",
                privateKeySecret: "$(id)",
                hostKey: `${JUMP_KEY}\n* ${HOST_KEY}`,
                jump: "again",
            }),
        );
        assert.deepStrictEqual(problems, [
            "hosts[0].transport.ssh.proxy.host: expected a DNS name or an IP address, e.g. ci.example.com or 10.0.0.5",
            "hosts[0].transport.ssh.proxy.port: expected a port number (1-65535)",
            "hosts[0].transport.ssh.proxy.user: expected a POSIX user name: a letter or _, then letters, digits, _ . or - (at most 32)",
            "hosts[0].transport.ssh.proxy.privateKeySecret: expected the name of a secret config key, e.g. gpu-a-ssh-key",
            `hosts[0].transport.ssh.proxy.hostKey: 2 keys on 2 lines: pin one key, not several (ssh-keyscan prints one line per key type; \`-t ed25519\` picks one); ${SSH_KEY_PASTE.host}`,
            "hosts[0].transport.ssh.proxy: unknown key jump",
        ]);
    });

    it("needs the jump host's address, key and pinned host key", () => {
        assert.deepStrictEqual(problemsOf(stackWithProxy({})), [
            "hosts[0].transport.ssh.proxy.host: required (expected a DNS name or an IP address, e.g. ci.example.com or 10.0.0.5)",
            "hosts[0].transport.ssh.proxy.privateKeySecret: required (expected the name of a secret config key)",
            "hosts[0].transport.ssh.proxy.hostKey: required (expected a public host key such as 'ssh-ed25519 AAAA...')",
        ]);
    });

    it("the components get the jump host's private key from the secret it names", () => {
        const ssh = sshTransportSchema.parse({
            host: "10.0.0.5",
            privateKeySecret: "host-key",
            hostKey: HOST_KEY,
            proxy: { host: "bastion.example.test", port: 2222, user: "jump", privateKeySecret: "bastion-key", hostKey: JUMP_KEY },
        });
        assert.deepStrictEqual(
            sshTransportArgs(ssh, (k) => `secret of ${k}`),
            {
                host: "10.0.0.5",
                port: 22,
                user: "root",
                privateKey: "secret of host-key",
                hostKey: HOST_KEY,
                proxy: { host: "bastion.example.test", port: 2222, user: "jump", privateKey: "secret of bastion-key", hostKey: JUMP_KEY },
            },
        );
    });
});

describe("a worker behind a jump host (Pulumi mocks)", function () {
    this.timeout(30_000);

    it("every remote command and copy, and the drift guard, go through the jump host, pinned, in a secret connection", async () => {
        const raw = stackWithProxy({ host: "bastion.example.test", port: 2222, user: "jump", privateKeySecret: "bastion-key", hostKey: JUMP_KEY });
        const g = recordGraph();
        for (const host of parseStackConfig(raw))
            new GpuWorker(
                host.name,
                workerArgs(host, (k) => pulumi.secret(`key of ${k}`), process.cwd()),
            );
        await settle(g);
        const reaching = g.resources.filter((r) => r.inputs.connection !== undefined);
        const types = new Set(reaching.map((r) => r.type));
        for (const t of ["command:remote:Command", "command:remote:CopyToRemote", "pulumi-nodejs:dynamic/gpu-workers:HostDriftGuard"])
            assert.ok(types.has(t), `no ${t} reaches the host: ${[...types].join(", ")}`);
        for (const r of reaching) {
            const wrapped = r.inputs.connection as Record<string, unknown> & { value: { host: string; proxy?: Record<string, unknown> } };
            assert.strictEqual(
                wrapped[pulumi.runtime.specialSigKey],
                pulumi.runtime.specialSecretSig,
                `${r.name}: the connection (private keys in it) is a secret`,
            );
            assert.strictEqual(wrapped.value.host, "10.0.0.10");
            const { dialErrorLimit: _limit, perDialTimeout: _timeout, ...proxy } = wrapped.value.proxy ?? {};
            assert.deepStrictEqual(
                proxy,
                { host: "bastion.example.test", port: 2222, user: "jump", privateKey: "key of bastion-key", hostKey: JUMP_KEY },
                r.name,
            );
        }
    });
});

describe("runOverSsh through a jump host: the checks of its values", () => {
    const target: SshTarget = {
        host: "10.0.0.5",
        port: 2201,
        user: "root",
        privateKey: "unused",
        hostKey: HOST_KEY,
        proxy: { host: "bastion.example.test", port: 22, user: "jump", privateKey: "unused", hostKey: JUMP_KEY },
    };

    it("refuses a jump host whose values could become options, shell words or known_hosts lines", () => {
        const jump = (proxy: Partial<SshTarget["proxy"]>) => sshTargetProblem({ ...target, proxy: { ...target.proxy!, ...proxy } });
        assert.strictEqual(sshTargetProblem(target), undefined);
        assert.strictEqual(jump({ user: "-oProxyCommand=sh" }), 'ssh: the jump host\'s user "-oProxyCommand=sh" is no POSIX user name');
        assert.strictEqual(jump({ host: "b;touch /tmp/x" }), 'ssh: the jump host\'s host "b;touch /tmp/x" is neither a DNS name nor an IP address');
        assert.strictEqual(jump({ port: 22.5 }), "ssh: the jump host's port 22.5 is no TCP port (1 to 65535)");
        assert.strictEqual(
            jump({ hostKey: `${JUMP_KEY}\n* ${HOST_KEY}` }),
            `ssh: the jump host's host key of bastion.example.test (proxy.hostKey): 2 keys on 2 lines: pin one key, not several (ssh-keyscan prints one line per key type; \`-t ed25519\` picks one); ${SSH_KEY_PASTE.host}`,
        );
        assert.strictEqual(sshTargetProblem({ ...target, port: 70000 }), "ssh: the port 70000 is no TCP port (1 to 65535)");
    });
});
