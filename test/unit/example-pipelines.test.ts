/**
 * examples/gpu-tags-pipeline.yml asks only for tags that the render computes for the workers of
 * examples/stacks/Pulumi.hgx.yaml, and every step lands on one of them: a change of the tags'
 * computation, or of the example stack, that leaves a step with no worker fails here. The
 * README's list of further reading links the pipeline. examples/gpu-allocation-pipeline.yml's
 * steps land on the worker its header names: four GPUs handed out per task, mode exclusive.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { parse } from "yaml";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { renderStack } from "../../stacks/render/offline-render";
import { HGX_H100_8X, stackWith } from "../fixtures/stacks/inventories";
import { GOLDEN_ARTIFACTS, goldenStacks, renderGolden } from "../support/golden-stacks";

const PIPELINE = "examples/gpu-tags-pipeline.yml";

interface TaggedStep {
    /** job/step, for the messages. */
    where: string;
    tags: string[];
}

/** Every step of a pipeline that names a task, a get or a put, with its tags, through in_parallel, do, try and the hooks. */
function taggedSteps(file: string): TaggedStep[] {
    const pipeline: unknown = parse(fs.readFileSync(path.join(PACKAGE_ROOT, file), "utf8"));
    const jobs = (pipeline as { jobs?: unknown }).jobs;
    assert.ok(Array.isArray(jobs) && jobs.length > 0, `${file}: no jobs`);
    const steps: TaggedStep[] = [];
    const visit = (node: unknown, job: string): void => {
        if (Array.isArray(node)) return node.forEach((n) => visit(n, job));
        if (typeof node !== "object" || node === null) return;
        const step = node as Record<string, unknown>;
        const name = step.task ?? step.get ?? step.put;
        if (typeof name === "string") {
            const tags = step.tags ?? [];
            assert.ok(Array.isArray(tags) && tags.every((t) => typeof t === "string"), `${file}: ${job}/${name}: tags is not a list of strings`);
            steps.push({ where: `${job}/${name}`, tags });
        }
        for (const [key, value] of Object.entries(step)) if (key !== "config") visit(value, job);
    };
    for (const job of jobs as { name?: string; plan?: unknown }[]) visit(job.plan, job.name ?? "(a job without a name)");
    return steps;
}

/** A tag the render computes from the GPUs, not one of the stack's extra tags: `gpu` and every `gpu-…` (docs/stack-config.md). */
const computed = (tag: string) => tag === "gpu" || tag.startsWith("gpu-");

/** What keeps a step from any worker: no tags, a tag not computed, or no worker with all of them. */
function stepProblems(steps: TaggedStep[], workers: { host: string; tags: string[] }[]): string[] {
    return steps.flatMap((s) => {
        if (s.tags.length === 0) return [`${s.where}: asks for no tags`];
        const notComputed = s.tags.filter((t) => !computed(t));
        if (notComputed.length > 0) return [`${s.where}: ${notComputed.join(", ")} is not a computed tag`];
        if (workers.some((w) => s.tags.every((t) => w.tags.includes(t)))) return [];
        const closest = workers.map((w) => `${w.host} lacks ${s.tags.filter((t) => !w.tags.includes(t)).join(", ")}`);
        return [`${s.where}: no worker carries all of ${s.tags.join(", ")} (${closest.join("; ")})`];
    });
}

describe(`${PIPELINE}: the computed tags of the example stack`, () => {
    const steps = taggedSteps(PIPELINE);
    const stack = goldenStacks().find((s) => s.name === "example-hgx");
    assert.ok(stack, "examples/stacks/Pulumi.hgx.yaml is a golden stack");
    const workers = renderGolden(stack)
        .map((h) => h.manifest)
        .filter((m) => m.tags.length > 0);

    it("the example stack has workers with computed tags, and the pipeline steps that ask for them", () => {
        assert.deepStrictEqual(
            workers.map((w) => w.host),
            ["hgx-a-w1", "hgx-a-w2"],
        );
        assert.ok(steps.length >= 2, `${PIPELINE}: its steps`);
    });

    it("every step asks only for computed tags, and some worker of the stack carries all of them", () => {
        assert.deepStrictEqual(stepProblems(steps, workers), []);
    });

    it("each partition's step lands on that partition's worker alone", () => {
        for (const [step, worker] of [
            ["both-partitions/partition-1", "hgx-a-w1"],
            ["both-partitions/partition-2", "hgx-a-w2"],
        ]) {
            const tags = steps.find((s) => s.where === step)?.tags;
            assert.ok(tags, `${PIPELINE}: no step ${step}`);
            const matching = workers.filter((w) => tags.every((t) => w.tags.includes(t))).map((w) => w.host);
            assert.deepStrictEqual(matching, [worker], step);
        }
    });

    it("the check fails on a step no worker can take, an extra tag, or none", () => {
        const bad: TaggedStep[] = [
            { where: "j/eight", tags: ["gpu", "gpu-count=8"] },
            { where: "j/extra", tags: ["gpu", "hgx"] },
            { where: "j/none", tags: [] },
        ];
        assert.deepStrictEqual(stepProblems(bad, workers), [
            "j/eight: no worker carries all of gpu, gpu-count=8 (hgx-a-w1 lacks gpu-count=8; hgx-a-w2 lacks gpu-count=8)",
            "j/extra: hgx is not a computed tag",
            "j/none: asks for no tags",
        ]);
    });

    it("the README's further reading links it", () => {
        const readme = fs.readFileSync(path.join(PACKAGE_ROOT, "README.md"), "utf8");
        const more = readme.slice(readme.indexOf("\n## More\n"));
        assert.ok(more.includes(`](${PIPELINE})`), `README.md's "## More" list links ${PIPELINE}`);
    });
});

describe("examples/gpu-allocation-pipeline.yml: the tags of a worker handing out four GPUs per task", () => {
    const file = "examples/gpu-allocation-pipeline.yml";

    it("every step asks only for computed tags, and the worker its header names (four GPUs, exclusive) carries them", () => {
        const raw = stackWith({ name: "h100", inventory: HGX_H100_8X, extra: { selection: [0, 1, 2, 3], allocation: { mode: "exclusive" } } });
        const workers = renderStack(raw, PACKAGE_ROOT, GOLDEN_ARTIFACTS).map((h) => h.manifest);
        assert.ok(workers[0].tags.includes("gpu-slots=4"), workers[0].tags.join(", "));
        const steps = taggedSteps(file);
        assert.ok(steps.length >= 3, `${file}: its steps`);
        assert.deepStrictEqual(stepProblems(steps, workers), []);
    });
});
