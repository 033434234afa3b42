/**
 * What the LxdInstance dynamic provider does, on plain values: check, diff, create, read,
 * update, delete of one LXD instance. The provider object (instance-provider.ts) loads this
 * module at call time; tests call it with their own client to prove what reaches LXD.
 */
import { LxdApiError, LxdClient, LxdInstanceRecord } from "./client";
import { isLxdManagedConfigKey, normalizeSpec, userConfig } from "../../lib/lxd/spec";
import type { LxdFile, LxdInstanceSpec, LxdInstanceState, LxdServer, NormalizedSpec } from "../../lib/lxd/types";
import { lxdInstanceProblems, LxdValidationError, USER_DATA_KEYS } from "../../lib/lxd/validate";

/** The subset of LxdClient the operations use (tests substitute their own). */
export type LxdApi = Pick<
    LxdClient,
    "getInstance" | "createInstance" | "putInstance" | "setInstanceState" | "deleteInstance" | "pushFile" | "statPath" | "exec" | "imageAliasTarget"
>;
export type LxdApiFactory = (server: LxdServer) => LxdApi;

export const defaultApiFactory: LxdApiFactory = (server) => new LxdClient(server);

/** An LXD call failed: names the instance and the step, and carries LXD's own message. */
export class LxdInstanceError extends Error {
    constructor(
        message: string,
        public readonly cause?: unknown,
    ) {
        super(message);
        this.name = "LxdInstanceError";
    }
}

function failure(name: string, step: string, e: unknown, context = ""): LxdInstanceError {
    const message = e instanceof LxdApiError ? e.lxdMessage : e instanceof Error ? e.message : String(e);
    return new LxdInstanceError(`lxd: instance ${name}: ${step} failed: ${message}${context}`, e);
}

/** Validated, normalized spec; throws LxdValidationError before any LXD call. */
export function prepare(raw: Partial<LxdInstanceSpec>): NormalizedSpec {
    const spec = normalizeSpec(raw);
    const problems = lxdInstanceProblems(spec);
    if (problems.length > 0) throw new LxdValidationError(problems);
    return spec;
}

// ---- check / diff (no LXD calls) ---------------------------------------------------------------

const PROPERTY_OF: [RegExp, string][] = [
    [/^device /, "devices"],
    [/^files/, "files"],
    [/^userData/, "userData"],
    [/^config/, "config"],
    [/^server/, "server"],
    [/^waitFor/, "waitFor"],
    [/^profiles/, "profiles"],
    [/^name/, "name"],
    [/^needs a name/, "name"],
    [/^image/, "image"],
    [/^type/, "type"],
];

export function check(_olds: unknown, news: Partial<LxdInstanceSpec>): { inputs: NormalizedSpec; failures: { property: string; reason: string }[] } {
    const inputs = normalizeSpec(news);
    const failures = lxdInstanceProblems(inputs).map((reason) => {
        const rest = reason.replace(/^lxd instance [^:]*: /, "");
        const property = PROPERTY_OF.find(([re]) => re.test(rest))?.[1] ?? "name";
        return { property, reason };
    });
    return { inputs, failures };
}

function canonical(value: unknown): string {
    if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
    if (value && typeof value === "object") {
        return `{${Object.keys(value)
            .sort()
            .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
            .join(",")}}`;
    }
    return JSON.stringify(value ?? null);
}

/** Changing these means a new instance; everything else is changed in place. cloud-init reads user-data on the first boot only. */
const REPLACE_KEYS = ["name", "image", "type", "userData"] as const;
const COMPARED_KEYS = ["name", "image", "type", "profiles", "config", "devices", "files", "userData", "waitFor", "running", "server"] as const;

export function diff(_id: string, olds: Partial<LxdInstanceState>, newsRaw: Partial<LxdInstanceSpec>) {
    const news = normalizeSpec(newsRaw);
    const oldSpec = normalizeSpec(olds);
    const changed = COMPARED_KEYS.filter((k) => canonical(oldSpec[k]) !== canonical(news[k]));
    const replaces = changed.filter((k) => (REPLACE_KEYS as readonly string[]).includes(k));
    return {
        changes: changed.length > 0,
        replaces,
        // The same name cannot exist twice on a server: the old one must go first.
        deleteBeforeReplace: replaces.length > 0 && oldSpec.name === news.name,
        stables: replaces.length === 0 ? ["name"] : [],
    };
}

// ---- helpers that talk to LXD --------------------------------------------------------------------

/** An image given as 12-64 hex digits is a fingerprint unless an alias of that name exists. */
async function imageSource(api: LxdApi, image: string): Promise<Record<string, string>> {
    if (/^[0-9a-f]{12,64}$/.test(image) && (await api.imageAliasTarget(image)) === undefined) {
        return { type: "image", fingerprint: image };
    }
    return { type: "image", alias: image };
}

