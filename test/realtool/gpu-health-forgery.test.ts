/**
 * What a task can put in the real kernel log, against the watcher reading /dev/kmsg as on a host:
 * programs named as driver lines (NVIDIA's, amdgpu's, i915's and xe's) crash as nobody, out of any container and in a runc container,
 * and the kernel's own segfault lines (facility 0) carry those names; a process writes the
 * drivers' own lines to /dev/kmsg (which stores them in the user facility). The watcher must stay
 * quiet. Each forgery is first found in the kernel log, so the test proves that it reached the
 * watcher; the recorded lines that must land a worker: gpu-health.test.ts.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { GpuInventoryInput } from "../../components/lib/gpu/inventory";
import { capture, forgedNames, kernelLine, kmsgProblem, uniqueDomain, WatcherRun, withDomain } from "./gpu-health-support";
import { buildStaticC, ensureWrapperTools, makeBundle, makeBusyboxRootfs, sh, tempDir } from "./wrapper-support";

const FAST = { pollSeconds: 1, settleSeconds: 3, dirtyGraceSeconds: 2 };
const NOBODY = 65534;
const EXCEPTION_TRACE = "/proc/sys/debug/exception-trace";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface KernelRecord {
    facility: number;
    seq: number;
    message: string;
}

/** Every record the kernel log holds now, read as the watcher reads them. */
function kernelRecords(): KernelRecord[] {
    const out = spawnSync("dd", ["if=/dev/kmsg", "iflag=nonblock", "bs=65536", "status=none"], { encoding: "utf8", maxBuffer: 64 << 20 }).stdout;
    return out.split("\n").flatMap((line) => {
        const m = /^(\d+),(\d+),[^;]*;(.*)$/.exec(line);
        return m ? [{ facility: Number(m[1]) >> 3, seq: Number(m[2]), message: m[3] }] : [];
    });
}

/** `text` as /dev/kmsg escapes it. */
function escaped(text: string): string {
    let out = "";
    for (const b of Buffer.from(text, "utf8")) out += b < 0x20 || b >= 0x7f || b === 0x5c ? `\\x${b.toString(16).padStart(2, "0")}` : String.fromCharCode(b);
    return out;
}

/**
 * Runs `crash` (which crashes each program named in the names it is given) until the kernel has
 * logged each one's segfault after `since`. The segfault lines are rate-limited (10 each 5 s):
 * each round crashes only the programs not logged yet, or the same first ten would win each time.
 */
async function crashUntilLogged(names: string[], crash: (names: string[]) => void): Promise<void> {
    const since = kernelRecords().at(-1)?.seq ?? -1;
    let missing = names;
    for (let round = 0; ; round++) {
        crash(missing);
        await sleep(300);
        const logged = kernelRecords().filter((r) => r.seq > since && r.facility === 0 && r.message.includes("]: segfault at "));
        missing = names.filter((n) => !logged.some((r) => r.message.includes(` in ${escaped(n)}[`)));
        if (missing.length === 0) return;
        if (round === 4) throw new Error(`the kernel logged no segfault line for ${missing.map((n) => JSON.stringify(n)).join(", ")}`);
        await sleep(5500); // printk_ratelimit: 10 lines each 5 s
    }
}

