/**
 * What the offline render costs on a fleet: `npm run render` (the compiled CLI, in a child
 * process of its own) on a stack of N hosts with the 8x H100 HGX inventory of the fixtures,
 * written to a temporary folder, at 50 and 500 hosts. Prints the wall time and the child's
 * peak RSS, with PASS/MISS against the targets (500 hosts: at most 300 MB and 10 s); always
 * exits 0 (benchmarks report, tests assert).
 *   node dist/bench/render.js [--hosts 50,500] [--cli path/to/cli/render.js]
 */
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { stringify } from "yaml";
import { HGX_H100_8X, stackWith } from "../test/fixtures/stacks/inventories";

const TARGET_RSS_MB = 300;
const TARGET_SECONDS = 10;
const PRELOAD = path.join(__dirname, "peak-rss.js");

function option(name: string, fallback: string): string {
    const i = process.argv.indexOf(name);
    return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}

/** A stack file of n HGX hosts (distinct addresses), as Pulumi.bench.yaml in dir. */
function writeStack(dir: string, n: number): void {
    const hosts = Array.from({ length: n }, (_, i) => ({ name: `hgx-${String(i).padStart(3, "0")}`, inventory: HGX_H100_8X }));
    const stack = stackWith(...hosts);
    stack.hosts.forEach((h, i) => {
        (h.transport as { ssh: { host: string } }).ssh.host = `10.${Math.floor(i / 250)}.${i % 250}.10`;
    });
    fs.writeFileSync(
        path.join(dir, "Pulumi.bench.yaml"),
        stringify({ config: { "gpu-workers:defaults": stack.defaults, "gpu-workers:hosts": stack.hosts } }, { aliasDuplicateObjects: false }),
    );
}

interface Run {
    hosts: number;
    seconds: number;
    rssMb: number;
    files: number;
    ok: boolean;
    error?: string;
}

function renderOnce(cli: string, n: number): Run {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gw-bench-render-"));
    try {
        writeStack(dir, n);
        const rssFile = path.join(dir, "peak-rss");
        const out = path.join(dir, "out");
        const start = process.hrtime.bigint();
        const r = spawnSync(process.execPath, ["--require", PRELOAD, cli, "--project-dir", dir, "--stack", "bench", "--out", out], {
            encoding: "utf8",
            env: { ...process.env, GW_PEAK_RSS_FILE: rssFile },
            maxBuffer: 64 * 1024 * 1024,
        });
        const seconds = Number(process.hrtime.bigint() - start) / 1e9;
        const rssMb = fs.existsSync(rssFile) ? Number(fs.readFileSync(rssFile, "utf8")) / 1024 : NaN;
        const files = (r.stdout.match(/^\S+: (\d+) files/gm) ?? []).reduce((sum, line) => sum + Number(/: (\d+) files/.exec(line)![1]), 0);
        return {
            hosts: n,
            seconds,
            rssMb,
            files,
            ok: r.status === 0,
            ...(r.status === 0 ? {} : { error: (r.stderr || r.stdout).trim().split("\n").slice(-3).join(" | ") }),
        };
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

function main(): void {
    const cli = path.resolve(option("--cli", path.join(__dirname, "..", "cli", "render.js")));
    const counts = option("--hosts", "50,500").split(",").map(Number);
    console.log(
        `offline render of N hosts x 8 GPUs (8x H100 HGX), ${cli}, one child process per run; targets at 500 hosts: <= ${TARGET_RSS_MB} MB peak RSS, <= ${TARGET_SECONDS} s`,
    );
    console.log("hosts  files   wall s  peak RSS MB  verdict");
    for (const n of counts) {
        const run = renderOnce(cli, n);
        if (!run.ok) {
            console.log(`${String(n).padStart(5)}  the render failed: ${run.error}`);
            continue;
        }
        const verdict = run.seconds <= TARGET_SECONDS && run.rssMb <= TARGET_RSS_MB ? "PASS" : "MISS";
        console.log(
            `${String(n).padStart(5)}  ${String(run.files).padStart(6)}  ${run.seconds.toFixed(2).padStart(6)}  ${run.rssMb.toFixed(0).padStart(11)}  ${verdict}${n === 500 ? "" : " (targets are for 500)"}`,
        );
    }
}

main();
