/**
 * The layout's rules, checked on the sources: components/ never reads the stack config, the
 * pure libraries import no Pulumi and no provider or component, providers import no
 * component, stacks/, cli/ and bench/ reach components only through its two entries (the
 * public face, components/index.ts, and the program's, components/program.ts), the rooms of
 * components/lib import one way, stacks/ runs its stages in order (the config read, the
 * components' arguments, the checks that need a plan, then the resources or the offline render)
 * with no stage importing a later one, the host-script loader reads host/ (what hosts receive)
 * and nothing else, and the shell programs live there, not in strings of the TypeScript.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as ts from "typescript";
import { HOST_FILES_DIR, PACKAGE_ROOT, readHostScript } from "../../components/lib/host/scripts";
import { ensureCommands } from "../support/tools";

function sources(dir: string): string[] {
    return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
        const p = path.join(dir, e.name);
        return e.isDirectory() ? sources(p) : e.name.endsWith(".ts") ? [p] : [];
    });
}

/** Every module a source file imports or requires: relative ones resolved to repo paths. */
function importsOf(file: string): string[] {
    const text = fs.readFileSync(file, "utf8");
    const specs = [...text.matchAll(/(?:from\s+|import\(|require\()["']([^"']+)["']/g)].map((m) => m[1]);
    return specs.map((s) => (s.startsWith(".") ? path.relative(PACKAGE_ROOT, path.resolve(path.dirname(file), s)) : s));
}

function offenders(dir: string, bad: (imported: string) => boolean): string[] {
    return sources(path.join(PACKAGE_ROOT, dir)).flatMap((f) =>
        importsOf(f)
            .filter(bad)
            .map((i) => `${path.relative(PACKAGE_ROOT, f)} imports ${i}`),
    );
}

/**
 * What makes a string shell program text rather than a command line, a document or a message:
 * shell's control syntax. A condition or loop with its `then` or `do`; the `fi`, `done` or
 * `esac` that closes one (after a `;`, or on a line of its own); a function definition. A
 * command line (`a && b`, `$(dirname x)`, a redirection) is none of these, and neither is the
 * YAML, TOML, JSON or unit text a host file holds.
 */
const SHELL_CONTROL: RegExp[] = [
    /(^|[;&|(\n]\s*)(if|elif|while|until|for)\s[^\n]*;\s*(then|do)\b/,
    /;\s*(fi|done|esac)\b/,
    /(^|\n)[ \t]*(fi|esac)[ \t]*(\n|$)/,
    /\n[ \t]*done[ \t]*(\n|$)/,
    /(^|[\s;{])[A-Za-z_][\w-]*\(\)\s*\{/,
];

/**
 * The string literals of a TypeScript file that hold shell control syntax, with their lines. A
 * template literal is read as its text parts joined by a placeholder, and a program joined from
 * single-line strings shows in the strings themselves (each holds its own `; then` or `() {`).
 */
function shellInStrings(file: string): string[] {
    const source = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
    const found: string[] = [];
    const visit = (node: ts.Node): void => {
        let text: string | undefined;
        if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) text = node.text;
        else if (ts.isTemplateExpression(node)) text = [node.head.text, ...node.templateSpans.map((s) => `X${s.literal.text}`)].join("");
        if (text !== undefined && SHELL_CONTROL.some((rule) => rule.test(text))) {
            const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
            found.push(`${path.relative(PACKAGE_ROOT, file)}:${line}: ${JSON.stringify(text.slice(0, 80))}`);
        }
        ts.forEachChild(node, visit);
    };
    visit(source);
    return found;
}

describe("the house (layout rules)", () => {
    it("no file under components/ imports from stacks/", () => {
        assert.deepStrictEqual(
            offenders("components", (i) => i === "stacks" || i.startsWith("stacks/")),
            [],
        );
    });

    it("components/lib is pure: no Pulumi, no provider, no component", () => {
        assert.deepStrictEqual(
            offenders("components/lib", (i) => i.startsWith("@pulumi/") || i.startsWith("components/providers") || i.startsWith("components/chain")),
            [],
        );
    });

    it("the rooms of components/lib import one way: no two of them import each other, through any path", () => {
        const lib = path.join(PACKAGE_ROOT, "components", "lib");
        const roomOf = (repoPath: string) => path.relative("components/lib", repoPath).split(path.sep)[0].replace(/\.ts$/, "");
        const edges = new Map<string, Set<string>>();
        for (const file of sources(lib)) {
            const from = roomOf(path.relative(PACKAGE_ROOT, file));
            for (const to of importsOf(file)
                .filter((i) => i.startsWith("components/lib/"))
                .map(roomOf)) {
                if (to !== from) edges.set(from, (edges.get(from) ?? new Set()).add(to));
            }
        }
        const circles: string[] = [];
        const visit = (room: string, trail: string[]) => {
            if (trail.includes(room)) return void circles.push([...trail.slice(trail.indexOf(room)), room].join(" -> "));
            for (const next of edges.get(room) ?? []) visit(next, [...trail, room]);
        };
        for (const room of edges.keys()) visit(room, []);
        assert.deepStrictEqual([...new Set(circles)], []);
    });

    it("a chain link's terms, plan and render sit in its folder of components/lib/links, its component in components/chain", () => {
        const links = fs.readdirSync(path.join(PACKAGE_ROOT, "components", "lib", "links"), { withFileTypes: true }).filter((e) => e.isDirectory());
        assert.ok(links.length >= 7, links.map((l) => l.name).join(" "));
        for (const link of links) {
            assert.deepStrictEqual(fs.readdirSync(path.join(link.parentPath, link.name)).sort(), ["plan.ts", "render.ts"], link.name);
            assert.ok(fs.existsSync(path.join(PACKAGE_ROOT, "components", "chain", link.name, "index.ts")), `components/chain/${link.name}/index.ts`);
        }
    });

    it("providers import no component", () => {
        assert.deepStrictEqual(
            offenders("components/providers", (i) => i.startsWith("components/chain")),
            [],
        );
    });

    for (const dir of ["stacks", "cli", "bench"]) {
        it(`${dir}/ reaches components only through its two entries (components/index.ts, components/program.ts)`, () => {
            assert.deepStrictEqual(
                offenders(dir, (i) => i.startsWith("components/") && i !== "components/index" && i !== "components/program"),
                [],
            );
        });
    }

    // The program's stages, in order: the config read, the components' arguments, the checks that
    // need a plan; then either the resources (pulumi up) or the offline render. Each stage imports
    // its own and earlier ones only, and neither of the program's entries.
    const EARLIER = ["config", "args", "checks"];
    const STAGES: Record<string, string[]> = {
        config: ["config"],
        args: ["config", "args"],
        checks: ["config", "args", "checks"],
        resources: [...EARLIER, "resources"],
        render: [...EARLIER, "render"],
    };
    for (const [stage, allowed] of Object.entries(STAGES)) {
        it(`stacks/${stage}/ imports from stacks/ only ${allowed.join(", ")}`, () => {
            assert.deepStrictEqual(
                offenders(path.join("stacks", stage), (i) => i.startsWith("stacks/") && !allowed.some((a) => i.startsWith(`stacks/${a}/`))),
                [],
            );
        });
    }

    it("stacks/ holds its stages and the program's two entries, nothing loose", () => {
        const entries = fs.readdirSync(path.join(PACKAGE_ROOT, "stacks")).sort();
        assert.deepStrictEqual(entries, [...Object.keys(STAGES), "program.ts", "provider-start.ts"].sort());
    });

    it("components/ holds its three kinds and the two entries, nothing loose", () => {
        const entries = fs.readdirSync(path.join(PACKAGE_ROOT, "components")).sort();
        assert.deepStrictEqual(entries, ["chain", "index.ts", "lib", "program.ts", "providers"]);
    });

    it("the host-script loader reads host/ and nothing else", () => {
        assert.strictEqual(HOST_FILES_DIR, path.join(PACKAGE_ROOT, "host"));
        for (const name of fs.readdirSync(HOST_FILES_DIR)) assert.ok(readHostScript(name).length > 0, name);
        for (const tooling of ["up.sh", "bootstrap-engine.sh", "../scripts/up.sh", "../package.json", "/etc/passwd", "host/gpu-driver.sh", ".", ".."]) {
            assert.throws(() => readHostScript(tooling), /expected a file name in host\/|there is no/, tooling);
        }
    });

    it("host/ holds only host scripts, developer tooling lives in scripts/", () => {
        const hostFiles = fs.readdirSync(HOST_FILES_DIR);
        for (const f of hostFiles) assert.match(fs.readFileSync(path.join(HOST_FILES_DIR, f), "utf8"), /^#!\/usr\/bin\/env bash\n/, `${f} is a host script`);
        for (const tool of [
            "up.sh",
            "down.sh",
            "bootstrap-engine.sh",
            "build-wrapper.sh",
            "install-test-deps.sh",
            "lxd-build-image.sh",
            "lxd-test-daemon.sh",
        ]) {
            assert.ok(!hostFiles.includes(tool), `${tool} is not in host/`);
            assert.ok(fs.existsSync(path.join(PACKAGE_ROOT, "scripts", tool)), `${tool} is in scripts/`);
        }
    });

    it("no TypeScript under components/ holds a shell program in a string: the shell lives in host/, the TypeScript passes data", () => {
        assert.deepStrictEqual(sources(path.join(PACKAGE_ROOT, "components")).flatMap(shellInStrings), []);
    });

    it("the shell-program rule catches the forms a program takes in a string, and leaves command lines and host documents alone", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gw-house-"));
        try {
            const check = (code: string) => {
                fs.writeFileSync(path.join(dir, "probe.ts"), code);
                return shellInStrings(path.join(dir, "probe.ts")).length > 0;
            };
            for (const program of [
                "const a = `if [ -e ${p} ]; then rm -f ${p}; fi`;",
                "const b = ['if [ -n \"$x\" ]; then', '  echo $x', 'fi'].join('\\n');",
                "const c = `for f in ${d}/*; do echo $f; done`;",
                "const d = 'claim() { mkdir -p \"$1\"; }';",
                "const e = `case $1 in a) echo a ;; esac`;",
                "const f = `x=1\nwhile read -r l; do\n  echo $l\ndone\n`;",
            ])
                assert.ok(check(program), program);
            for (const data of [
                "const a = `sudo -n sh -c ${q} && mv -f ${a} ${b} || true`;",
                'const b = `umask 077 && mkdir -p -- "$(dirname -- ${t})" && cat > ${t}`;',
                "const c = '[Unit]\\nDescription=if the host is done; then nothing\\nExecStart=/usr/bin/x --done\\n';",
                "const d = `#cloud-config\nruncmd:\n  - [systemctl, enable, x]\nwrite_files:\n  - path: /etc/fi\n`;",
                'const e = \'{"done": true, "fi": "esac"}\';',
                'const f = `[plugins."io.containerd"]\n  done = true\n`;',
                "const g = 'done';",
            ])
                assert.ok(!check(data), data);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("every shell script in host/ and scripts/ is shellcheck-clean (style level)", function () {
        this.timeout(120000);
        ensureCommands(["shellcheck"], ["shellcheck"]);
        const scripts = ["host", "scripts"].flatMap((d) =>
            fs
                .readdirSync(path.join(PACKAGE_ROOT, d))
                .filter((f) => f.endsWith(".sh"))
                .map((f) => path.join(d, f)),
        );
        assert.ok(scripts.length >= 16, scripts.join(" "));
        const r = spawnSync("shellcheck", ["-S", "style", ...scripts], { cwd: PACKAGE_ROOT, encoding: "utf8" });
        assert.strictEqual(r.status, 0, r.stdout + r.stderr);
    });
});
