/**
 * Where the files uploaded from this machine meet planning: the binaries `npm run build` makes
 * and a Concourse release named by path are hashed here, once per program run, and handed to
 * the plans as artifacts (path and sha256). Planning and rendering read no file; every host's
 * plan refers to the same artifact, so a fleet holds each binary's digest once and never its bytes.
 */
import * as fs from "fs";
import { sha256Text } from "../lib/file-hash";
import type { Artifact } from "../lib/host/steps";
import type { BuildArtifacts } from "../lib/settings/worker-spec";
import type { ConcourseRelease, PlannedRelease } from "../lib/concourse/release";
import { CONTAINERD_TOML_BUILD_OUTPUT } from "../lib/links/containerd/render";
import { CDI_CHECK_BUILD_OUTPUT } from "../lib/links/container-toolkit/render";
import { WRAPPER_BUILD_OUTPUT } from "../lib/links/runc-wrapper/render";

/** What a plan uploads from here: the built binaries, and a release named by path with its digest. */
export interface ArtifactSource {
    built(): BuildArtifacts;
    /** The release with its digest (one given with its digest, or by URL, as it is). */
    release(binary: ConcourseRelease | PlannedRelease): PlannedRelease;
}

const digests = new Map<string, string>();

/** A file of this machine with its sha256, read once per program run (artifacts do not change under us). */
export function localArtifact(path: string, what: string): Artifact {
    let sha256 = digests.get(path);
    if (sha256 === undefined) {
        if (!fs.existsSync(path)) throw new Error(`${what}: ${path} is missing`);
        sha256 = sha256Text(fs.readFileSync(path));
        digests.set(path, sha256);
    }
    return { path, sha256 };
}

/** A binary `npm run build` makes, with its sha256; a missing one says how to make it. */
export function builtArtifact(path: string, what: string, script: string): Artifact {
    if (!fs.existsSync(path)) throw new Error(`${what}: ${path} is missing; build it first (npm run build, which runs ${script})`);
    return localArtifact(path, what);
}

let built: BuildArtifacts | undefined;

/** The artifacts of this checkout or installed package: its build output, and releases as the stack names them. */
export const LOCAL_ARTIFACTS: ArtifactSource = {
    built: () =>
        (built ??= {
            wrapper: builtArtifact(WRAPPER_BUILD_OUTPUT, "runc wrapper", "scripts/build-wrapper.sh"),
            containerdToml: builtArtifact(CONTAINERD_TOML_BUILD_OUTPUT, "containerd-toml", "scripts/build-containerd-toml.sh"),
            cdiCheck: builtArtifact(CDI_CHECK_BUILD_OUTPUT, "cdi-check", "scripts/build-cdi-check.sh"),
        }),
    release: (binary) => ("sha256" in binary ? binary : localArtifact(binary.path, "Concourse release")),
};

/** What stands for a digest in a plan made only to be checked (a stack's boards, while its config is validated). */
export const DIGEST_NOT_TAKEN = "[digest not taken]";

/** The build output and releases by path, no file read: for plans that are checked, never applied or written. */
export const UNREAD_ARTIFACTS: ArtifactSource = {
    built: () => ({
        wrapper: { path: WRAPPER_BUILD_OUTPUT, sha256: DIGEST_NOT_TAKEN },
        containerdToml: { path: CONTAINERD_TOML_BUILD_OUTPUT, sha256: DIGEST_NOT_TAKEN },
        cdiCheck: { path: CDI_CHECK_BUILD_OUTPUT, sha256: DIGEST_NOT_TAKEN },
    }),
    release: (binary) => ("sha256" in binary ? binary : { path: binary.path, sha256: DIGEST_NOT_TAKEN }),
};
