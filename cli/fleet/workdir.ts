/**
 * Each rack's work folder, `.fleet/<stack>/<rack>/` under the project: a Pulumi.yaml of its own
 * (the project's, its `main` made absolute) and the project's node_modules, so that no two
 * racks share a workspace file (pulumi/pulumi#8186) and each runs the same program.
 */
import * as fs from "fs";
import * as path from "path";
import { parse, stringify } from "yaml";

/** The folder of the fleet's own files for a stack: work folders, logs, the last run's record. */
export function fleetDir(projectDir: string, stack: string): string {
    return path.join(projectDir, ".fleet", stack);
}

/** A member's work folder. */
export function workDirOf(projectDir: string, stack: string, member: string): string {
    return path.join(fleetDir(projectDir, stack), "work", member);
}

/** Makes (or refreshes) a member's work folder; returns it. */
export function prepareWorkDir(projectDir: string, stack: string, member: string): string {
    const dir = workDirOf(projectDir, stack, member);
    fs.mkdirSync(dir, { recursive: true });
    const project = (parse(fs.readFileSync(path.join(projectDir, "Pulumi.yaml"), "utf8")) ?? {}) as Record<string, unknown>;
    project.main = path.resolve(projectDir, typeof project.main === "string" ? project.main : ".");
    // The member's config file is in its work folder (stack-file.ts), wherever the project keeps its own stacks'.
    delete project.stackConfigDir;
    const file = path.join(dir, "Pulumi.yaml");
    const text = stringify(project);
    if (!fs.existsSync(file) || fs.readFileSync(file, "utf8") !== text) fs.writeFileSync(file, text);
    const modules = path.join(dir, "node_modules");
    const target = path.join(projectDir, "node_modules");
    if (fs.existsSync(target) && !fs.existsSync(modules)) fs.symlinkSync(target, modules);
    return dir;
}
