/**
 * The LXD provider without a daemon: what it refuses before talking to LXD, how it diffs, how
 * its client reads LXD's answers (from a small stand-in server on a unix socket), and that the
 * provider module held in the state (its `__provider` text) loads and runs from another folder.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as http from "http";
import * as os from "os";
import * as path from "path";
import { execFileSync } from "child_process";
import { LxdApiError, LxdClient } from "../../components/providers/lxd/client";
import * as ops from "../../components/providers/lxd/instance-ops";
import { makeLazyProvider, providerModule } from "../../components/providers/lazy-provider";
import { lxdInstanceProvider } from "../../components/providers/lxd/instance-provider";
import { loadedProvider } from "../support/provider-module";
import { LxdValidationError } from "../../components/lib/lxd/validate";
import type { LxdInstanceSpec } from "../../components/lib/lxd/types";

/** The LXD provider as the provider process runs it. */
const lxdOps = loadedProvider(lxdInstanceProvider);

const REPO = path.resolve(__dirname, "../../..");

/** A stand-in for LXD on a unix socket: answers from `routes`, records every request. */
class FakeLxd {
    readonly socket: string;
    readonly seen: string[] = [];
    private server?: http.Server;
    constructor(private readonly routes: Record<string, (body: string) => [number, unknown]>) {
        this.socket = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gw-fake-lxd-")), "unix.socket");
    }
    async start(): Promise<void> {
        this.server = http.createServer((req, res) => {
            const chunks: Buffer[] = [];
            req.on("data", (c) => chunks.push(c));
            req.on("end", () => {
                const key = `${req.method} ${req.url}`;
                this.seen.push(key);
                const route = this.routes[key];
                const [status, body] = route ? route(Buffer.concat(chunks).toString()) : [404, { type: "error", error_code: 404, error: "not found" }];
                res.writeHead(status, { "Content-Type": "application/json", ETag: '"etag-1"' });
                res.end(JSON.stringify(body));
            });
        });
        await new Promise<void>((r) => this.server!.listen(this.socket, r));
    }
    async stop(): Promise<void> {
        await new Promise<void>((r) => this.server?.close(() => r()));
        fs.rmSync(path.dirname(this.socket), { recursive: true, force: true });
    }
}

const lxdError = (code: number, error: string): [number, unknown] => [
    code,
    { type: "error", status: "", status_code: 0, error_code: code, error, metadata: null },
];
const asyncOp = (id: string): [number, unknown] => [
    202,
    { type: "async", status: "Operation created", status_code: 100, operation: `/1.0/operations/${id}`, metadata: { id } },
];
const opDone = (status_code: number, err = "", metadata: unknown = null): [number, unknown] => [
    200,
    {
        type: "sync",
        status: "Success",
        status_code: 200,
        metadata: { id: "x", status: status_code === 200 ? "Success" : "Failure", status_code, err, metadata },
    },
];

const good: LxdInstanceSpec = { server: { socket: "/nonexistent/unix.socket" }, name: "gpu-a", image: "gpu-workers/busybox" };
const refusingFactory: ops.LxdApiFactory = () => {
    throw new Error("LXD must not be called");
};

