/** The fleet's side of the stack config (racks, gpu-workers:fleet, a rack's own stack) and the driver's pure parts. */
import * as assert from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { parseStack } from "../../stacks/checks/stack";
import { planFleet } from "../../cli/fleet/members";
import { memberStackFile, StackFile } from "../../cli/fleet/stack-file";
import { deadLockHolders } from "../../cli/fleet/member";
import { movesOf } from "../../cli/fleet/moves";
import { previewSummary } from "../../cli/fleet/preview-summary";
import { failedRacks, readRecord, writeRecord } from "../../cli/fleet/record";
import { parseArgs } from "../../cli/fleet";
import { HOST_KEY } from "../fixtures/ssh-keys/keys";
import { NO_GPU, stackWith } from "../fixtures/stacks/inventories";
import { problemsOf } from "../support/stack-problems";

const threeHosts = () =>
    stackWith(
        { name: "a1", inventory: NO_GPU, extra: { rack: "ra" } },
        { name: "b1", inventory: NO_GPU, extra: { rack: "rb" } },
        { name: "d1", inventory: NO_GPU },
    );

/** A stack file as the CLI writes it: the passphrase's salt, and each key namespaced, objects as they are. */
function asStackFile(raw: Record<string, unknown>, settings: Record<string, unknown> = { encryptionsalt: "v1:c2FsdA==:v1:bm9uY2U=:Y2lwaGVy" }): StackFile {
    return { ...settings, config: Object.fromEntries(Object.entries(raw).map(([k, v]) => [`gpu-workers:${k}`, v])) };
}

/** The stack config as the engine hands it over: each value as text, objects as JSON. */
function asConfig(raw: Record<string, unknown>) {
    return Object.fromEntries(Object.entries(raw).map(([k, v]) => [`gpu-workers:${k}`, { value: typeof v === "string" ? v : JSON.stringify(v) }]));
}

