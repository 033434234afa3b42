/**
 * The Prometheus text format as Prometheus reads it: test/support/promtext (Go, the parser of
 * github.com/prometheus/common/expfmt), built once per test run into dist/test-tools/. The
 * tests judge the metrics file by it, never by a pattern of their own. A failed build fails the
 * test that needs it, saying why: its modules come from the Go module proxy or the module cache.
 */
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { goBinary } from "./tools";

const SOURCE = path.join(PACKAGE_ROOT, "test", "support", "promtext");
const BINARY = path.join(PACKAGE_ROOT, "dist", "test-tools", "promtext");
const CACHES = path.join(PACKAGE_ROOT, "scripts", "go-caches.sh");

export interface Metric {
    labels: Record<string, string>;
    /** null for a summary or histogram. */
    value: number | null;
}

export interface Family {
    name: string;
    help: string;
    /** GAUGE, COUNTER, UNTYPED, SUMMARY, HISTOGRAM... */
    type: string;
    metrics: Metric[];
}

let built: string | undefined;

/** The parser's binary, built on first use (go build's own cache makes a rebuild cheap). */
export function promtextBinary(): string {
    if (built) return built;
    fs.mkdirSync(path.dirname(BINARY), { recursive: true });
    const tmp = `${BINARY}.tmp.${process.pid}`;
    // The caches the project's own Go builds take (scripts/go-caches.sh) where go has no HOME.
    const r = spawnSync(
        "bash",
        [
            "-c",
            `. "$1" && go_private_caches "$2" && exec "$3" build -trimpath -buildvcs=false -o "$4" .`,
            "bash",
            CACHES,
            PACKAGE_ROOT,
            goBinary("test/support/promtext needs it to build"),
            tmp,
        ],
        { cwd: SOURCE, encoding: "utf8", env: { ...process.env, CGO_ENABLED: "0", GOFLAGS: "-mod=readonly" }, timeout: 280_000 },
    );
    if (r.status !== 0) {
        fs.rmSync(tmp, { force: true });
        throw new Error(
            `building test/support/promtext failed (it needs github.com/prometheus/common from the Go module proxy or the module cache, as its go.sum pins it):\n${r.stderr}${r.error ?? ""}`,
        );
    }
    fs.renameSync(tmp, BINARY);
    built = BINARY;
    return built;
}

/** `text` read by Prometheus's parser: its families by name; throws with the parser's reason. */
export function parseExposition(text: string): Family[] {
    const r = spawnSync(promtextBinary(), [], { input: text, encoding: "utf8", timeout: 30_000 });
    if (r.status !== 0) throw new Error(`Prometheus's text parser refused the input: ${r.stderr.trim()}${r.error ?? ""}\n--- input ---\n${text}`);
    return (JSON.parse(r.stdout) as { families: Family[] }).families;
}
