/**
 * Runs a Pulumi program under mocks and records the resource graph as the engine would
 * receive it: type, name, parent URN, explicit dependencies and inputs of every resource.
 */
import * as pulumi from "@pulumi/pulumi";
import type { RegisterResourceRequest, RegisterResourceResponse } from "@pulumi/pulumi/proto/resource_pb";
import { pathSlug } from "../../components/lib/host/steps";
import { OTHER_HOST_KEY, TSA_KEY } from "../fixtures/ssh-keys/keys";

/** A command that places files: a file set (`<component>-files`, `<component>-system-files`) or one file's own (`<component>-file-<path>`). */
export function isFileResourceName(name: string): boolean {
    return /-file-|-files$/.test(name);
}

/** A file's header in a file set's stdin: its path, its bytes (none for a staged binary) and its sha256. */
interface FileSetEntry {
    path: string;
    content: Buffer | undefined;
    sha256: string;
}

/** The files of a file set's stdin, read back by their headers' byte counts. */
function fileSetEntries(stdin: string): FileSetEntry[] {
    const entries: FileSetEntry[] = [];
    const bytes = Buffer.from(stdin);
    const header = /^==> (\S+) \(mode [0-7]+, (?:(\d+) bytes|staged copy), sha256 ([0-9a-f]{64})\) <==\n/gm;
    let at = 0;
    for (let m = header.exec(stdin); m; m = header.exec(stdin)) {
        const start = Buffer.byteLength(stdin.slice(0, m.index + m[0].length));
        if (start < at) continue; // a header-like line inside a file's content
        at = m[2] === undefined ? start : start + Number(m[2]) + 1;
        entries.push({ path: m[1], content: m[2] === undefined ? undefined : bytes.subarray(start, start + Number(m[2])), sha256: m[3] });
    }
    return entries;
}

/** The files of a file set's stdin, by path; a binary (staged, its bytes elsewhere) as "". */
export function fileSetContents(stdin: string): Map<string, string> {
    return new Map(fileSetEntries(stdin).map((e) => [e.path, e.content?.toString() ?? ""]));
}

/** The sha256 of every file of a file set's stdin, by path, a staged binary's too. */
export function fileSetHashes(stdin: string): Map<string, string> {
    return new Map(fileSetEntries(stdin).map((e) => [e.path, e.sha256]));
}

/** The resource types of a host command, by transport: @pulumi/command's, and the program's own. */
export const HOST_COMMAND_TYPES = ["command:remote:Command", "pulumi-nodejs:dynamic/gpu-workers:SshCommand"];

/** The resource types of an upload, by transport. */
export const HOST_UPLOAD_TYPES = ["command:remote:CopyToRemote", "pulumi-nodejs:dynamic/gpu-workers:SshUpload"];

export interface RecordedResource {
    type: string;
    name: string;
    urn: string;
    parent: string;
    dependencies: string[];
    inputs: Record<string, unknown>;
    /** Resource options the engine acts on: the inputs whose change replaces, and whether the old one goes first. */
    replaceOnChanges: string[];
    deleteBeforeReplace: boolean;
    /** The explicit provider's reference, when given. */
    provider: string;
}

export class GraphRecorder {
    readonly resources: RecordedResource[] = [];

    byName(name: string): RecordedResource {
        const r = this.resources.find((x) => x.name === name);
        if (!r) throw new Error(`no resource named ${name}; have: ${this.resources.map((x) => x.name).join(", ")}`);
        return r;
    }

    ofType(type: string): RecordedResource[] {
        return this.resources.filter((r) => r.type === type);
    }

    /** The host commands that place files: file sets (lib/host/placed-files.ts) and a secret file's own. */
    fileResources(): RecordedResource[] {
        return this.resources.filter((r) => HOST_COMMAND_TYPES.includes(r.type) && isFileResourceName(r.name));
    }

    /** The command that places `path` (among those named from `prefix`, where given) and the content it gives the path. */
    placed(path: string, prefix = ""): { resource: RecordedResource; content: string } {
        for (const resource of this.fileResources().filter((r) => r.name.startsWith(prefix))) {
            const stdin = resource.inputs.stdin;
            if (resource.name.endsWith(`-file-${pathSlug(path)}`))
                return { resource, content: typeof stdin === "string" ? stdin : String((stdin as { value: unknown }).value) };
            const content = typeof stdin === "string" ? fileSetContents(stdin).get(path) : undefined;
            if (content !== undefined) return { resource, content };
        }
        throw new Error(
            `no resource places ${path}${prefix ? ` under ${prefix}` : ""}; file resources: ${this.fileResources()
                .map((r) => r.name)
                .join(", ")}`,
        );
    }

