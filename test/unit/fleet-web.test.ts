/** A fleet's web in a stack of its own, as the graph shows it: its stack exports what its racks read, and a rack's workers take it from there. */
import * as assert from "assert";
import * as pulumi from "@pulumi/pulumi";
import { LOCAL_ARTIFACTS } from "../../components/program";
import { CONCOURSE_PATHS } from "../../components/lib/links/concourse-worker/render";
import { parseStack } from "../../stacks/checks/stack";
import { buildFleet } from "../../stacks/resources/fleet";
import { HOST_KEY, TSA_KEY } from "../fixtures/ssh-keys/keys";
import { NO_GPU, stackWith } from "../fixtures/stacks/inventories";
import { recordGraph, settle } from "../support/pulumi-graph";

const WEB_TYPE = "gpu-workers:concourse:ConcourseWeb";

function fleetStack(fleetMember: object) {
    const raw = stackWith({ name: "a1", inventory: NO_GPU, extra: { rack: "ra" } }, { name: "b1", inventory: NO_GPU, extra: { rack: "rb" } });
    const { tsaHost: _host, tsaPublicKey: _key, ...concourse } = raw.defaults.concourse;
    return parseStack(
        {
            defaults: { concourse },
            hosts: raw.hosts,
            web: { name: "ci", transport: { ssh: { host: "10.0.0.5", privateKeySecret: "ci-key", hostKey: HOST_KEY } } },
            fleetMember: { ...fleetMember, fleet: "prod", projectDir: process.cwd() },
        },
        { baseDir: process.cwd(), artifacts: LOCAL_ARTIFACTS },
    );
}

describe("fleet: the web's stack and a rack's, as graphs", () => {
    it("the web's stack builds the web and no worker", async () => {
        const g = recordGraph();
        const fleet = buildFleet(fleetStack({ web: true }), () => pulumi.secret("key"));
        await settle(g);
        assert.strictEqual(g.ofType(WEB_TYPE).length, 1);
        assert.deepStrictEqual(fleet.workers, []);
    });

    it("a rack's workers take the TSA key from the web's stack and admit themselves on the web's host, with no web of their own", async () => {
        const g = recordGraph();
        const fleet = buildFleet(fleetStack({ rack: "ra", webStack: "prod-web" }), () => pulumi.secret("key"));
        await settle(g);
        assert.deepStrictEqual(g.ofType(WEB_TYPE), []);
        assert.deepStrictEqual(
            fleet.workers.map((w) => w.hostName),
            ["a1"],
        );
        // The key is the one the reference read (the mocks give a fleet web stack's output).
        assert.ok(g.placed(CONCOURSE_PATHS.tsaPublicKey, "a1").content.startsWith(TSA_KEY.split(" ").slice(0, 2).join(" ")));
        const admission = g.byName("a1-concourse-admission-tsa-admission");
        const connection = admission.inputs.connection as { host?: string; value?: { host: string } };
        assert.strictEqual(connection.value?.host ?? connection.host, "10.0.0.5", "admitted on the web's host, as the web's stack reaches it");
        assert.ok(g.dependsOn(g.byName("a1-concourse-concourse-worker"), admission), "the worker step waits for its admission");
    });
});
