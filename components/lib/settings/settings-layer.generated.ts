// Written by `npm run build` (cli/settings-types.ts) from settingsSchema, where each doc and default is written:
// edit them there. A unit test fails while this file differs from what the schema gives.
import type { z } from "zod";
import type { SettingsLayer, settingsSchema } from "./settings";

/**
 * One layer of a worker's settings as a caller gives it (GpuWorker's arguments, a stack's
 * `defaults` or one host): any group, any field of it; what is left out takes the default.
 * SettingsLayer written out field by field, with each setting's doc from the schema.
 */
export interface WorkerSettingsLayer {
    /**
     * the GPUs the worker gets: `all` or a list of indices
     *
     * Default: `all`.
     */
    selection?: z.input<typeof settingsSchema>["selection"];
    /**
     * how the hardware found on `up` is compared with the declared inventory
     */
    verify?: {
        /**
         * inventory fields whose differences only warn: vendor, count, model, memory, uuid, pci, module, integrated, gfx, render, card, kernel-driver, pci-device, mig, nvswitches, tegra, driver, compute, cuda ([docs/discovery.md](docs/discovery.md))
         *
         * Default: `[]`.
         */
        warnOnly?: NonNullable<z.input<typeof settingsSchema>["verify"]>["warnOnly"];
    };
    /**
     * the GPU driver the host runs
     */
    driver?: {
        /**
         * a pinned version (e.g. `550.54.15`) or `preinstalled`; anything else (`latest`) is refused naming both forms
         *
         * Default: `preinstalled`.
         */
        version?: NonNullable<z.input<typeof settingsSchema>["driver"]>["version"];
    };
    /**
     * the vendor's container toolkit and its CDI spec
     */
    toolkit?: {
        /**
         * container toolkit version in the vendor's own form, or `preinstalled`; versions with a known container escape are refused, naming the CVE and the first fixed version (CVE-2024-0132: 1.16.2, CVE-2025-23359: 1.17.4, CVE-2025-23266: 1.17.8)
         *
         * Default: the vendor's: `1.17.8` (NVIDIA), `1.3.0` (AMD).
         */
        version?: NonNullable<z.input<typeof settingsSchema>["toolkit"]>["version"];
        /**
         * generate a CDI spec and inject GPUs by CDI id
         *
         * Default: `true`.
         */
        cdi?: NonNullable<z.input<typeof settingsSchema>["toolkit"]>["cdi"];
    };
    /**
     * the host folders every container of the worker gets
     */
    datasets?: {
        /**
         * mounted once into every container, at its own path, read-only (all the way down, `rro`, where runc and the kernel have it). Refused: `/`, system folders and everything in them (`/bin`, `/boot`, `/dev`, `/etc`, `/lib*`, `/proc`, `/root`, `/run`, `/sbin`, `/sys`, `/usr`), `/var` and its standard folders (`/var/lib`, `/var/cache`, ...; a folder of its own below them is fine), where the system and its services keep their state, with everything in it (`/var/lib/containerd`, `/var/lib/lxd`, `/var/lib/postgresql`, `/var/lib/gpu-workers`, `/var/log`, `/var/spool`, ...), `/home` (users' folders) and `/tmp`, `/var/tmp` (writable by every user). On the host it must be owned by root and not writable by group or others: the validator fails the `up` otherwise (also for a folder above it that others may write to without the sticky bit), and the wrapper refuses to create containers
         *
         * Default: `/srv`.
         */
        root?: NonNullable<z.input<typeof settingsSchema>["datasets"]>["root"];
        /**
         * direct subfolders (real folders, never links) whose name ends so are mounted read-write on top; a link under the root resolves inside the container and has the mode of what it leads to ([details](docs/runc-wrapper.md#how-it-works))
         *
         * Default: `[_writable, _rw]`.
         */
        writableSuffixes?: NonNullable<z.input<typeof settingsSchema>["datasets"]>["writableSuffixes"];
    };
    /**
     * the runc wrapper's refusals
     */
    wrapper?: {
        /**
         * what the runc wrapper lets a container's spec carry that it refuses otherwise, naming it: `no-pid-namespace` (no pid namespace of its own: the task sees the host's processes, and through /proc/<pid>/root their files, past the read-only datasets); `host-hooks` (hooks that run on the host as root (prestart, createRuntime, poststart, poststop)); `cdi-annotations` (cdi.k8s.io/ annotations: the NVIDIA runtime in CDI mode gives the container the devices they name); `other-gpu-devices` (device nodes in linux.devices of GPUs the worker does not select). Concourse's containers carry none of them; another caller of the runtime on the host (a Kubernetes tenant) can
         *
         * Default: `[]`.
         */
        allow?: NonNullable<z.input<typeof settingsSchema>["wrapper"]>["allow"];
        /**
         * when the runc behind the wrapper (the host's, and the one in the Concourse release) is open to a known container breakout (CVE-2019-5736, CVE-2021-30465, CVE-2024-21626, CVE-2025-31133, CVE-2025-52565, CVE-2025-52881; a distribution's backport counts as fixed where its package's changelog names the CVE): `warn` names each CVE and the runc versions that fix it during `up`, `refuse` also fails the `up`
         *
         * Default: `warn`.
         */
        runcCves?: NonNullable<z.input<typeof settingsSchema>["wrapper"]>["runcCves"];
    };
    /**
     * GPU metrics per build, for Prometheus
     */
    metrics?: {
        /**
         * install and start Debian's `prometheus-node-exporter`, and a timer that writes each selected GPU's utilisation, memory, temperature, power and health, labelled with the container holding it (and its build, where the container says), every 15 s for its textfile collector (Debian's `/var/lib/prometheus/node-exporter`; [docs/gpu-metrics.md](docs/gpu-metrics.md)); never on a worker without GPUs
         *
         * Default: `false`.
         */
        nodeExporter?: NonNullable<z.input<typeof settingsSchema>["metrics"]>["nodeExporter"];
        /**
         * dcgm-exporter's `--hpc-job-mapping-dir`: the runc wrapper writes there, per GPU, the ids of the containers holding it, at create, and clears them at delete; `down` removes those files and the folders the wrapper made (off when not set). Root writes there, so refused: the dataset root or a folder inside it, the work dir or a folder inside it, what `datasets.root` refuses (`/`, system folders, `/var/lib/...` state, `/home`, `/tmp`, `/var/tmp`), and `/srv`, `/opt`, `/mnt`, `/media` themselves; a folder of its own in `/run` is fine (such as `/run/dcgm-jobs`, gone at reboot), but not `/run` itself, `/run/lock`, `/run/shm`, `/run/user` or `/run/gpu-workers`. On the host the wrapper reaches it from `/` without following a link, and writes nothing unless every folder on the way is owned by root and writable by nobody else (one above it may be with the sticky bit, as `/tmp`); what it makes there gets mode 0755 ([details](docs/gpu-metrics.md#dcgm-exporters-job-mapping))
         */
        dcgmJobMappingDir?: NonNullable<z.input<typeof settingsSchema>["metrics"]>["dcgmJobMappingDir"];
    };
    /**
     * the containerd runtime entry through the runc wrapper
     */
    containerd?: {
        /**
         * the containerd runtime entry that calls the wrapper (the CRI handler name)
         *
         * Default: `gpu`.
         */
        runtimeName?: NonNullable<z.input<typeof settingsSchema>["containerd"]>["runtimeName"];
        /**
         * make it containerd's default runtime
         *
         * Default: `false`.
         */
        default?: NonNullable<z.input<typeof settingsSchema>["containerd"]>["default"];
        /**
         * also add Kata Containers' GPU runtime entry `kata-qemu-nvidia-gpu` (its shim and config under `/opt/kata`, which the host must have), beside the wrapper's; a Kubernetes node whose cluster offers it needs it ([Kubernetes](#kubernetes-gpu-nodes-gpu-workerskubernetes))
         *
         * Default: `false`.
         */
        kata?: NonNullable<z.input<typeof settingsSchema>["containerd"]>["kata"];
    };
    /**
     * NVIDIA fabricmanager, on boards with NVSwitches
     */
    fabricManager?: {
        /**
         * `host` (fabricmanager on the host: the whole board is one worker), `service-vm` (the host is a board shared by several workers, above), `off`, or `auto` (`host` where NVSwitches are declared, else `off`); `on`, from earlier stacks, means `host`
         *
         * Default: `auto`.
         */
        mode?: NonNullable<z.input<typeof settingsSchema>["fabricManager"]>["mode"];
        /**
         * fabric partition ids to activate on the host (mode `host`); an id the board's table lacks is refused, naming the table's ids (the table: `fabric.partitionTable` on the host, default `hgx-h100-8gpu`)
         *
         * Default: `[]`.
         */
        partitions?: NonNullable<z.input<typeof settingsSchema>["fabricManager"]>["partitions"];
    };
    /**
     * the GPU health watcher: what it does on a fatal GPU event
     */
    health?: {
        /**
         * what a fatal GPU event does to the worker: `land` (no new builds, running ones finish; SIGUSR1), `retire` (SIGUSR2), or `none` (only the journal and the status file say so); the worker is started again once its GPUs are healthy for `settleSeconds` ([docs/gpu-health.md](docs/gpu-health.md))
         *
         * Default: `land`.
         */
        onFatal?: NonNullable<z.input<typeof settingsSchema>["health"]>["onFatal"];
        /**
         * Xids that do not land the worker, besides the default list (13, 31, 43, 45, 68, 109, as NVIDIA's device plugin)
         *
         * Default: `[]`.
         */
        ignoreXids?: NonNullable<z.input<typeof settingsSchema>["health"]>["ignoreXids"];
        /**
         * Xids taken from that default list: they land the worker after all
         *
         * Default: `[]`.
         */
        fatalXids?: NonNullable<z.input<typeof settingsSchema>["health"]>["fatalXids"];
        /**
         * how often the vendor's tool is asked for a lost GPU, uncorrectable ECC errors, a row-remap failure and leftover processes
         *
         * Default: `30`.
         */
        pollSeconds?: NonNullable<z.input<typeof settingsSchema>["health"]>["pollSeconds"];
        /**
         * how long every GPU must poll healthy, after the last fatal event, before the worker is started again
         *
         * Default: `300`.
         */
        settleSeconds?: NonNullable<z.input<typeof settingsSchema>["health"]>["settleSeconds"];
        /**
         * how long a GPU may hold compute processes of no running container before that lands the worker
         *
         * Default: `600`.
         */
        dirtyGraceSeconds?: NonNullable<z.input<typeof settingsSchema>["health"]>["dirtyGraceSeconds"];
    };
    /**
     * GPUs handed out per task: exclusive units, time-slicing, MPS
     */
    allocation?: {
        /**
         * how the runc wrapper hands the worker's GPUs to containers: `all`, every container gets every selected GPU (nothing changes); `exclusive`, each unit (a selected GPU, or on a MIG GPU one MIG instance) is held by one task's container at a time; `timeSlice`, by up to `replicas` at once, with no memory isolation; `mps`, as timeSlice through an MPS control daemon per GPU with per-client thread and memory limits (NVIDIA, no MIG; a container holds one GPU at most; [docs/gpu-mps.md](docs/gpu-mps.md)). Check, get and put containers hold no GPU in every mode but `all`. A task asks with the param `GPU_WORKERS_GPUS: N`; the worker is tagged `gpu-share=MODE` and `gpu-slots=N` (units × replicas). No effect on a worker without GPUs ([docs/gpu-allocation.md](docs/gpu-allocation.md))
         *
         * Default: `all`.
         */
        mode?: NonNullable<z.input<typeof settingsSchema>["allocation"]>["mode"];
        /**
         * units a task's container gets when it sets no `GPU_WORKERS_GPUS`; more than the worker's units is refused
         *
         * Default: `1`.
         */
        perTask?: NonNullable<z.input<typeof settingsSchema>["allocation"]>["perTask"];
        /**
         * containers holding one unit at once in `timeSlice` and `mps`; with `exclusive` anything but 1 is refused (leave it out)
         *
         * Default: `2` (timeSlice, mps); `1` (exclusive).
         */
        replicas?: NonNullable<z.input<typeof settingsSchema>["allocation"]>["replicas"];
        /**
         * how long a task's create waits for free units before it fails naming their holders; at most 240, since Concourse's create call must end within the worker's containerd request timeout (`CONCOURSE_CONTAINERD_REQUEST_TIMEOUT`, default 5m)
         *
         * Default: `60`.
         */
        waitSeconds?: NonNullable<z.input<typeof settingsSchema>["allocation"]>["waitSeconds"];
    };
    /**
     * the Concourse worker: its release, the TSA it registers with, its tags and work dir
     */
    concourse?: {
        /**
         * the Concourse release the worker runs (and, by default, the stack's web)
         *
         * Default: `7.14.2`.
         */
        version?: NonNullable<z.input<typeof settingsSchema>["concourse"]>["version"];
        /**
         * the TSA as the worker reaches it (a DNS name or an IP address); from `gpu-workers:web` when the stack has one (an LXD worker on the web's LXD server reaches its published TSA port through a proxy device of its own)
         *
         * Default: the web's.
         */
        tsaHost?: NonNullable<z.input<typeof settingsSchema>["concourse"]>["tsaHost"];
        /**
         * the TSA's port as the worker reaches it; the web's when the stack has one
         *
         * Default: `2222`.
         */
        tsaPort?: NonNullable<z.input<typeof settingsSchema>["concourse"]>["tsaPort"];
        /**
         * the TSA's host key: its public key line as the `.pub` file holds it (`ssh-rsa AAAA... comment`); a known_hosts line, a fingerprint, a bare body, several keys or a private key are refused
         *
         * Default: the web's.
         */
        tsaPublicKey?: NonNullable<z.input<typeof settingsSchema>["concourse"]>["tsaPublicKey"];
        /**
         * register as a team worker (letters, digits and `_ . -`, not starting with `.` or `-`)
         */
        team?: NonNullable<z.input<typeof settingsSchema>["concourse"]>["team"];
        /**
         * extra tags, after the computed ones
         *
         * Default: `[]`.
         */
        tags?: NonNullable<z.input<typeof settingsSchema>["concourse"]>["tags"];
        /**
         * `{url, sha256}` the host downloads (an `http://` or `https://` URL of plain characters), or `{path}` of a release tarball uploaded from here (a relative path is the project folder's); without it the chain stops before the worker and says so
         */
        binary?: NonNullable<z.input<typeof settingsSchema>["concourse"]>["binary"];
        /**
         * deleted on destroy, so refused: what `datasets.root` refuses, `/opt`, `/srv`, `/mnt`, `/media` themselves, and the dataset root, a folder inside it or one holding it
         *
         * Default: `/opt/concourse/worker`.
         */
        workDir?: NonNullable<z.input<typeof settingsSchema>["concourse"]>["workDir"];
        /**
         * the worker's host is an unprivileged container, whose overlayfs refuses `metacopy`: the unit hides the offer from Concourse's volume driver (set it for an SSH host that is such a container)
         *
         * Default: true for an LXD container of the stack, else false.
         */
        userNamespace?: NonNullable<z.input<typeof settingsSchema>["concourse"]>["userNamespace"];
        /**
         * MTU of the containers' network; Concourse takes it from the host's outbound interface, so a host without a network needs it
         */
        networkMtu?: NonNullable<z.input<typeof settingsSchema>["concourse"]>["networkMtu"];
        /**
         * where the registration is checked, also run one task tagged with the worker's tags through the web (a one-off build on the image of Concourse's bundled mock resource, up to 300 s) and fail the `up` unless it succeeds ([how](docs/concourse.md#a-task-runs-through-the-web))
         *
         * Default: `true`.
         */
        taskCheck?: NonNullable<z.input<typeof settingsSchema>["concourse"]>["taskCheck"];
        /**
         * what a `privileged: true` step gets (`CONCOURSE_CONTAINERD_PRIVILEGED_MODE`, always set): `ignore`, the same as any step; `fuse-only`, CAP_SYS_ADMIN and `/dev/fuse` in a user namespace; `full`, root on the worker. Both of the latter let such a step undo the read-only datasets; they tag the worker `privileged=MODE` and let the runc wrapper create such containers ([why ignore](docs/concourse.md#privileged-steps))
         *
         * Default: `ignore`.
         */
        privilegedMode?: NonNullable<z.input<typeof settingsSchema>["concourse"]>["privilegedMode"];
    };
}

/** The interface is SettingsLayer exactly, its groups and every field's type: tsc fails here otherwise. */
export type WorkerSettingsLayerCheck = [IsTrue<Same<WorkerSettingsLayer, SettingsLayer>>, IsTrue<Same<keyof WorkerSettingsLayer, keyof SettingsLayer>>];
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type IsTrue<T extends true> = T;
