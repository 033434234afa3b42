/**
 * The README's "Your own hosts" path, taken verbatim: its stack file, written below the line
 * `pulumi stack init` writes, renders with `npm run render` (built) as the README shows; it is
 * examples/stacks/Pulumi.l4.yaml; its inventory is what `npm run discover` prints for such a
 * host; and the host keys the README says are refused are refused, by the render, naming the key.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { parse } from "yaml";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { renderInventoryYaml, PASTE_INDENT } from "../../components/lib/discovery/yaml-block";
import type { DiscoveryResult } from "../../components/lib/discovery/result";
import { pinnedOf, PUB } from "../fixtures/ssh-keys/keys";
import { makeScratch, scratchName } from "../support/scratch";

const RENDER = path.join(PACKAGE_ROOT, "dist", "cli", "render.js");
const KEY_PATH = "hosts[0].transport.ssh.hostKey";

function section(readme: string, title: string): string {
    const start = readme.indexOf(`\n${title}\n`);
    assert.ok(start >= 0, `the README has ${title}`);
    const end = readme.indexOf("\n## ", start + 1);
    return readme.slice(start + 1, end < 0 ? undefined : end);
}

/** The fenced blocks of a section, with their info string. */
function blocks(text: string): { lang: string; body: string }[] {
    return [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1], body: m[2] }));
}