describe("LXD provider: refused before any call to LXD", () => {
    it("an unknown device type", async () => {
        await assert.rejects(ops.create({ ...good, devices: { gpu0: { type: "gpus" } } }, refusingFactory), (e: Error) => {
            assert.ok(e instanceof LxdValidationError, String(e));
            assert.match(e.message, /^lxd instance gpu-a: device gpu0: unknown device type "gpus"/);
            return true;
        });
    });

    it("a CDI id of the wrong shape, on create and on update", async () => {
        const bad = { ...good, devices: { gpu0: { type: "gpu", id: "nvidia.com/gpu" } } };
        const expected = 'lxd instance gpu-a: device gpu0: id "nvidia.com/gpu" is not a CDI id (expected vendor.com/class=name)';
        await assert.rejects(ops.create(bad, refusingFactory), { message: expected });
        await assert.rejects(ops.update("gpu-a", good, bad, refusingFactory), { message: expected });
    });

    it("the provider object itself sends nothing to the server", async () => {
        const fake = new FakeLxd({});
        await fake.start();
        try {
            await assert.rejects(
                lxdOps.create({ ...good, server: { socket: fake.socket }, devices: { gpu0: { type: "gpu", id: "gpu=0" } } }),
                /device gpu0: id "gpu=0" is not a CDI id/,
            );
            assert.deepStrictEqual(fake.seen, []);
        } finally {
            await fake.stop();
        }
    });

    it("check reports failures by property, for preview", async () => {
        const result = await lxdOps.check({}, { ...good, image: "", devices: { x: { type: "disk", source: "/srv" } } });
        assert.deepStrictEqual(result.failures, [
            { property: "image", reason: "lxd instance gpu-a: image is empty (expected an image alias or fingerprint on the server)" },
            { property: "devices", reason: "lxd instance gpu-a: device x: needs path (where it appears inside the instance)" },
        ]);
        const ok = await lxdOps.check({}, { ...good, config: { "security.nesting": true as unknown as string } });
        assert.deepStrictEqual(ok.failures, []);
        assert.strictEqual(ok.inputs.config["security.nesting"], "true", "booleans become LXD's strings");
        assert.deepStrictEqual(ok.inputs.profiles, ["default"]);
    });
});

describe("LXD provider: diff", () => {
    const olds = {
        ...good,
        type: "container",
        profiles: ["default"],
        config: { "security.nesting": "true" },
        devices: { d: { type: "disk", source: "/a", path: "/a" } },
        files: [],
        running: true,
        status: "Running",
    };
    const news = { ...good, config: { "security.nesting": "true" }, devices: { d: { type: "disk", source: "/a", path: "/a" } } };

    it("nothing changed: no changes", async () => {
        assert.deepStrictEqual(await lxdOps.diff("gpu-a", olds, news), {
            changes: false,
            replaces: [],
            deleteBeforeReplace: false,
            stables: ["name"],
        });
    });
    it("config, devices, profiles: updated in place", async () => {
        for (const change of [{ config: { "security.nesting": "false" } }, { devices: {} }, { profiles: ["default", "gpu"] }]) {
            const d = await lxdOps.diff("gpu-a", olds, { ...news, ...change });
            assert.strictEqual(d.changes, true);
            assert.deepStrictEqual(d.replaces, [], JSON.stringify(change));
        }
    });
    it("a device removed by hand (seen by refresh) is a change to put back", async () => {
        const refreshed = { ...olds, devices: {} };
        assert.deepStrictEqual((await lxdOps.diff("gpu-a", refreshed, news)).changes, true);
    });
    it("user-data: a new one replaces the instance (cloud-init reads it on the first boot only)", async () => {
        const vm = { ...olds, type: "virtual-machine", userData: "#cloud-config\n# keys A\n" };
        assert.deepStrictEqual((await lxdOps.diff("gpu-a", vm, { ...news, type: "virtual-machine", userData: "#cloud-config\n# keys A\n" })).changes, false);
        const d = await lxdOps.diff("gpu-a", vm, { ...news, type: "virtual-machine", userData: "#cloud-config\n# keys B\n" });
        assert.deepStrictEqual(d.replaces, ["userData"]);
    });
    it("image, type, name: replaced; same name means delete first", async () => {
        const image = await lxdOps.diff("gpu-a", olds, { ...news, image: "gpu-workers/debian-12" });
        assert.deepStrictEqual(image.replaces, ["image"]);
        assert.strictEqual(image.deleteBeforeReplace, true);
        assert.deepStrictEqual((await lxdOps.diff("gpu-a", olds, { ...news, type: "virtual-machine" })).replaces, ["type"]);
        const renamed = await lxdOps.diff("gpu-a", olds, { ...news, name: "gpu-b" });
        assert.deepStrictEqual(renamed.replaces, ["name"]);
        assert.strictEqual(renamed.deleteBeforeReplace, false);
    });
});