function parents(path: string): string[] {
    const parts = path.split("/").filter(Boolean).slice(0, -1);
    return parts.map((_, i) => `/${parts.slice(0, i + 1).join("/")}`);
}

async function pushFiles(api: LxdApi, name: string, files: LxdFile[]): Promise<void> {
    for (const file of files) {
        for (const dir of parents(file.path)) {
            // Existing folders are left as they are (their mode is not ours to change).
            if ((await api.statPath(name, dir)) !== undefined) continue;
            const mode = dir.endsWith("/.ssh") ? "0700" : "0755";
            await api.pushFile(name, dir, "", { type: "directory", mode, uid: file.uid ?? 0, gid: file.gid ?? 0 });
        }
        await api.pushFile(name, file.path, file.content, { mode: file.mode ?? "0644", uid: file.uid ?? 0, gid: file.gid ?? 0 });
    }
}

async function waitUntil(api: LxdApi, spec: NormalizedSpec): Promise<void> {
    if (!spec.waitFor) return;
    const { command } = spec.waitFor;
    const timeout = spec.waitFor.timeoutSeconds ?? 60;
    const deadline = Date.now() + timeout * 1000;
    let last: string;
    for (;;) {
        try {
            const r = await api.exec(spec.name, command, { timeoutSeconds: Math.max(5, Math.ceil((deadline - Date.now()) / 1000)) });
            if (r.exitCode === 0) return;
            last = `exit ${r.exitCode}${r.stderr.trim() ? `: ${r.stderr.trim().slice(-400)}` : ""}`;
        } catch (e) {
            last = e instanceof LxdApiError ? e.lxdMessage : String(e);
        }
        if (Date.now() >= deadline) break;
        await new Promise((r) => setTimeout(r, 1000));
    }
    throw new Error(`${JSON.stringify(command)} did not succeed within ${timeout}s (last: ${last})`);
}

/** The config LXD gets: the spec's, and the user-data under LXD's key. */
function configSent(spec: NormalizedSpec): Record<string, string> {
    return spec.userData === undefined ? spec.config : { ...spec.config, [USER_DATA_KEYS[0]]: spec.userData };
}

/** The config to store: LXD's own keys left out, and the user-data, which is kept (secret) as userData. */
function configKept(spec: Partial<NormalizedSpec>, config: Record<string, string> | undefined): Record<string, string> {
    const own = userConfig(config);
    if (spec.userData !== undefined) delete own[USER_DATA_KEYS[0]];
    return own;
}

/** The state to store: the spec, with what LXD really has for type, profiles, config, devices. */
function stateFrom(spec: NormalizedSpec, instance: LxdInstanceRecord): LxdInstanceState {
    return {
        ...spec,
        name: instance.name,
        type: instance.type,
        profiles: instance.profiles ?? [],
        config: configKept(spec, instance.config ?? undefined),
        devices: instance.devices ?? {},
        running: instance.status === "Running",
        status: instance.status,
        imageFingerprint: instance.config?.["volatile.base_image"] ?? "",
        uuid: instance.config?.["volatile.uuid"] ?? "",
    };
}

async function readBack(api: LxdApi, spec: NormalizedSpec, step: string): Promise<LxdInstanceState> {
    let got;
    try {
        got = await api.getInstance(spec.name);
    } catch (e) {
        throw failure(spec.name, step, e);
    }
    if (!got) throw new LxdInstanceError(`lxd: instance ${spec.name}: ${step} failed: the instance disappeared from the server`);
    return stateFrom(spec, got.instance);
}

// ---- create / read / update / delete -------------------------------------------------------

/**
 * Why an instance of the name that already exists is not taken over: most often a host or web
 * renamed in the stack, whose new resources are created before the old ones are deleted.
 */
function existingInstanceProblem(name: string): string {
    return (
        `lxd: instance ${name} already exists on the server, so this new resource cannot create it. ` +
        "If it is the instance of a host or web renamed in the stack (the instance name kept), the new name cannot take it over: " +
        "its SSH keys belong to the old name's resources, which are deleted afterwards. Give the host (or web) renamedFrom: <its old name> " +
        "in the stack, so that the state follows the new name and nothing on the server changes (Pulumi aliases), or keep the old name. " +
        "Otherwise give this host another instance name, or remove the instance (lxc delete) if nothing needs it"
    );
}