describe("GPU health watcher against forgeries in the real kernel log (crashing programs as nobody, a runc container, writes to /dev/kmsg)", function () {
    this.timeout(300_000);
    const domain = uniqueDomain();
    const hgx: GpuInventoryInput = {
        vendor: "nvidia",
        nvswitches: 4,
        gpus: ["0D", "0E"].map((b, index) => ({ index, model: "NVIDIA H100 80GB HBM3", memoryMiB: 81559, pciBusId: withDomain(`00000000:${b}:00.0`, domain) })),
    };
    const amdBus = `${domain}:0b:00.0`;
    const names = forgedNames(`${domain}:0d:00`, `${domain}:0b:00.0`);
    let nvidia: WatcherRun;
    let amd: WatcherRun;
    /** An Intel GPU at the AMD one's address, once on i915 and once on xe: each driver's lines meet a GPU of that driver. */
    const intel: WatcherRun[] = [];
    let dir: string;
    let crasher: string;
    let trace: string | undefined;

    before(async function () {
        const problem = kmsgProblem();
        if (problem) throw new Error(`the forgeries' test reads the real kernel log: ${problem}`);
        ensureWrapperTools();
        trace = fs.readFileSync(EXCEPTION_TRACE, "utf8").trim();
        // The kernel logs unhandled segfaults only while this is on (x86's default).
        if (trace !== "1") fs.writeFileSync(EXCEPTION_TRACE, "1");
        dir = tempDir("gpu-health-forgery-");
        fs.chmodSync(dir, 0o755);
        crasher = buildStaticC("int main(void) { *(volatile int *)0 = 1; return 0; }\n", path.join(dir, "crash"));

        nvidia = new WatcherRun({ realKernelLog: true });
        nvidia.answer(capture("hgx-h100-8x", "nvidia-smi-q.txt", domain));
        nvidia.startWorker();
        await nvidia.start(hgx, { health: FAST });
        amd = new WatcherRun({ realKernelLog: true });
        fs.mkdirSync(`${amd.root}/sys/bus/pci/devices/${amdBus}`, { recursive: true });
        amd.startWorker();
        await amd.start(
            { vendor: "amd", gpus: [{ index: 0, model: "AMD Instinct MI210", memoryMiB: 65520, gfxTarget: "gfx90a", pciBusId: amdBus }] },
            { health: FAST },
        );
        for (const driver of ["i915", "xe"] as const) {
            const w = new WatcherRun({ realKernelLog: true });
            intel.push(w);
            fs.mkdirSync(`${w.root}/sys/bus/pci/devices/${amdBus}/drm/card0`, { recursive: true });
            w.startWorker();
            await w.start(
                {
                    vendor: "intel",
                    gpus: [
                        {
                            index: 0,
                            model: "Intel Data Center GPU Flex 170",
                            memoryMiB: 16384,
                            pciBusId: amdBus,
                            cardNode: "card0",
                            renderNode: "renderD128",
                            driver,
                            pciDeviceId: "0x56c0",
                        },
                    ],
                },
                { health: FAST },
            );
        }
        for (const w of [nvidia, amd, ...intel]) assert.ok(w.readsKernelLog(), "the watcher reads /dev/kmsg itself");
    });

    after(async () => {
        await nvidia?.stop();
        await amd?.stop();
        for (const w of intel) await w.stop();
        if (trace !== undefined && trace !== "1") fs.writeFileSync(EXCEPTION_TRACE, trace);
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    /** No watcher has counted anything, and every worker runs. */
    async function quiet(): Promise<void> {
        await sleep(2500); // past a poll
        for (const w of [nvidia, amd, ...intel]) {
            assert.strictEqual(w.workerState(), "running", w.logText());
            assert.strictEqual(w.status(), "healthy");
            assert.doesNotMatch(w.logText(), /unhealthy|SXid|Xid [0-9]|noted/);
            for (const row of w.rows()) assert.deepStrictEqual(row.slice(2), ["1", "0", "", ""]);
        }
    }

    it("programs named as Xid, SXid, amdgpu, i915 and xe lines (line breaks too), crashing as nobody outside any container, land no worker", async () => {
        const programs = path.join(dir, "programs");
        fs.mkdirSync(programs, { mode: 0o755 });
        for (const n of names) fs.copyFileSync(crasher, path.join(programs, n));
        for (const n of names) fs.chmodSync(path.join(programs, n), 0o755);
        await crashUntilLogged(names, (some) => {
            for (const n of some) {
                const r = spawnSync("setpriv", [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "--", path.join(programs, n)]);
                assert.strictEqual(r.signal, "SIGSEGV", `${JSON.stringify(n)} crashed`);
            }
        });
        await quiet();
    });

    it("the same programs crashing as nobody in a runc container land no worker", async () => {
        const rootfs = path.join(dir, "rootfs");
        makeBusyboxRootfs(rootfs);
        const forged = path.join(rootfs, "forged");
        const bundle = makeBundle(path.join(dir, "bundle"), rootfs, ["/bin/sh", "-c", 'for f in /forged/*; do "$f"; done; exit 0']);
        const spec = JSON.parse(fs.readFileSync(path.join(bundle, "config.json"), "utf8"));
        spec.process.user = { uid: NOBODY, gid: NOBODY };
        fs.writeFileSync(path.join(bundle, "config.json"), JSON.stringify(spec));
        let n = 0;
        await crashUntilLogged(names, (some) => {
            // The container crashes the programs in /forged: those not logged yet.
            fs.rmSync(forged, { recursive: true, force: true });
            fs.mkdirSync(forged);
            for (const name of some) fs.copyFileSync(crasher, path.join(forged, name));
            for (const name of some) fs.chmodSync(path.join(forged, name), 0o755);
            sh("runc", ["run", "--bundle", bundle, `forgery-${process.pid}-${n++}`]);
        });
        await quiet();
    });

    it("the drivers' own lines written to /dev/kmsg by a process (root's, at kernel level) land no worker", async () => {
        const lines = [
            kernelLine("xid-79", hgx.gpus![0].pciBusId!),
            kernelLine("sxid-fatal", `${domain}:0b:00.0`),
            kernelLine("amdgpu-reset", amdBus),
            kernelLine("i915-reset-failed", amdBus),
            kernelLine("xe-reset-failed", amdBus),
            kernelLine("xe-wedged", amdBus).split("\n")[0],
        ];
        const since = kernelRecords().at(-1)?.seq ?? -1;
        for (const line of lines) fs.writeFileSync("/dev/kmsg", `<2>${line}\n`);
        const logged = kernelRecords().filter((r) => r.seq > since);
        for (const line of lines)
            assert.ok(
                logged.some((r) => r.message === escaped(line) && r.facility === 1),
                `the kernel stored ${line} in the user facility`,
            );
        await quiet();
    });
});