describe("LXD client: LXD's answers", () => {
    let fake: FakeLxd;
    let slowPolls = 0;
    before(async () => {
        fake = new FakeLxd({
            "GET /1.0/instances/gone": () => lxdError(404, "Instance not found"),
            "GET /1.0/instances/broken": () => lxdError(500, "Failed to load instance: database is locked"),
            "POST /1.0/instances": () => asyncOp("op-create"),
            "GET /1.0/operations/op-create/wait?timeout=30": () => opDone(400, "Failed creating instance record: Invalid device type bogus"),
            "PUT /1.0/instances/gpu-a/state": () => asyncOp("op-start"),
            "GET /1.0/operations/op-start/wait?timeout=30": () => opDone(200),
            "POST /1.0/instances/gpu-a/exec": () => asyncOp("op-exec"),
            "GET /1.0/operations/op-exec/wait?timeout=30": () => opDone(200, "", { return: 3, output: {} }),
            "GET /1.0/instances/gpu-a?project=team": () => [200, { type: "sync", metadata: { name: "gpu-a", type: "container", status: "Stopped" } }],
            "GET /1.0/instances/bare": () => [
                200,
                { type: "sync", metadata: { name: "bare", type: "virtual-machine", status: "Stopped", profiles: null, config: null, devices: null, x: 1 } },
            ],
            "GET /1.0/instances/odd": () => [200, { type: "sync", metadata: { name: "odd", type: "container", status: 3, config: { "limits.cpu": 2 } } }],
            "GET /1.0/instances/list": () => [200, { type: "sync", metadata: [] }],
            "PUT /1.0/instances/bad-op/state": () => asyncOp("op-bad"),
            "GET /1.0/operations/op-bad/wait?timeout=30": () => [200, { type: "sync", metadata: { id: "op-bad", status: "Running" } }],
            "GET /1.0/instances/taken": () => [200, { type: "sync", metadata: { name: "taken", type: "container", status: "Running", config: {} } }],
            // Newer LXD: a wait that times out is an error while the operation runs on.
            "PUT /1.0/instances/slow/state": () => asyncOp("op-slow"),
            "GET /1.0/operations/op-slow/wait?timeout=30": () => lxdError(504, "context deadline exceeded"),
            "GET /1.0/operations/op-slow": () =>
                slowPolls++ < 1 ? [200, { type: "sync", metadata: { id: "op-slow", status: "Running", status_code: 103, err: "" } }] : opDone(200),
        });
        await fake.start();
    });
    after(() => fake.stop());

    it("a missing instance reads as undefined; other errors keep LXD's message", async () => {
        const client = new LxdClient({ socket: fake.socket });
        assert.strictEqual(await client.getInstance("gone"), undefined);
        await assert.rejects(
            client.getInstance("broken"),
            (e: Error) => e instanceof LxdApiError && e.statusCode === 500 && e.message === "Failed to load instance: database is locked",
        );
    });

    it("a failed background operation throws its err text", async () => {
        await assert.rejects(new LxdClient({ socket: fake.socket }).createInstance({ name: "x" }), {
            message: "Failed creating instance record: Invalid device type bogus",
        });
    });

    it("a successful operation is awaited; exec returns the exit code", async () => {
        const client = new LxdClient({ socket: fake.socket });
        await client.setInstanceState("gpu-a", "start");
        assert.deepStrictEqual(await client.exec("gpu-a", ["false"]), { exitCode: 3, stdout: "", stderr: "" });
        assert.ok(fake.seen.includes("GET /1.0/operations/op-start/wait?timeout=30"));
    });

    it("a wait that times out as an error (newer LXD) is not a failure: the operation is asked again", async () => {
        await new LxdClient({ socket: fake.socket }).setInstanceState("slow", "start");
        assert.strictEqual(fake.seen.filter((r) => r === "GET /1.0/operations/op-slow/wait?timeout=30").length, 2);
    });

    it("the project goes on every request; the etag is returned", async () => {
        const got = await new LxdClient({ socket: fake.socket, project: "team" }).getInstance("gpu-a");
        assert.deepStrictEqual(got, { instance: { name: "gpu-a", type: "container", status: "Stopped" }, etag: "etag-1" });
    });

    it("an instance is checked for the fields the provider reads, and kept whole (LXD's nulls for empty lists and maps pass)", async () => {
        const client = new LxdClient({ socket: fake.socket });
        assert.deepStrictEqual((await client.getInstance("bare"))?.instance, {
            name: "bare",
            type: "virtual-machine",
            status: "Stopped",
            profiles: null,
            config: null,
            devices: null,
            x: 1,
        });
        await assert.rejects(client.getInstance("odd"), {
            message: "lxd: GET /1.0/instances/odd: unexpected answer from LXD: the instance's status, config are missing or of another type",
        });
        await assert.rejects(client.getInstance("list"), {
            message: "lxd: GET /1.0/instances/list: unexpected answer from LXD: the instance is not an object",
        });
    });

    it("an operation without its status code is refused, not waited on until the timeout", async () => {
        await assert.rejects(new LxdClient({ socket: fake.socket }).setInstanceState("bad-op", "start", { timeout: 1 }), {
            message: "lxd: GET /1.0/operations/op-bad/wait?timeout=30: unexpected answer from LXD: the operation lacks its id, status, status_code or err",
        });
    });

    it("an unreachable daemon says where it looked", async () => {
        await assert.rejects(
            new LxdClient({ socket: "/nonexistent/unix.socket" }).getInstance("x"),
            /cannot reach LXD at \/nonexistent\/unix.socket \(ENOENT\)/,
        );
    });

    it("an instance of the name that exists already (a renamed host's) is neither taken over nor touched: the error says to give renamedFrom", async () => {
        const before = fake.seen.length;
        await assert.rejects(ops.create({ ...good, name: "taken", server: { socket: fake.socket } }), {
            message: /^lxd: instance taken already exists on the server, .*renamedFrom: <its old name>/,
        });
        assert.deepStrictEqual(fake.seen.slice(before), ["GET /1.0/instances/taken"], "only asked");
    });

    it("an ops error names the instance, the step and carries LXD's message", async () => {
        await assert.rejects(ops.create({ ...good, server: { socket: fake.socket } }), {
            message: "lxd: instance gpu-a: create failed: Failed creating instance record: Invalid device type bogus (image gpu-workers/busybox)",
        });
    });
});

