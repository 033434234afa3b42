/**
 * apt files for the vendors' packages, rendered as text so that the preview shows them: the
 * repository's key under /usr/share/keyrings, a deb822 source that trusts only that key
 * (Signed-By, no apt-key), and a preferences file that pins the packages to one version so
 * that no upgrade, unattended or not, moves them. Pure.
 */
import { HostFile } from "../host/steps";
import type { VendorRepository } from "../repos/vendor-repos";

export const KEYRING_DIR = "/usr/share/keyrings";
export const SOURCES_DIR = "/etc/apt/sources.list.d";
export const PREFERENCES_DIR = "/etc/apt/preferences.d";
const HEADER = "# Rendered by gpu-workers: changes here are replaced on the next pulumi up.\n";

/** Where a repository's files go (tests put them elsewhere). */
export interface AptPaths {
    keyringDir: string;
    sourcesDir: string;
    preferencesDir: string;
}
export const APT_PATHS: AptPaths = { keyringDir: KEYRING_DIR, sourcesDir: SOURCES_DIR, preferencesDir: PREFERENCES_DIR };

export function keyringPath(repo: Pick<VendorRepository, "id">, paths: AptPaths = APT_PATHS): string {
    return `${paths.keyringDir}/gpu-workers-${repo.id}.asc`;
}

export function sourcePath(repo: Pick<VendorRepository, "id">, paths: AptPaths = APT_PATHS): string {
    return `${paths.sourcesDir}/gpu-workers-${repo.id}.sources`;
}

/** The source in deb822 form; apt reads an armored (.asc) keyring named by Signed-By. */
export function renderAptSource(repo: VendorRepository, paths: AptPaths = APT_PATHS): string {
    const lines = [
        "Types: deb",
        `URIs: ${repo.uris}`,
        `Suites: ${repo.suites}`,
        ...(repo.components ? [`Components: ${repo.components}`] : []),
        `Signed-By: ${keyringPath(repo, paths)}`,
    ];
    return `${HEADER}# Trusts only the key ${repo.fingerprint}.\n${lines.join("\n")}\n`;
}

/** The keyring and the source of one vendor repository. */
export function renderVendorRepository(repo: VendorRepository, paths: AptPaths = APT_PATHS): HostFile[] {
    return [
        { path: keyringPath(repo, paths), mode: "0644", content: repo.key },
        { path: sourcePath(repo, paths), mode: "0644", content: renderAptSource(repo, paths) },
    ];
}

/** A set of packages held at one upstream version. */
export interface AptPin {
    /** Names the preferences file: gpu-workers-<name> (no dots: apt skips such files). */
    name: string;
    /** Package names, globs or /regex/ as apt_preferences(5) takes them. */
    packages: string[];
    /** apt's version glob, e.g. 1.17.8-* (any Debian revision of 1.17.8). */
    version: string;
    /** Why these packages, in one line. */
    why: string;
}

export function pinPath(pin: Pick<AptPin, "name">, paths: AptPaths = APT_PATHS): string {
    if (!/^[A-Za-z0-9_-]+$/.test(pin.name))
        throw new Error(`apt pin ${JSON.stringify(pin.name)}: expected letters, digits, _ and - (apt ignores other file names in preferences.d)`);
    return `${paths.preferencesDir}/gpu-workers-${pin.name}`;
}

/**
 * The preferences file. Priority 1001 makes the pinned version the candidate even over a
 * newer one (and lets apt go back to it), so upgrades leave the packages where they are.
 */
export function renderAptPin(pin: AptPin): string {
    return `${HEADER}# ${pin.why}\nPackage: ${pin.packages.join(" ")}\nPin: version ${pin.version}\nPin-Priority: 1001\n`;
}

export function renderAptPinFile(pin: AptPin, paths: AptPaths = APT_PATHS): HostFile {
    return { path: pinPath(pin, paths), mode: "0644", content: renderAptPin(pin) };
}
