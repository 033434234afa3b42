/**
 * The GPU metrics' real-tool tests: Debian's prometheus-node-exporter, started on a free
 * loopback port with a textfile folder of the test's own and scraped over HTTP, and
 * host/gpu-metrics.sh run with a stand-in nvidia-smi or xpu-smi that prints a fixture's recorded answer.
 * The file and the scrape are read by Prometheus's own parser (test/support/promtext.ts).
 */
import * as assert from "assert";
import { ChildProcess, spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as http from "http";
import * as path from "path";
import { FIXTURES, writeFakeTool } from "../fixtures/discovery/run-fixture";
import { Family, Metric, parseExposition } from "../support/promtext";
import { ensureCommands } from "../support/tools";
import { freePort } from "./lxd-support";
import { HOST_DIR } from "./wrapper-support";

export const METRICS_SCRIPT = path.join(HOST_DIR, "gpu-metrics.sh");

/** A node exporter of the test's own: only its textfile collector, on 127.0.0.1. */
export class TestNodeExporter {
    private child?: ChildProcess;
    port = 0;
    private output = "";

    constructor(readonly textfileDir: string) {}

    async start(): Promise<void> {
        ensureCommands(["prometheus-node-exporter"], ["prometheus-node-exporter"]);
        this.port = await freePort();
        this.child = spawn(
            "prometheus-node-exporter",
            [
                `--web.listen-address=127.0.0.1:${this.port}`,
                "--collector.disable-defaults",
                "--collector.textfile",
                `--collector.textfile.directory=${this.textfileDir}`,
            ],
            { stdio: ["ignore", "pipe", "pipe"] },
        );
        this.child.stdout?.on("data", (d) => (this.output += d));
        this.child.stderr?.on("data", (d) => (this.output += d));
        for (let i = 0; i < 100; i++) {
            if (this.child.exitCode !== null) throw new Error(`the node exporter exited (${this.child.exitCode}): ${this.output}`);
            try {
                await this.scrape();
                return;
            } catch {
                await new Promise((r) => setTimeout(r, 100));
            }
        }
        throw new Error(`the node exporter did not answer on 127.0.0.1:${this.port}: ${this.output}`);
    }

    scrape(): Promise<string> {
        return new Promise((resolve, reject) => {
            const req = http.get({ host: "127.0.0.1", port: this.port, path: "/metrics", timeout: 5000 }, (res) => {
                let body = "";
                res.on("data", (d) => (body += d));
                res.on("end", () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`HTTP ${res.statusCode}: ${body}`))));
            });
            req.on("error", reject);
            req.on("timeout", () => req.destroy(new Error("timeout")));
        });
    }

    async stop(): Promise<void> {
        const child = this.child;
        if (!child || child.exitCode !== null) return;
        await new Promise<void>((resolve) => {
            child.once("exit", () => resolve());
            child.kill("SIGTERM");
        });
    }
}

export interface Sample {
    name: string;
    labels: Record<string, string>;
    value: number;
}

/** The gauge, counter and untyped samples of parsed families. */
export function samplesOf(families: Family[]): Sample[] {
    return families.flatMap((f) => f.metrics.flatMap((m) => (m.value === null ? [] : [{ name: f.name, labels: m.labels, value: m.value }])));
}

/** A family's series in one order, so two readings of the same series compare equal. */
function sorted(f: Family): Family {
    const key = (m: Metric) => JSON.stringify(Object.entries(m.labels).sort());
    return { ...f, metrics: [...f.metrics].sort((a, b) => key(a).localeCompare(key(b))) };
}

/**
 * The metrics file of `textfileDir`, read by Prometheus's parser, after checking that the node
 * exporter read it too (`node_textfile_scrape_error` 0) and serves the same gpu_workers_
 * families: every series with its labels and value, no more, no fewer.
 */
export async function readMetrics(textfileDir: string, exporter: TestNodeExporter): Promise<Family[]> {
    const file = parseExposition(fs.readFileSync(path.join(textfileDir, "gpu_workers.prom"), "utf8"));
    const served = parseExposition(await exporter.scrape());
    assert.deepStrictEqual(
        pick(samplesOf(served), "node_textfile_scrape_error"),
        [{ name: "node_textfile_scrape_error", labels: {}, value: 0 }],
        "the exporter read the file",
    );
    assert.deepStrictEqual(served.filter((f) => f.name.startsWith("gpu_workers_")).map(sorted), file.map(sorted), "the exporter serves what the file holds");
    return file;
}

/** The samples of one metric whose labels include `match`. */
export function pick(samples: Sample[], name: string, match: Record<string, string> = {}): Sample[] {
    return samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v));
}

/** A folder holding a stand-in nvidia-smi that answers with the fixture's recorded output. */
export function fakeNvidiaSmi(dir: string, fixture: string): string {
    const bin = path.join(dir, "bin");
    fs.mkdirSync(bin, { recursive: true });
    writeFakeTool(bin, "nvidia-smi", path.join(FIXTURES, fixture, "tools"));
    return bin;
}

/** The recorded xpu-smi answers (test/fixtures/xpu-smi-metrics/, each case's source.md says what is recorded). */
export const XPU_SMI_FIXTURES = path.join(FIXTURES, "..", "xpu-smi-metrics");

/** host/gpu-metrics.sh's xpu-smi command lines and the capture each maps to; any other line fails (exit 97, 98 without a capture). */
export const XPU_SMI_COMMANDS: Record<string, string> = {
    "discovery --dump 1,11,4,16": "xpu-smi-discovery-dump",
    "dump -d 0,1 -m 0,1,3,18 -n 1": "xpu-smi-dump-0-1",
    "dump -d 1,0 -m 0,1,3,18 -n 1": "xpu-smi-dump-1-0",
    "dump -d 1 -m 0,1,3,18 -n 1": "xpu-smi-dump-1",
    "dump -d 0 -m 0,1,3,18 -n 1": "xpu-smi-dump-0",
};

/** A folder holding a stand-in xpu-smi that answers with the case's recorded output. */
export function fakeXpuSmi(dir: string, fixture: string): string {
    const bin = path.join(dir, "bin");
    fs.mkdirSync(bin, { recursive: true });
    writeFakeTool(bin, "xpu-smi", path.join(XPU_SMI_FIXTURES, fixture), XPU_SMI_COMMANDS);
    return bin;
}

/** Runs `gpu-metrics.sh collect` with the stand-in first on PATH. */
export function collect(bin: string, args: string[]): { status: number | null; stderr: string } {
    const r = spawnSync("bash", [METRICS_SCRIPT, "collect", ...args], { env: { ...process.env, PATH: `${bin}:${process.env.PATH}` }, encoding: "utf8" });
    return { status: r.status, stderr: r.stderr };
}
