/**
 * Each vendor's container toolkit as that vendor publishes it: the package name, the form of
 * its versions, the version a worker gets by default, and the versions refused for a known
 * container escape. Pure data and checks: the stack config, GpuWorker (through the chain's
 * settings) and the host script (for a `preinstalled` toolkit) all apply the same floor.
 */

export type ToolkitVendor = "nvidia" | "amd";

/** A known container-escape CVE and the first toolkit version that fixes it. */
export interface ToolkitCve {
    id: string;
    fixedIn: string;
    what: string;
}

export interface VendorToolkit {
    /** The apt package that carries the runtime (its libraries follow it at the same version). */
    package: string;
    /** The version a worker gets when the stack sets none. */
    defaultVersion: string;
    /** The form of the upstream versions the vendor publishes (the Debian revision is apt's to add). */
    versionPattern: RegExp;
    /** How the pattern reads in an error message. */
    versionForm: string;
    cves: ToolkitCve[];
}

export const TOOLKITS: Readonly<Record<ToolkitVendor, VendorToolkit>> = {
    // NVIDIA publishes nvidia-container-toolkit 1.17.8-1 (and release candidates 1.18.0~rc.1-1)
    // with nvidia-container-toolkit-base, libnvidia-container1 and libnvidia-container-tools
    // at the same version.
    nvidia: {
        package: "nvidia-container-toolkit",
        defaultVersion: "1.17.8",
        versionPattern: /^[0-9]+\.[0-9]+\.[0-9]+(~rc\.[0-9]+)?$/,
        versionForm: "X.Y.Z such as 1.17.8 (or a release candidate such as 1.18.0~rc.1)",
        cves: [
            { id: "CVE-2024-0132", fixedIn: "1.16.2", what: "a crafted image escapes to the host through a time-of-check/time-of-use race" },
            { id: "CVE-2025-23359", fixedIn: "1.17.4", what: "the fix for CVE-2024-0132 could be bypassed, giving a container access to the host" },
            { id: "CVE-2025-23266", fixedIn: "1.17.8", what: "an image's LD_PRELOAD reaches a hook that runs on the host as root" },
        ],
    },
    // AMD publishes amd-container-toolkit 1.0.0 to 1.3.0 (release notes of ROCm/container-toolkit).
    amd: {
        package: "amd-container-toolkit",
        defaultVersion: "1.3.0",
        versionPattern: /^[0-9]+\.[0-9]+\.[0-9]+$/,
        versionForm: "X.Y.Z such as 1.3.0",
        cves: [],
    },
};

/** Numeric comparison of dotted versions (a ~rc suffix sorts before its release): -1, 0, 1. */
export function compareToolkitVersions(a: string, b: string): number {
    const split = (v: string) => {
        const [release, rc] = v.split("~rc.");
        return { parts: release.split(".").map(Number), rc: rc === undefined ? Infinity : Number(rc) };
    };
    const x = split(a);
    const y = split(b);
    for (let i = 0; i < Math.max(x.parts.length, y.parts.length); i++) {
        const p = x.parts[i] ?? 0;
        const q = y.parts[i] ?? 0;
        if (p !== q) return p < q ? -1 : 1;
    }
    return x.rc === y.rc ? 0 : x.rc < y.rc ? -1 : 1;
}

/** The version a worker of this vendor installs: the stack's, else the vendor's default. */
export function toolkitVersion(vendor: ToolkitVendor, version: string | undefined): string {
    return version ?? TOOLKITS[vendor].defaultVersion;
}

/** What is wrong with a toolkit version for this vendor, one line each (empty when fine). */
export function toolkitVersionProblems(vendor: ToolkitVendor, version: string): string[] {
    const toolkit = TOOLKITS[vendor];
    if (!toolkit.versionPattern.test(version)) {
        return [`${version} is not a version ${vendor === "nvidia" ? "NVIDIA" : "AMD"} publishes ${toolkit.package} under: expected ${toolkit.versionForm}`];
    }
    const open = toolkit.cves.filter((cve) => compareToolkitVersions(version, cve.fixedIn) < 0);
    if (open.length === 0) return [];
    const floor = open
        .map((c) => c.fixedIn)
        .sort(compareToolkitVersions)
        .pop()!;
    return [
        `${toolkit.package} ${version} has known container escapes: ${open.map((c) => `${c.id} (${c.what}; fixed in ${c.fixedIn})`).join(", ")}; use ${floor} or later`,
    ];
}

/** The floor as host-script arguments: "CVE-2024-0132=1.16.2" ... for the `preinstalled` check on the host. */
export function cveFloorArgs(vendor: ToolkitVendor): string[] {
    return TOOLKITS[vendor].cves.flatMap((c) => ["--cve", `${c.id}=${c.fixedIn}`]);
}