describe("fleet: racks in the stack config", () => {
    it("a plain stack holds every host, whatever its rack", () => {
        assert.deepStrictEqual(
            parseStack(threeHosts()).hosts.map((h) => h.name),
            ["a1", "b1", "d1"],
        );
    });

    it("a rack's own stack holds that rack's hosts alone; a host naming none is in rack default", () => {
        const member = (rack: string) => parseStack({ ...threeHosts(), fleetMember: { fleet: "prod", rack, projectDir: "/srv/project" } });
        assert.deepStrictEqual(
            member("rb").hosts.map((h) => h.name),
            ["b1"],
        );
        assert.deepStrictEqual(
            member("default").hosts.map((h) => h.name),
            ["d1"],
        );
        assert.deepStrictEqual(member("rb").plans.hosts.length, 1);
        assert.deepStrictEqual(member("nowhere").hosts, []);
    });

    it("the driver checks the whole config before any rack runs: a duplicate name in another rack is refused", () => {
        const raw = threeHosts();
        raw.hosts[2].name = "a1";
        assert.throws(() => planFleet(asConfig(raw), "prod", "/p"), /hosts\[2\]\.name/);
    });

    it("refuses a rack that is no DNS label, bad fleet options and a bad fleetMember, each at its path", () => {
        const raw = threeHosts();
        (raw.hosts[0] as Record<string, unknown>).rack = "Rack_A";
        const problems = problemsOf({
            ...raw,
            fleet: { parallel: 0, skipCheckpoints: "yes", websTack: "w" },
            fleetMember: { fleet: "prod", rack: "ra", projectDir: "rel" },
        });
        assert.deepStrictEqual(
            problems.sort(),
            [
                "fleet: unknown key websTack (gpu-workers:fleet in the stack config)",
                "fleet.parallel: expected a whole number of racks, 1 or more (gpu-workers:fleet in the stack config)",
                "fleet.skipCheckpoints: expected true or false (gpu-workers:fleet in the stack config)",
                "fleetMember.projectDir: expected an absolute path (gpu-workers:fleetMember is set by npm run fleet in a member stack)",
                "hosts[0].rack: expected lower-case letters, digits and dashes (a DNS label), e.g. rack-a",
            ].sort(),
        );
    });

    it("a member stack refuses Kubernetes clusters, which a plain up converges", () => {
        const problems = problemsOf({ ...threeHosts(), kubernetes: { clusters: [] }, fleetMember: { fleet: "prod", rack: "ra", projectDir: "/p" } });
        assert.ok(
            problems.some((p) => p.startsWith("kubernetes: npm run fleet does not drive")),
            problems.join("\n"),
        );
    });

    it("planFleet lists the racks in the order their first host comes, with their stacks and hosts", () => {
        const plan = planFleet(asConfig({ ...threeHosts(), fleet: { parallel: 2 } }), "prod", "/srv/project");
        assert.deepStrictEqual(plan.racks, [
            { name: "ra", stack: "prod-ra", hosts: ["a1"] },
            { name: "rb", stack: "prod-rb", hosts: ["b1"] },
            { name: "default", stack: "prod-default", hosts: ["d1"] },
        ]);
        assert.deepStrictEqual(plan.options, { parallel: 2, skipCheckpoints: false });
        assert.strictEqual(plan.web, undefined);
    });

    it("a rack's config names it and the project and holds its hosts alone; an emptied rack is let through with none", () => {
        const file = memberStackFile(
            asStackFile(threeHosts()),
            { name: "ra", stack: "p-ra", hosts: ["a1"] },
            { stack: "p", projectDir: "/srv/project", webStack: "p-web" },
            "gpu-workers",
        );
        assert.deepStrictEqual(JSON.parse(file.config!["gpu-workers:fleetMember"] as string), { rack: "ra", fleet: "p", projectDir: "/srv/project" });
        assert.deepStrictEqual(
            (file.config!["gpu-workers:hosts"] as { name: string }[]).map((h) => h.name),
            ["a1"],
        );
        assert.strictEqual(file.config!["gpu-workers:allowNoHosts"], undefined);
        const emptied = memberStackFile(
            asStackFile(threeHosts()),
            { name: "gone", stack: "p-gone", hosts: [] },
            { stack: "p", projectDir: "/p", webStack: "p-web" },
            "gpu-workers",
        );
        assert.deepStrictEqual([emptied.config!["gpu-workers:hosts"], emptied.config!["gpu-workers:allowNoHosts"]], [[], true]);
    });

    it("a rack's file keeps the fleet's secrets settings and secure values as written, its hosts in the form given (a list, or JSON text, or a bare key of ours)", () => {
        const secure = { secure: "v1:bm9uY2U=:Y2lwaGVydGV4dA==" };
        const fleet = asStackFile({ ...threeHosts(), "a1-key": secure }, { secretsprovider: "awskms://alias/ci", encryptedkey: "ZW5jcnlwdGVk" });
        fleet.environment = ["ci/ssh"];
        const rack = { name: "rb", stack: "p-rb", hosts: ["b1"] };
        const at = { stack: "p", projectDir: "/p", webStack: "p-web" };
        const file = memberStackFile(fleet, rack, at, "gpu-workers");
        assert.deepStrictEqual(
            [file.secretsprovider, file.encryptedkey, file.environment, file.config!["gpu-workers:a1-key"]],
            ["awskms://alias/ci", "ZW5jcnlwdGVk", ["ci/ssh"], secure],
        );
        const asText = memberStackFile(
            { ...fleet, config: { ...fleet.config, "gpu-workers:hosts": JSON.stringify(threeHosts().hosts) } },
            rack,
            at,
            "gpu-workers",
        );
        assert.deepStrictEqual(
            JSON.parse(asText.config!["gpu-workers:hosts"] as string).map((h: { name: string }) => h.name),
            ["b1"],
        );
        // In a project named as our namespace, a bare key is ours: it is replaced, not left beside the member's.
        const { "gpu-workers:hosts": hosts, ...others } = fleet.config!;
        const bare = memberStackFile({ ...fleet, config: { ...others, hosts } }, rack, at, "gpu-workers");
        assert.deepStrictEqual([bare.config!.hosts, (bare.config!["gpu-workers:hosts"] as { name: string }[]).map((h) => h.name)], [undefined, ["b1"]]);
        const elsewhere = memberStackFile({ ...fleet, config: { ...others, hosts } }, rack, at, "consumer");
        assert.deepStrictEqual(elsewhere.config!.hosts, hosts, "another project's own key is left as it is");
    });

    it("refuses secure values whose key the stack file does not hold (a backend's own secrets manager)", () => {
        const fleet = asStackFile({ ...threeHosts(), "a1-key": { secure: "AAABAK1RUr2bYTCa" } }, {});
        assert.throws(
            () => memberStackFile(fleet, { name: "ra", stack: "p-ra", hosts: ["a1"] }, { stack: "p", projectDir: "/p", webStack: "p-web" }, "gpu-workers"),
            /stack p: its secrets are encrypted by its backend's own key/,
        );
        assert.doesNotThrow(() =>
            memberStackFile(
                asStackFile(threeHosts(), {}),
                { name: "ra", stack: "p-ra", hosts: ["a1"] },
                { stack: "p", projectDir: "/p", webStack: "p-web" },
                "gpu-workers",
            ),
        );
    });
});

