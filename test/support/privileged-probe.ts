/**
 * What a privileged Concourse step tries on a worker whose containers share the machine's user
 * namespace (as on bare metal), and what its answers mean: its user mapping and capabilities,
 * a write into a read-only dataset after remounting it, opening a GPU node it makes after
 * leaving its device cgroup, and reading the worker's TSA key by its file handle
 * (file-handle.c, placed in a dataset of the worker).
 */

/** A stand-in for a GPU's device node: NVIDIA's major, no driver behind it on a test machine. */
export const FAKE_GPU = { major: 195, minor: 0 };
const CAP_SYS_ADMIN = 21n;
const CAP_SYS_RESOURCE = 24n;

/**
 * The step's script (busybox sh), one line per attempt. `models` is a read-only dataset
 * (remounted as its own mount or as the dataset root's), `tool` the file-handle program in a
 * dataset, `handle` the worker key's handle as that program prints it.
 */
export function privilegedProbeScript(handle: string, models = "/srv/models", tool = "/srv/tools/file-handle"): string {
    return [
        "set +e",
        "echo \"uid_map: $(head -n 1 /proc/self/uid_map | tr -s ' ' | sed 's/^ //')\"",
        'echo "CapEff: $(grep CapEff /proc/self/status | cut -f 2)"',
        `for m in ${models} $(dirname ${models}); do mount -o remount,bind,rw "$m" 2>/dev/null; done`,
        `if echo probe > ${models}/written-by-a-task 2>/dev/null; then echo 'models: written'; else echo 'models: read-only'; fi`,
        "mkdir -p /tmp/cg; (mount -t cgroup -o devices cgroup /tmp/cg || mount -t cgroup2 cgroup2 /tmp/cg) 2>/dev/null && echo $$ > /tmp/cg/cgroup.procs 2>/dev/null",
        `mknod /tmp/gpu c ${FAKE_GPU.major} ${FAKE_GPU.minor} 2>/dev/null; err=$(head -c 1 /tmp/gpu 2>&1 >/dev/null)`,
        // No driver sits behind the node: an open that the device cgroup lets through ends in ENXIO.
        "case \"$err\" in *'No such device or address'*) echo 'gpu node: opened';; *) echo \"gpu node: refused ($err)\";; esac",
        `if ${tool} open $(dirname ${tool}) ${handle} > /tmp/key 2>/tmp/key.err; then echo "worker key: read $(sha256sum /tmp/key | cut -d ' ' -f 1)"; else echo "worker key: refused ($(tr -d '\\n' < /tmp/key.err))"; fi`,
    ].join("\n");
}

const LINES = ["uid_map", "CapEff", "models", "gpu node", "worker key"];

/** The probe's lines in a step's output, by what they name; throws when one is missing. */
export function probeLines(output: string): Record<string, string> {
    const found = Object.fromEntries(
        output
            .split("\n")
            .map((l) => /^([a-zA-Z_ ]+): (.*)$/.exec(l.trim()))
            .filter((m): m is RegExpExecArray => m !== null && LINES.includes(m[1]))
            .map((m) => [m[1], m[2]]),
    );
    const missing = LINES.filter((l) => !(l in found));
    if (missing.length > 0) throw new Error(`the probe printed no ${missing.join(", ")}:\n${output}`);
    return found;
}

/** What the lines mean. */
export function probeMeaning(lines: Record<string, string>) {
    return {
        ownUserNamespace: lines.uid_map !== "0 0 4294967295",
        capSysAdmin: ((BigInt(`0x${lines.CapEff}`) >> CAP_SYS_ADMIN) & 1n) === 1n,
        models: lines.models,
        gpuNode: lines["gpu node"].replace(/ \(.*\)$/, ""),
        workerKey: lines["worker key"].replace(/ \(.*\)$/, ""),
    };
}

/**
 * Where the worker's own bounding set lacks CAP_SYS_RESOURCE (this project's machines: every
 * process, pid 1 included), runc on a worker in the machine's user namespace cannot give a
 * full-privileged step that capability and refuses the container ("unable to apply caps").
 * For `fn`, a shim in front of the runc at `realRunc` (`exec` runs a shell script on the
 * worker) then takes CAP_SYS_RESOURCE, and nothing else, out of a created container's spec
 * and out of the process file of each `runc exec`:
 * the step starts with every other capability Concourse asks for, as on a machine that has
 * them all. A spec without it passes unchanged; where the worker has it, nothing is shimmed.
 */
export function withCapabilitiesTheWorkerHas<T>(exec: (script: string) => string, realRunc: string, fn: () => T): T {
    const bounding = BigInt(`0x${/CapBnd:\s*([0-9a-f]+)/.exec(exec("cat /proc/1/status"))![1]}`);
    if (((bounding >> CAP_SYS_RESOURCE) & 1n) === 1n) return fn();
    exec(
        [
            `mv ${realRunc} ${realRunc}.kept`,
            `printf '%s\\n' '#!/bin/sh' 'drop() { sed -i "s/\\"CAP_SYS_RESOURCE\\",//g; s/,\\"CAP_SYS_RESOURCE\\"//g; s/\\"CAP_SYS_RESOURCE\\"//g" "$1"; }' 'prev=' 'for a in "$@"; do case "$prev" in --bundle) drop "$a/config.json";; --process) drop "$a";; esac; prev=$a; done' 'exec ${realRunc}.kept "$@"' > ${realRunc}.shim`,
            `chmod 0755 ${realRunc}.shim && mv ${realRunc}.shim ${realRunc}`,
        ].join(" && "),
    );
    try {
        return fn();
    } finally {
        exec(`mv -f ${realRunc}.kept ${realRunc}`);
    }
}
