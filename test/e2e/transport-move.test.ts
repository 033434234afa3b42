/**
 * A stack made by the `command` transport (@pulumi/command's remote.Command, its plugin on PATH)
 * moves to `builtin` by one `up`: the engine creates the builtin resources, which apply every
 * step again (each check finds it done), then deletes the remote.Commands, whose deletes find the
 * builtin resources' records and leave the host alone. No step's remove runs: the wrapper stays in
 * runc's place throughout, no placed file is rewritten, and the host's records then name the
 * builtin resources only, so a destroy puts the host back as it was. Needs the Command plugin.
 */
import * as assert from "assert";
import { Stack } from "@pulumi/pulumi/automation";
import { makeStack, setStackConfig, StackConfig } from "../support/engine";
import { fileSetHashes } from "../support/pulumi-graph";
import { engineSuite } from "../support/engine-suite";
import { PLACEHOLDER_TSA_KEY } from "../support/concourse";

describe("a stack moves from the command transport to builtin by one up, through the Pulumi engine", function () {
    this.timeout(900_000);
    const suite = engineSuite("gw-mv-", "command-plugin");
    const name = "e2e-mv";
    let stack: Stack;
    let config: StackConfig;
    let pristine = "";

    const fingerprint = () =>
        suite.lxd.exec(
            name,
            "sha256sum /usr/sbin/runc /etc/containerd/config.toml; ls /etc/containerd /usr/local/lib/gpu-workers /var/lib/gpu-workers 2>&1; true",
        );
    /** Every file the stack's file sets place (read from their stdin in the state), with its inode and sha256: a file written again gets a new inode. */
    const placedFiles = async () => {
        const resources = (await stack.exportStack()).deployment.resources as { urn: string; inputs: { stdin?: unknown } }[];
        const paths = resources
            .filter((r) => /-files$/.test(r.urn) && typeof r.inputs.stdin === "string")
            .flatMap((r) => [...fileSetHashes(r.inputs.stdin as string).keys()]);
        assert.ok(paths.length > 5, `the file sets' paths: ${paths.join(", ")}`);
        return suite.lxd.exec(name, `for f in ${paths.sort().join(" ")}; do echo "$f $(stat -c %i "$f") $(sha256sum < "$f")"; done`);
    };
    const wrapped = () => suite.lxd.exec(name, "cmp -s /usr/sbin/runc /usr/local/lib/gpu-workers/runc-wrapper && echo wrapped; true").trim();
    /** The owner ids in the host's records (each file named by one): who applied each step, and who uses each placed file. */
    const recorded = () =>
        suite.lxd
            .exec(
                name,
                "find /var/lib/gpu-workers/owners /var/lib/gpu-workers/placed \\( -path '*/users/*' -o -path '*/owners/*/*' \\) -type f -printf '%f\\n' | sort -u",
            )
            .trim()
            .split("\n");

    before(async () => {
        const { host, secrets } = suite.lxd.sshHost(name, 2331, "mv", suite.root);
        pristine = fingerprint();
        config = {
            defaults: { concourse: { tsaHost: "127.0.0.1", tsaPublicKey: PLACEHOLDER_TSA_KEY }, datasets: { root: "/srv" } },
            hosts: [host],
            secrets,
            hostSteps: "command",
        };
        stack = await makeStack(suite.project, "mv", suite.env, config);
        suite.stacks.push(stack);
    });

    it("the command transport converges the host", async () => {
        await stack.up();
        const types = ((await stack.exportStack()).deployment.resources as { type: string }[]).map((r) => r.type);
        assert.ok(types.includes("command:remote:Command"), "made by remote.Commands");
        assert.strictEqual(wrapped(), "wrapped");
    });

    it("one up with builtin replaces every remote.Command, runs no remove, and rewrites no file", async () => {
        const files = await placedFiles();
        const byCommand = recorded();
        config.hostSteps = "builtin";
        await setStackConfig(stack, config);
        // Watched while it runs: a remove of the wrapper's step would put runc back before the up ends.
        let unwrapped = false;
        const watch = setInterval(() => {
            if (wrapped() !== "wrapped") unwrapped = true;
        }, 500);
        try {
            await stack.up();
        } finally {
            clearInterval(watch);
        }
        assert.ok(!unwrapped, "the wrapper stayed in runc's place");
        assert.strictEqual(wrapped(), "wrapped");
        assert.strictEqual(await placedFiles(), files, "no placed file was written again");
        const types = ((await stack.exportStack()).deployment.resources as { type: string }[]).map((r) => r.type);
        assert.ok(!types.some((t) => t.startsWith("command:")), `nothing of the Command provider is left: ${types.join(", ")}`);
        assert.ok(types.includes("pulumi-nodejs:dynamic/gpu-workers:SshCommand"));
        // The same resources by name, each with an owner id of its own transport: none of the old ones is left.
        const byBuiltin = recorded();
        assert.strictEqual(byBuiltin.length, byCommand.length);
        assert.deepStrictEqual(
            byBuiltin.filter((r) => byCommand.includes(r)),
            [],
            "the records name the builtin resources only",
        );
    });

    it("a second up changes nothing, and destroy puts the host back as it was", async () => {
        const result = await stack.up();
        const changes = (result.summary.resourceChanges ?? {}) as Record<string, number>;
        assert.deepStrictEqual(
            Object.keys(changes).filter((k) => changes[k] > 0),
            ["same"],
        );
        await stack.destroy();
        assert.strictEqual(fingerprint(), pristine);
    });
});
