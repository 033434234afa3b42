/**
 * Both transports of host steps (`gpu-workers:hostSteps`), under Pulumi mocks, for every golden
 * stack: the same host commands by name with the same create, update and delete texts, stdin and
 * triggers, and the same uploads. The one difference is each command's owner id, which names the
 * transport (a stack moving from one to the other holds both resources for one `up`): a `command`
 * text with its ids swapped for the `builtin` ones must be the `builtin` text, byte for byte.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import { LOCAL_ARTIFACTS } from "../../components/chain/artifacts";
import { ownerId } from "../../components/lib/host/owner-records";
import type { HostStepTransport } from "../../components/lib/host/step-transport";
import { parseStack } from "../../stacks/checks/stack";
import { RawStackConfig } from "../../stacks/config/stack";
import { buildFleet } from "../../stacks/resources/fleet";
import { goldenStacks } from "../support/golden-stacks";
import { HOST_COMMAND_TYPES, HOST_UPLOAD_TYPES, RecordedResource, recordGraph, settle } from "../support/pulumi-graph";

/** A secret's value, or the value itself. */
function plain(value: unknown): unknown {
    const secret = value as { [key: string]: unknown; value?: unknown } | null;
    return typeof secret === "object" && secret !== null && pulumi.runtime.specialSigKey in secret ? secret.value : value;
}

/** What a host command runs, as the engine gets it: the texts, stdin and triggers. */
function commandOf(r: RecordedResource) {
    return {
        create: plain(r.inputs.create),
        update: plain(r.inputs.update),
        delete: plain(r.inputs.delete),
        stdin: plain(r.inputs.stdin),
        triggers: plain(r.inputs.triggers),
    };
}

/** What an upload copies where; CopyToRemote takes the file as an asset, SshUpload by its path. */
async function uploadOf(r: RecordedResource) {
    const source = r.inputs.source as string | { path: Promise<string> };
    return { source: typeof source === "string" ? source : await source.path, remotePath: r.inputs.remotePath, triggers: plain(r.inputs.triggers) };
}

/** Every release a stack uploads from a path, given a file that exists (the golden stacks name one the checkout lacks). */
function withRelease(raw: RawStackConfig, release: string): RawStackConfig {
    const swap = (value: unknown): unknown => {
        if (Array.isArray(value)) return value.map(swap);
        if (typeof value !== "object" || value === null) return value;
        return Object.fromEntries(
            Object.entries(value).map(([k, v]) => [k, k === "binary" && typeof v === "object" && v !== null && "path" in v ? { path: release } : swap(v)]),
        );
    };
    return swap(raw) as RawStackConfig;
}

async function graphOf(raw: RawStackConfig, baseDir: string, hostSteps: HostStepTransport) {
    const g = recordGraph();
    buildFleet(parseStack({ ...raw, hostSteps }, { baseDir, artifacts: LOCAL_ARTIFACTS }), () => pulumi.secret("key"));
    await settle(g);
    const of = (types: string[]) => new Map(g.resources.filter((r) => types.includes(r.type)).map((r) => [r.name, r]));
    return { commands: of(HOST_COMMAND_TYPES), uploads: of(HOST_UPLOAD_TYPES), types: new Set(g.resources.map((r) => r.type)) };
}

describe("host steps by either transport (Pulumi mocks, every golden stack)", function () {
    this.timeout(120_000);
    let dir = "";
    let release = "";

    before(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "gw-transports-"));
        release = path.join(dir, "concourse-release.tgz");
        fs.writeFileSync(release, "a release stands here\n");
    });

    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    for (const stack of goldenStacks()) {
        it(`${stack.name}: the same commands, stdin, triggers and uploads; only the owner ids name the transport`, async () => {
            const raw = withRelease(stack.raw, release);
            const command = await graphOf(raw, stack.baseDir, "command");
            const builtin = await graphOf(raw, stack.baseDir, "builtin");
            assert.ok(command.commands.size > 0, "the stack runs host commands");
            assert.ok(!command.types.has("pulumi-nodejs:dynamic/gpu-workers:SshCommand"), "command: no SshCommand");
            assert.ok(!builtin.types.has("command:remote:Command") && !builtin.types.has("command:remote:CopyToRemote"), "builtin: nothing of @pulumi/command");
            assert.deepStrictEqual([...builtin.commands.keys()].sort(), [...command.commands.keys()].sort(), "the same commands by name");
            assert.deepStrictEqual([...builtin.uploads.keys()].sort(), [...command.uploads.keys()].sort(), "the same uploads by name");
            const project = `${pulumi.getProject()}/${pulumi.getStack()}`;
            for (const [name, r] of command.commands) {
                const viaCommand = commandOf(r);
                const viaBuiltin = commandOf(builtin.commands.get(name)!);
                const triggers = viaCommand.triggers as unknown[];
                const [own, theirs] = [ownerId(name, project, triggers, "command"), ownerId(name, project, triggers, "builtin")];
                assert.notStrictEqual(own, theirs);
                const swap = (text: unknown) => (typeof text === "string" ? text.split(own).join(theirs) : text);
                const swapped = { ...viaCommand, create: swap(viaCommand.create), update: swap(viaCommand.update), delete: swap(viaCommand.delete) };
                assert.deepStrictEqual(viaBuiltin, swapped, name);
            }
            for (const [name, r] of command.uploads) assert.deepStrictEqual(await uploadOf(builtin.uploads.get(name)!), await uploadOf(r), name);
        });
    }
});