describe("LXD provider: runs from the module text in its state", function () {
    this.timeout(60_000);

    /** Runs the provider module's check in a new node process in `cwd`, as the engine's provider process would. */
    function checkInChild(module: string, cwd: string): unknown {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gw-provider-"));
        try {
            fs.writeFileSync(path.join(dir, "provider.js"), module);
            const runner = `
                const { loadedProvider } = require(${JSON.stringify(require.resolve("../support/provider-module"))});
                const provider = loadedProvider(require("fs").readFileSync(${JSON.stringify(path.join(dir, "provider.js"))}, "utf8"));
                provider.check({}, { server: {}, name: "gpu-a", image: "x", devices: { gpu0: { type: "gpu", id: "nvidia.com/gpu" } } })
                    .then((r) => console.log(JSON.stringify(r.failures)), (e) => { console.error(e); process.exit(1); });`;
            return JSON.parse(execFileSync(process.execPath, ["-e", runner], { cwd, encoding: "utf8" }));
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    }

    const expected = [{ property: "devices", reason: 'lxd instance gpu-a: device gpu0: id "nvidia.com/gpu" is not a CDI id (expected vendor.com/class=name)' }];

    it("holds only where its implementation is, not modules or clients", () => {
        assert.ok(lxdInstanceProvider.length < 4000, `the provider module is ${lxdInstanceProvider.length} bytes`);
        assert.doesNotMatch(lxdInstanceProvider, /class LxdClient|http\.request|socketPath/);
    });

    it("runs from the program folder and from any other folder (compiled JavaScript)", () => {
        assert.deepStrictEqual(checkInChild(lxdInstanceProvider, REPO), expected);
        assert.deepStrictEqual(checkInChild(lxdInstanceProvider, os.tmpdir()), expected);
    });

    it("runs when the program was TypeScript run by ts-node (no loader in the provider process)", () => {
        const tsProvider = providerModule("lxd-instance", path.join(REPO, "components/providers/registry"), "components/providers/registry", "lxd");
        assert.deepStrictEqual(checkInChild(tsProvider, os.tmpdir()), expected);
    });

    it("says where it looked when the implementation is gone", async () => {
        const lost = makeLazyProvider("lxd-instance", "/nonexistent/registry", "nowhere/registry", "lxd");
        await assert.rejects(lost.check!({}, {}), /lxd provider: cannot find its implementation at .*nowhere\/registry or \/nonexistent\/registry/);
    });
});
