/**
 * A host key that is absent, empty or white space, on the host or on its jump host: the stack's
 * schema refuses it at its path, and a component used alone (its connection, and the program's
 * SSH client) refuses it naming the field, never with a TypeError from reading it.
 */
import * as assert from "assert";
import { commandConnection } from "../../components/providers/host/command-connection";
import { runOverSsh, SshTarget, sshTargetProblem } from "../../components/providers/host/ssh";
import { NO_GPU, stackWith } from "../fixtures/stacks/inventories";
import { recordGraph } from "../support/pulumi-graph";
import { problemsOf } from "../support/stack-problems";
import { HOST_KEY, JUMP_KEY } from "../fixtures/ssh-keys/keys";
import { SSH_KEY_PASTE } from "../../components/lib/settings/ssh-public-key";

const ABSENT = ["absent", "empty", "white space"] as const;

/** `ssh` with its hostKey taken away (absent), or set to "" or white space. */
function withKey<T extends { hostKey?: unknown }>(ssh: T, how: (typeof ABSENT)[number]): T {
    const { hostKey: _key, ...rest } = ssh;
    return (how === "absent" ? rest : { ...rest, hostKey: how === "empty" ? "" : " \t " }) as T;
}

describe("an absent or empty host key", () => {
    const target: SshTarget = {
        host: "10.0.0.5",
        port: 22,
        user: "root",
        privateKey: "unused",
        hostKey: HOST_KEY,
        proxy: { host: "bastion.example.test", port: 22, user: "jump", privateKey: "unused", hostKey: JUMP_KEY },
    };

    for (const how of ABSENT) {
        it(`the stack's schema refuses one ${how}, at its path: the host's and the jump host's`, () => {
            const raw = stackWith({ name: "a", inventory: NO_GPU });
            const transport = raw.hosts[0].transport as { ssh: Record<string, unknown> };
            const ssh = transport.ssh;
            transport.ssh = withKey(ssh, how);
            const expected = how === "absent" ? "required (expected a public host key such as 'ssh-ed25519 AAAA...')" : `empty; ${SSH_KEY_PASTE.host}`;
            assert.deepStrictEqual(problemsOf(raw), [`hosts[0].transport.ssh.hostKey: ${expected}`]);
            transport.ssh = { ...ssh, proxy: withKey({ host: "bastion.example.test", privateKeySecret: "bastion-key", hostKey: JUMP_KEY }, how) };
            assert.deepStrictEqual(problemsOf(raw), [`hosts[0].transport.ssh.proxy.hostKey: ${expected}`]);
        });

        it(`the SSH client names the field of one ${how}: hostKey, or the jump host's proxy.hostKey`, () => {
            assert.strictEqual(sshTargetProblem(withKey(target, how)), "ssh: the host key of 10.0.0.5 (hostKey) is missing");
            assert.strictEqual(
                sshTargetProblem({ ...target, proxy: withKey(target.proxy!, how) }),
                "ssh: the jump host's host key of bastion.example.test (proxy.hostKey) is missing",
            );
        });
    }

    it("the SSH client names a missing user or host too, and takes the whole target", () => {
        assert.strictEqual(sshTargetProblem(target), undefined);
        const without = (field: "user" | "host") => {
            const { [field]: _gone, ...rest } = target;
            return rest as SshTarget;
        };
        assert.strictEqual(sshTargetProblem(without("user")), "ssh: the user (user) is missing");
        assert.strictEqual(sshTargetProblem(without("host")), "ssh: the host (host) is missing");
        assert.strictEqual(sshTargetProblem({ ...target, proxy: { ...target.proxy!, host: "" } }), "ssh: the jump host's host (proxy.host) is missing");
    });

    it("runOverSsh refuses it with that message before any dial", async () => {
        await assert.rejects(runOverSsh(withKey(target, "absent"), "true", "", 5), (e: unknown) => {
            assert.ok(!(e instanceof TypeError), `a TypeError: ${String(e)}`);
            assert.strictEqual((e as Error).message, "ssh: the host key of 10.0.0.5 (hostKey) is missing");
            return true;
        });
    });

    it("a component's remote-command connection refuses it with that message (Pulumi mocks)", async () => {
        recordGraph();
        for (const [given, message] of [
            [withKey(target, "absent"), "ssh: the host key of 10.0.0.5 (hostKey) is missing"],
            [{ ...target, proxy: withKey(target.proxy!, "empty") }, "ssh: the jump host's host key of bastion.example.test (proxy.hostKey) is missing"],
        ] as const) {
            const connection = commandConnection(given) as unknown as { promise(): Promise<unknown> };
            await assert.rejects(connection.promise(), (e: unknown) => {
                assert.ok(!(e instanceof TypeError), `a TypeError: ${String(e)}`);
                assert.strictEqual((e as Error).message, message);
                return true;
            });
        }
    });
});