describe("fleet: the web node in a stack of its own", () => {
    const withWeb = (fleet?: object) => ({
        ...threeHosts(),
        web: { name: "ci", transport: { ssh: { host: "10.0.0.5", privateKeySecret: "ci-key", hostKey: HOST_KEY } } },
        ...(fleet ? { fleet } : {}),
    });

    it("goes first as the web's stack, <stack>-web unless fleet.webStack names it", () => {
        assert.deepStrictEqual(planFleet(asConfig(withWeb()), "prod", "/p").web, { name: "web", stack: "prod-web", hosts: ["ci"], web: true });
        assert.strictEqual(planFleet(asConfig(withWeb({ webStack: "ci-web" })), "prod", "/p").web?.stack, "ci-web");
    });

    it("the web's stack holds the web alone; a rack's holds its hosts and takes the web from the web's stack", () => {
        const web = parseStack({ ...withWeb(), fleetMember: { fleet: "prod", web: true, projectDir: "/p" } });
        assert.deepStrictEqual([web.hosts, web.web?.name, web.plans.web !== undefined], [[], "ci", true]);
        const rack = parseStack({ ...withWeb(), fleetMember: { fleet: "prod", rack: "ra", webStack: "prod-web", projectDir: "/p" } });
        assert.deepStrictEqual([rack.hosts.map((h) => h.name), rack.member?.webStack], [["a1"], "prod-web"]);
        const at = { stack: "prod", projectDir: "/p", webStack: "prod-web" };
        const rackFile = memberStackFile(asStackFile(withWeb()), { name: "ra", stack: "prod-ra", hosts: ["a1"] }, at, "gpu-workers");
        assert.deepStrictEqual(JSON.parse(rackFile.config!["gpu-workers:fleetMember"] as string), {
            rack: "ra",
            webStack: "prod-web",
            fleet: "prod",
            projectDir: "/p",
        });
        const webFile = memberStackFile(asStackFile(withWeb()), { name: "web", stack: "prod-web", hosts: ["ci"], web: true }, at, "gpu-workers");
        assert.deepStrictEqual(JSON.parse(webFile.config!["gpu-workers:fleetMember"] as string), { web: true, fleet: "prod", projectDir: "/p" });
        assert.deepStrictEqual(webFile.config!["gpu-workers:hosts"], []);
    });

    it("refuses a rack named web, a web stack that is a rack's, a rack's stack not told where the web is, and a member that is both", () => {
        const raw = withWeb();
        (raw.hosts[0] as Record<string, unknown>).rack = "web";
        assert.ok(problemsOf(raw).includes("hosts[0].rack: web is the fleet's part for the web node's own stack; name the rack otherwise"));
        assert.throws(() => planFleet(asConfig(withWeb({ webStack: "prod-ra" })), "prod", "/p"), /fleet\.webStack: prod-ra is rack ra's stack/);
        assert.ok(
            problemsOf({ ...withWeb(), fleetMember: { fleet: "prod", rack: "ra", projectDir: "/p" } }).some((p) =>
                p.startsWith("fleetMember.webStack: the stack has a web node"),
            ),
        );
        assert.ok(
            problemsOf({ ...withWeb(), fleetMember: { fleet: "prod", rack: "ra", web: true, projectDir: "/p" } }).some((p) =>
                p.startsWith("fleetMember: expected rack"),
            ),
        );
    });
});

describe("fleet: the driver's parts", () => {
    it("parseArgs refuses what it cannot run, naming it", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-args-"));
        fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: x\nruntime: nodejs\n");
        assert.throws(() => parseArgs(["apply", "--stack", "s"]), /expected an operation \(up, preview, destroy, refresh, status\), got apply/);
        assert.throws(() => parseArgs(["up"]), /--stack NAME is required/);
        assert.throws(() => parseArgs(["up", "--stack", "s", "--expect-no-changes", "--project-dir", dir]), /--expect-no-changes is for preview/);
        assert.throws(() => parseArgs(["up", "--stack", "s", "--racks", "a", "--failed", "--project-dir", dir]), /not both/);
        assert.throws(() => parseArgs(["up", "--stack", "s", "--project-dir", "/nonexistent"]), /no Pulumi.yaml in \/nonexistent/);
        assert.deepStrictEqual(parseArgs(["preview", "--stack", "s", "--racks", "a,b", "--project-dir", dir]).racks, ["a", "b"]);
        fs.rmSync(dir, { recursive: true });
    });

    it("a host whose state is in another rack's stack moves there; one in its own rack does not", () => {
        const state = (stack: string, hosts: string[]) => ({
            version: 3,
            deployment: {
                resources: [
                    { urn: `urn:pulumi:${stack}::gpu-workers::pulumi:pulumi:Stack::gpu-workers-${stack}`, type: "pulumi:pulumi:Stack" },
                    ...hosts.map((h) => ({
                        urn: `urn:pulumi:${stack}::gpu-workers::gpu-workers:worker:GpuWorker::${h}`,
                        type: "gpu-workers:worker:GpuWorker",
                        parent: `urn:pulumi:${stack}::gpu-workers::pulumi:pulumi:Stack::gpu-workers-${stack}`,
                    })),
                    {
                        urn: `urn:pulumi:${stack}::gpu-workers::gpu-workers:worker:GpuWorker$gpu-workers:host:GpuHost::x1-host`,
                        type: "gpu-workers:host:GpuHost",
                        parent: "child",
                    },
                ],
            },
        });
        const racks = [
            { name: "ra", stack: "p-ra", hosts: ["a1", "x1"] },
            { name: "rb", stack: "p-rb", hosts: ["b1"] },
        ];
        assert.deepStrictEqual(
            movesOf(
                racks,
                new Map([
                    ["p-ra", state("p-ra", ["a1"])],
                    ["p-rb", state("p-rb", ["b1", "x1"])],
                ]),
            ),
            [{ host: "x1", urn: "urn:pulumi:p-rb::gpu-workers::gpu-workers:worker:GpuWorker::x1", from: "p-rb", to: "p-ra" }],
        );
        // A host a plain up converged in the fleet's own stack moves into its rack's.
        assert.deepStrictEqual(movesOf(racks, new Map([["p", state("p", ["b1"])]])), [
            { host: "b1", urn: "urn:pulumi:p::gpu-workers::gpu-workers:worker:GpuWorker::b1", from: "p", to: "p-rb" },
        ]);
    });

    it("the preview summary groups each rack's changes by host, the longest host name first", () => {
        const lines = previewSummary([
            {
                rack: { name: "ra", stack: "p-ra", hosts: ["gpu", "gpu-b"] },
                planned: [{ op: "update", urn: "urn:pulumi:p-ra::gw::t::gpu-b-files", type: "t", diffs: ["files"] }],
            },
            { rack: { name: "rb", stack: "p-rb", hosts: ["c"] }, planned: [] },
        ]);
        assert.deepStrictEqual(lines, ["rack ra (p-ra): 1 update", "  gpu-b: 1 update", "    update   gpu-b-files  [files]", "rack rb (p-rb): no changes"]);
    });

    it("a lock is cleared only where every holder is a process of this machine that is gone", () => {
        const gone = 2 ** 22 + 12345; // above Linux's largest pid
        const msg = (host: string, pid: number) =>
            `the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file with \`pulumi cancel\`.\n  file:///x/locks/a.json: created by root@${host} (pid ${pid}) at 2026-12-03T00:00:00Z`;
        assert.deepStrictEqual(deadLockHolders(msg("here", gone), "here"), [gone]);
        assert.strictEqual(deadLockHolders(msg("here", process.pid), "here"), null, "a live holder");
        assert.strictEqual(deadLockHolders(msg("elsewhere", gone), "here"), null, "another machine's");
        assert.strictEqual(deadLockHolders("error: something else", "here"), null);
    });

    it("the last run's record keeps each rack's result per operation, for --failed", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-record-"));
        fs.mkdirSync(path.join(dir, ".fleet", "s"), { recursive: true });
        writeRecord(dir, "s", "up", { ra: { ok: true }, rb: { ok: false } });
        writeRecord(dir, "s", "preview", { ra: { ok: false } });
        assert.deepStrictEqual(failedRacks(readRecord(dir, "s", "up")), ["rb"]);
        writeRecord(dir, "s", "up", { rb: { ok: true } });
        assert.deepStrictEqual(failedRacks(readRecord(dir, "s", "up")), []);
        assert.deepStrictEqual(failedRacks(readRecord(dir, "s", "preview")), ["ra"]);
        fs.rmSync(dir, { recursive: true });
    });
});
