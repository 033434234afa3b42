/**
 * npm run discover -- --ssh user@host [--port N] [--identity FILE] | --local | --from FILE [--raw | --json]
 *
 * Runs host/discover-gpus.sh on a host (over ssh, as `bash -s` with the script on stdin;
 * or here), or reads a saved discovery document, and prints the inventory block to paste
 * under that host in the stack config, indented as a host's keys are in Pulumi.<stack>.yaml
 * (--json: the same block as one JSON document, for tools; warnings and problems then go to
 * stderr only). Where it finds no GPU (`vendor: none`), stderr says what each probe saw. --raw prints the discovery document itself (keep it:
 * `--from` reads it back, and it is what a bug report about discovery needs).
 */
import { spawnSync } from "child_process";
import * as fs from "fs";
import {
    DiscoveryDocumentError,
    interpretDiscovery,
    PASTE_INDENT,
    readDiscoveryDocument,
    readHostScript,
    renderInventoryYaml,
    whyNoGpu,
} from "../components/program";

export const USAGE = `usage: npm run discover -- (--ssh user@host [--port N] [--identity FILE] | --local | --from FILE|-) [--raw | --json]
  --ssh user@host  run the discovery script on that host over ssh (bash -s; no files are copied)
  --port N         ssh port (default 22)
  --identity FILE  ssh private key
  --local          run the discovery script on this machine
  --from FILE      read a discovery document saved with --raw ("-" for stdin)
  --raw            print the discovery document instead of the inventory block
  --json           print the inventory block as one JSON document (warnings to stderr)`;

export class UsageError extends Error {}

export interface DiscoverArgs {
    mode: { ssh: string; port?: number; identity?: string } | { local: true } | { from: string };
    raw: boolean;
    json: boolean;
}

export function parseArgs(argv: string[]): DiscoverArgs {
    let ssh: string | undefined;
    let port: number | undefined;
    let identity: string | undefined;
    let from: string | undefined;
    let local = false;
    let raw = false;
    let json = false;
    const value = (i: number, flag: string): string => {
        const v = argv[i + 1];
        if (v === undefined || (v.startsWith("--") && v !== "-")) throw new UsageError(`${flag} needs a value`);
        return v;
    };
    for (let i = 0; i < argv.length; i++) {
        const arg = argv[i];
        switch (arg) {
            case "--ssh":
                ssh = value(i, arg);
                i++;
                break;
            case "--port": {
                const v = value(i, arg);
                i++;
                if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 65535) throw new UsageError(`--port must be a port number (1-65535), got "${v}"`);
                port = Number(v);
                break;
            }
            case "--identity":
                identity = value(i, arg);
                i++;
                break;
            case "--from":
                from = value(i, arg);
                i++;
                break;
            case "--local":
                local = true;
                break;
            case "--raw":
                raw = true;
                break;
            case "--json":
                json = true;
                break;
            case "-h":
            case "--help":
                throw new UsageError("");
            default:
                throw new UsageError(`unknown argument "${arg}"`);
        }
    }
    const modes = [ssh !== undefined, local, from !== undefined].filter(Boolean).length;
    if (modes !== 1) throw new UsageError(modes === 0 ? "say where to discover: --ssh, --local or --from" : "give only one of --ssh, --local and --from");
    if ((port !== undefined || identity !== undefined) && ssh === undefined) throw new UsageError("--port and --identity go with --ssh");
    if (raw && json) throw new UsageError("give only one of --raw and --json");
    if (ssh !== undefined) {
        if (!/^[A-Za-z0-9._-]+@[A-Za-z0-9._:[\]-]+$/.test(ssh) && !/^[A-Za-z0-9._:[\]-]+$/.test(ssh))
            throw new UsageError(`--ssh expects user@host or host, got "${ssh}"`);
        if (identity !== undefined && !fs.existsSync(identity)) throw new UsageError(`--identity ${identity}: no such file`);
        return { mode: { ssh, port, identity }, raw, json };
    }
    if (local) return { mode: { local: true }, raw, json };
    return { mode: { from: from! }, raw, json };
}

/** Runs the discovery script and returns its stdout; throws with the command's own words on failure. */
function runScript(mode: DiscoverArgs["mode"]): { text: string; origin: string } {
    const script = readHostScript("discover-gpus.sh");
    let command: string;
    let args: string[];
    let origin: string;
    if ("ssh" in mode) {
        command = "ssh";
        args = [
            "-o",
            "BatchMode=yes",
            ...(mode.port ? ["-p", String(mode.port)] : []),
            ...(mode.identity ? ["-i", mode.identity] : []),
            "--",
            mode.ssh,
            "bash -s",
        ];
        origin = `ssh ${mode.ssh}${mode.port ? ` port ${mode.port}` : ""}`;
    } else {
        command = "bash";
        args = ["-s"];
        origin = "this machine";
    }
    const result = spawnSync(command, args, { input: script, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
    // A command that exits before reading the script (ssh that cannot connect) leaves EPIPE
    // in result.error: its exit status and stderr are the real answer.
    if (result.error && result.status === null) throw new Error(`${origin}: cannot run ${command}: ${result.error.message}`);
    if (result.status !== 0)
        throw new Error(`${origin}: the discovery script failed (exit ${result.status})${result.stderr.trim() ? `: ${result.stderr.trim()}` : ""}`);
    return { text: result.stdout, origin };
}

function readInput(from: string): { text: string; origin: string } {
    if (from === "-") return { text: fs.readFileSync(0, "utf8"), origin: "stdin" };
    if (!fs.existsSync(from)) throw new UsageError(`--from ${from}: no such file`);
    return { text: fs.readFileSync(from, "utf8"), origin: from };
}

export interface Output {
    out: (text: string) => void;
    err: (text: string) => void;
}

/** The command; returns the exit status (0 ok, 1 discovery failed, 2 bad input). */
export function main(argv: string[], io: Output = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) }): number {
    let args: DiscoverArgs;
    try {
        args = parseArgs(argv);
    } catch (err) {
        if (err instanceof UsageError) {
            io.err(`${err.message ? `discover: ${err.message}\n` : ""}${USAGE}\n`);
            return 2;
        }
        throw err;
    }
    try {
        const { text, origin } = "from" in args.mode ? readInput(args.mode.from) : runScript(args.mode);
        const doc = readDiscoveryDocument(text, origin);
        if (args.raw) {
            io.out(JSON.stringify(doc, null, 2) + "\n");
            return 0;
        }
        const result = interpretDiscovery(doc);
        if (result.inventory.vendor === "none") {
            io.err(
                `discover: no GPU found on ${origin}; what each probe saw:\n${whyNoGpu(doc)
                    .map((l) => `  - ${l}\n`)
                    .join("")}`,
            );
        }
        if (args.json) {
            io.out(JSON.stringify(result.inventory, null, 2) + "\n");
            for (const w of result.warnings) io.err(`discover: warning: ${w}\n`);
            for (const p of result.problems) io.err(`discover: PROBLEM: ${p}\n`);
            return 0;
        }
        io.out(renderInventoryYaml(result, origin, { indent: PASTE_INDENT }));
        for (const p of result.problems) io.err(`discover: PROBLEM: ${p}\n`);
        return 0;
    } catch (err) {
        const message = (err as Error).message;
        io.err(`discover: ${message}\n`);
        return err instanceof UsageError || err instanceof DiscoveryDocumentError ? 2 : 1;
    }
}

if (require.main === module) {
    process.exitCode = main(process.argv.slice(2));
}
