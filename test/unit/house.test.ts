/**
 * The layout's rules, checked on the sources: components/ never reads the stack config, the
 * pure libraries import no Pulumi and no provider or component, providers import no
 * component, stacks/, cli/ and bench/ reach components only through its two entries (the
 * public face, components/index.ts, and the program's, components/program.ts), the rooms of
 * components/lib import one way, stacks/ runs its stages in order (the config read, the
 * components' arguments, the checks that need a plan, then the resources or the offline render)
 * with no stage importing a later one, and the host-script loader reads host/ (what hosts
 * receive) and nothing else.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
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