    /** True when `from` waits for `to`, directly or through other resources. */
    dependsOn(from: RecordedResource, to: RecordedResource): boolean {
        const seen = new Set<string>();
        const walk = (urn: string): boolean => {
            if (urn === to.urn) return true;
            if (seen.has(urn)) return false;
            seen.add(urn);
            const r = this.resources.find((x) => x.urn === urn);
            return !!r && r.dependencies.some(walk);
        };
        return from.dependencies.some(walk);
    }
}

/** What the providers would return for their outputs, by resource type (dynamic resources echo their inputs otherwise). */
const MOCK_OUTPUTS: Record<string, Record<string, unknown>> = {
    "pulumi-nodejs:dynamic/gpu-workers:SshKeyPair": {
        publicKeyOpenssh: `${OTHER_HOST_KEY} mock`,
        privateKeyOpenssh: "-----BEGIN OPENSSH PRIVATE KEY-----\nmock\n-----END OPENSSH PRIVATE KEY-----\n",
    },
    "pulumi-nodejs:dynamic/lxd:Instance": { uuid: "00000000-0000-4000-8000-000000000000", status: "Running" },
    // A fleet's web stack, as its racks read it (stacks/resources/fleet-web.ts).
    "pulumi:pulumi:StackReference": {
        outputs: {
            webForRacks: {
                tsaPublicKey: TSA_KEY,
                password: "mock-password",
                ca: null,
                connection: { host: "10.0.0.5", port: 22, user: "root", privateKey: "mock", hostKey: OTHER_HOST_KEY },
            },
        },
    },
    "pulumi-nodejs:dynamic/gpu-workers:GeneratedSecret": {
        value: "-----BEGIN RSA PRIVATE KEY-----\nmock\n-----END RSA PRIVATE KEY-----\n",
        publicKeyOpenssh: `${TSA_KEY} mock`,
    },
};

/** A generated password is one line, as the web's secret env file needs it. */
function mockPassword(args: { type: string; inputs: Record<string, unknown> }): Record<string, unknown> {
    return args.type === "pulumi-nodejs:dynamic/gpu-workers:GeneratedSecret" && args.inputs.kind === "password" ? { value: "mock-password" } : {};
}

/** Installs mocks that record into a fresh GraphRecorder. Call before building resources. */
export function recordGraph(): GraphRecorder {
    const recorder = new GraphRecorder();
    void pulumi.runtime.setMocks(
        {
            newResource: (args) => ({
                id: `${args.name}-id`,
                state: { ...args.inputs, stdout: "", stderr: "", ...MOCK_OUTPUTS[args.type], ...mockPassword(args) },
            }),
            call: (args) => args.inputs,
        },
        "gpu-workers",
        "test",
        false,
    );
    // The mock monitor hides parents and dependencies from newResource; read them off the request.
    type Register = (req: RegisterResourceRequest, callback: (err: unknown, res: RegisterResourceResponse) => void) => void;
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the monitor the mocks just installed, from Pulumi's runtime internals
    const monitor = require("@pulumi/pulumi/runtime/settings").getMonitor() as { registerResource: Register };
    const register = monitor.registerResource.bind(monitor);
    monitor.registerResource = (req, callback) => {
        register(req, (err, res) => {
            if (!err) {
                recorder.resources.push({
                    type: req.getType(),
                    name: req.getName(),
                    urn: res.getUrn(),
                    parent: req.getParent(),
                    dependencies: req.getDependenciesList(),
                    inputs: pulumi.runtime.deserializeProperties(req.getObject()!),
                    replaceOnChanges: req.getReplaceonchangesList(),
                    deleteBeforeReplace: req.getDeletebeforereplace(),
                    provider: req.getProvider(),
                });
            }
            callback(err, res);
        });
    };
    return recorder;
}

/** Waits until no new resource has registered for a while (children register asynchronously). */
export async function settle(recorder: GraphRecorder): Promise<void> {
    let last = -1;
    let quiet = 0;
    while (quiet < 5) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        quiet = recorder.resources.length === last ? quiet + 1 : 0;
        last = recorder.resources.length;
    }
}