describe('README "Your own hosts": the path a user follows, verbatim', function () {
    this.timeout(60000);
    const readme = fs.readFileSync(path.join(PACKAGE_ROOT, "README.md"), "utf8");
    const own = section(readme, "## Your own hosts");
    const stacks = blocks(own).filter((b) => b.lang === "yaml" && /^config:$/m.test(b.body) && b.body.replace(/^\s*#.*\n/gm, "").startsWith("config:"));
    const work = scratchName("gw-readme-own-");
    before(() => makeScratch(work));
    after(() => fs.rmSync(work, { recursive: true, force: true }));

    /** The stack file as the user has it: stack init's line, then the README's block with `hostKey` replaced where asked. */
    function render(name: string, hostKey?: string) {
        const dir = path.join(work, name);
        fs.mkdirSync(dir);
        let body = stacks[0].body;
        if (hostKey !== undefined) body = body.replace(/^( +hostKey: ).*$/m, (_m, lead: string) => `${lead}${hostKey}`);
        fs.writeFileSync(
            path.join(dir, `Pulumi.${name}.yaml`),
            `encryptionsalt: v1:AAAAAAAAAAA=:v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==\n${body}`,
        );
        const r = spawnSync(process.execPath, [RENDER, "--project-dir", dir, "--stack", name, "--out", path.join(dir, "out")], { encoding: "utf8" });
        return { status: r.status, stdout: r.stdout, stderr: r.stderr, out: path.join(dir, "out") };
    }

    it('comes right after "## The two commands", with one stack file', () => {
        const titles = [...readme.matchAll(/^## .*$/gm)].map((m) => m[0]);
        assert.strictEqual(titles[titles.indexOf("## The two commands") + 1], "## Your own hosts");
        assert.strictEqual(stacks.length, 1, "one ```yaml block that is a stack file (config: ...)");
        for (const step of [
            "pulumi login --local",
            "pulumi stack init",
            "--secrets-provider passphrase",
            "pulumi config set --secret",
            "npm run build",
            "npm run discover -- --ssh",
            "npm run render -- --stack mine --out",
            "--against",
            "pulumi preview --stack mine",
            "pulumi up --stack mine",
        ])
            assert.ok(own.includes(step), `the section says ${step}`);
    });

    it("its stack file renders as the README shows: one SSH host, two GPUs, datasets, the release by URL", () => {
        const r = render("readme");
        assert.strictEqual(r.status, 0, r.stderr);
        const shown = blocks(own).find((b) => b.lang === "" && b.body.startsWith("gpu-l4: "));
        assert.ok(shown, "the section shows what the render prints");
        assert.strictEqual(r.stdout.replace(`-> ${r.out}/`, "-> /tmp/mine/"), shown.body, "the render prints what the README shows");
        const manifest = JSON.parse(fs.readFileSync(path.join(r.out, "gpu-l4", "manifest.json"), "utf8")) as { tags: string[]; stoppedBeforeWorker?: string };
        assert.ok(manifest.tags.includes("gpu-count=2") && manifest.tags.includes("gpu-model=l4"), manifest.tags.join(" "));
        assert.strictEqual(manifest.stoppedBeforeWorker, undefined, "the release is given: the chain runs to the Concourse worker");
        const config = parse(stacks[0].body).config as Record<string, { datasets?: unknown; concourse?: { binary?: unknown } }>;
        assert.deepStrictEqual(config["gpu-workers:defaults"].datasets, { root: "/srv/datasets" });
        assert.ok("url" in (config["gpu-workers:defaults"].concourse!.binary as object));
        assert.strictEqual((config as Record<string, unknown>)["gpu-workers:hostSteps"], "builtin", "no plugin needed");
    });

    it("is examples/stacks/Pulumi.l4.yaml", () => {
        const example = parse(fs.readFileSync(path.join(PACKAGE_ROOT, "examples", "stacks", "Pulumi.l4.yaml"), "utf8")) as { config: unknown };
        assert.deepStrictEqual(parse(stacks[0].body).config, example.config);
    });

    it("holds the inventory block as `npm run discover` prints it for that host, indented as pasted", () => {
        const {
            name: _name,
            transport: _transport,
            ...declared
        } = (parse(stacks[0].body).config as Record<string, Record<string, unknown>[]>)["gpu-workers:hosts"][0];
        const inventory = inventorySchema.parse(declared);
        const result: DiscoveryResult = {
            vendors: ["nvidia"],
            found: {
                nvidia: {
                    vendor: "nvidia",
                    gpus: inventory.gpus.map((g) => ({ ...g, modelSource: "nvidia-smi", memoryKnown: true })),
                    nvswitches: 0,
                    tegra: false,
                },
            },
            inventory,
            driverVersion: inventory.driverVersion,
            cudaVersion: inventory.cudaVersion,
            sources: [],
            failedTools: [],
            problems: [],
            warnings: [],
        };
        const printed = renderInventoryYaml(result, "ssh root@10.0.0.41", { indent: PASTE_INDENT });
        assert.ok(stacks[0].body.includes(printed), `the stack holds, verbatim:\n${printed}`);
    });

    it("takes the host's .pub line with its comment, and ssh-keyscan's line without the host name", () => {
        assert.strictEqual(render("pub", PUB.ed25519.trim()).status, 0);
        const keyscan = render("keyscan", pinnedOf(PUB.ed25519));
        assert.strictEqual(keyscan.status, 0, keyscan.stderr);
    });

    it("refuses a key cut short, a type that is not the body's, and a known_hosts line, naming the key", () => {
        const [type, body] = pinnedOf(PUB.ed25519).split(" ");
        const cases: [string, string, RegExp][] = [
            ["short", `${type} ${body.slice(0, 40)} root@gpu-a.test`, /is not whole base64: cut short|is cut short/],
            ["mismatch", `ssh-rsa ${body}`, /the line says ssh-rsa, but its body is an ssh-ed25519 key/],
            ["known-hosts", `10.0.0.41 ${type} ${body}`, /a known_hosts line \(the host names "10\.0\.0\.41" before ssh-ed25519\)/],
        ];
        for (const [name, key, message] of cases) {
            const r = render(name, key);
            assert.strictEqual(r.status, 1, `${name}: ${r.stdout}${r.stderr}`);
            assert.match(r.stderr, new RegExp(`^invalid stack config \\(1 problem\\):\\n  - ${KEY_PATH.replace(/[[\].]/g, "\\$&")}: `), name);
            assert.match(r.stderr, message, name);
        }
    });
});