export async function create(inputs: Partial<LxdInstanceSpec>, factory: LxdApiFactory = defaultApiFactory): Promise<{ id: string; outs: LxdInstanceState }> {
    const spec = prepare(inputs);
    const api = factory(spec.server);
    // Never adopt or overwrite an instance this resource did not make.
    const existing = await api.getInstance(spec.name).catch((e) => {
        throw failure(spec.name, "create", e);
    });
    if (existing) throw new LxdInstanceError(existingInstanceProblem(spec.name));
    let source: Record<string, string>;
    try {
        source = await imageSource(api, spec.image);
        await api.createInstance({
            name: spec.name,
            type: spec.type,
            source,
            profiles: spec.profiles,
            config: configSent(spec),
            devices: spec.devices,
        });
    } catch (e) {
        throw failure(spec.name, "create", e, ` (image ${spec.image})`);
    }
    // From here the instance exists: if a later step fails, take it away again so that the
    // server is left as it was and the next `up` starts clean.
    let step = "push files";
    try {
        await pushFiles(api, spec.name, spec.files);
        if (spec.running) {
            step = "start";
            await api.setInstanceState(spec.name, "start", { timeout: 60 });
            step = "wait";
            await waitUntil(api, spec);
        }
    } catch (e) {
        const err = failure(spec.name, step, e);
        try {
            await removeInstance(api, spec.name);
        } catch (cleanup) {
            err.message += `; removing the half-made instance also failed: ${cleanup instanceof LxdApiError ? cleanup.lxdMessage : String(cleanup)}`;
        }
        throw err;
    }
    return { id: spec.name, outs: await readBack(api, spec, "create") };
}

/** Reads the instance as it is; an empty id tells Pulumi it no longer exists. */
export async function read(
    id: string,
    props: Partial<LxdInstanceState>,
    factory: LxdApiFactory = defaultApiFactory,
): Promise<{ id: string; props: Partial<LxdInstanceState> }> {
    const spec = normalizeSpec({ ...props, name: props.name ?? id });
    const api = factory(spec.server);
    let got;
    try {
        got = await api.getInstance(spec.name);
    } catch (e) {
        throw failure(spec.name, "read", e);
    }
    if (!got) return { id: "", props: {} };
    return { id, props: stateFrom(spec, got.instance) };
}

export async function update(
    id: string,
    olds: Partial<LxdInstanceState>,
    newsRaw: Partial<LxdInstanceSpec>,
    factory: LxdApiFactory = defaultApiFactory,
): Promise<{ outs: LxdInstanceState }> {
    const spec = prepare(newsRaw);
    const api = factory(spec.server);
    const name = spec.name;
    // PUT replaces every writable field; LXD's own config keys are carried over unchanged, and
    // the ETag makes LXD refuse the write if someone changed the instance since we read it.
    for (let attempt = 1; ; attempt++) {
        const got = await api.getInstance(name).catch((e) => {
            throw failure(name, "update", e);
        });
        if (!got)
            throw new LxdInstanceError(
                `lxd: instance ${name}: update failed: the instance does not exist on the server (removed by hand?); run pulumi refresh`,
            );
        const current = got.instance;
        const managed = Object.fromEntries(Object.entries(current.config ?? {}).filter(([k]) => isLxdManagedConfigKey(k)));
        const body = {
            architecture: current.architecture,
            config: { ...managed, ...configSent(spec) },
            devices: spec.devices,
            profiles: spec.profiles,
            ephemeral: current.ephemeral ?? false,
            description: current.description ?? "",
        };
        try {
            await api.putInstance(name, body, got.etag);
            break;
        } catch (e) {
            if (e instanceof LxdApiError && e.statusCode === 412 && attempt < 3) continue; // changed under us: read again
            throw failure(name, "update", e);
        }
    }
    const oldFiles = new Map((olds.files ?? []).map((f) => [f.path, canonical(f)]));
    const changedFiles = spec.files.filter((f) => oldFiles.get(f.path) !== canonical(f));
    let step = "push files";
    try {
        await pushFiles(api, name, changedFiles);
        const now = await api.getInstance(name);
        const running = now?.instance.status === "Running";
        if (spec.running && !running) {
            step = "start";
            await api.setInstanceState(name, "start", { timeout: 60 });
            step = "wait";
            await waitUntil(api, spec);
        } else if (!spec.running && running) {
            step = "stop";
            await api.setInstanceState(name, "stop", { timeout: 30 });
        }
    } catch (e) {
        throw failure(name, step, e);
    }
    return { outs: await readBack(api, spec, "update") };
}

async function removeInstance(api: LxdApi, name: string): Promise<void> {
    const got = await api.getInstance(name);
    if (!got) return;
    if (got.instance.status !== "Stopped") {
        try {
            await api.setInstanceState(name, "stop", { force: true, timeout: 30 });
        } catch (e) {
            // Already stopped by the time we asked is fine; anything else is not.
            const again = await api.getInstance(name);
            if (again && again.instance.status !== "Stopped") throw e;
        }
    }
    await api.deleteInstance(name);
}

/** Stops (forcefully) and deletes the instance; one that is already gone is fine. */
export async function remove(id: string, props: Partial<LxdInstanceState>, factory: LxdApiFactory = defaultApiFactory): Promise<void> {
    const name = props.name ?? id;
    const api = factory(props.server ?? {});
    try {
        await removeInstance(api, name);
    } catch (e) {
        throw failure(name, "delete", e);
    }
}
