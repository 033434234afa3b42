/**
 * A Concourse release on a host, for the web and the worker alike: the tarball uploaded from
 * here or downloaded by the host (checked against its sha256), unpacked by
 * host/concourse-install.sh, which both components place and their scripts run.
 */
import { hostScriptFile, OWNERSHIP_SCRIPT } from "../host/scripts";
import { Artifact, HostFile } from "../host/steps";

/** The official release tarball ({url, sha256}), or a tarball in its layout uploaded from here ({path}). */
export type ConcourseRelease =
    | {
          /** Where the host downloads the release tarball (http:// or https://). */
          url: string;
          /** The tarball's sha256, checked on the host before it is unpacked. */
          sha256: string;
      }
    | {
          /** A release tarball on this machine, uploaded to the host. */
          path: string;
      };
/** A release as planning takes it: a tarball uploaded from here comes with its sha256 (taken where the program starts, components/chain/artifacts.ts). */
export type PlannedRelease = Extract<ConcourseRelease, { url: string }> | Artifact;

export const CONCOURSE_INSTALLER = "concourse-install.sh";

/** The installer (with the helper that keeps the release's users), and the tarball itself when it is uploaded (to `archive` on the host). */
export function concourseReleaseFiles(binary: PlannedRelease, archive: string): HostFile[] {
    const uploaded: HostFile[] = "path" in binary ? [{ path: archive, mode: "0644", content: "", artifact: binary }] : [];
    return [...uploaded, hostScriptFile(CONCOURSE_INSTALLER), hostScriptFile(OWNERSHIP_SCRIPT)];
}

/** The installer's arguments for this release. */
export function concourseReleaseArgs(version: string, binary: PlannedRelease, archive: string): string[] {
    return ["--version", version, ...("url" in binary ? ["--url", binary.url, "--sha256", binary.sha256] : ["--archive", archive])];
}
