/**
 * The vendors' apt repositories as data: one file per repository in vendor-repos/ with the
 * vendor's published fingerprint, where that fact comes from, where the repository is, and
 * the signing key itself when the project ships it. A key whose fingerprint differs from the
 * published one is refused here, before anything reaches a host.
 */
import * as fs from "fs";
import * as path from "path";
import { z } from "zod";
import { PACKAGE_ROOT } from "../host/scripts";
import { keyFingerprints, normalizeFingerprint } from "./openpgp";

export const VENDOR_REPOS_DIR = path.join(PACKAGE_ROOT, "vendor-repos");

export const vendorRepositorySchema = z.strictObject({
    id: z.string().regex(/^[a-z0-9][a-z0-9-]*$/),
    vendor: z.enum(["nvidia", "amd"]),
    description: z.string(),
    /** deb822 URIs (apt expands $(ARCH)); null while the repository cannot be set up. */
    uris: z.string().nullable(),
    suites: z.string().nullable(),
    components: z.string(),
    fingerprint: z.string().regex(/^[0-9A-F]{40}$/),
    fingerprintSource: z.string(),
    keySource: z.string().nullable(),
    /** The armored public key, line by line, as the vendor publishes it; null when not shipped. */
    key: z.array(z.string()).nullable(),
    /** Why the key is not shipped, and how to ship it. */
    missing: z.string().optional(),
});
export type VendorRepositoryData = z.infer<typeof vendorRepositorySchema>;

/** A repository apt can use: its key is shipped and matches the published fingerprint. */
export interface VendorRepository {
    id: string;
    uris: string;
    suites: string;
    components: string;
    /** The armored key placed as the source's keyring. */
    key: string;
    fingerprint: string;
}

/**
 * The key checked against the published fingerprint. Throws, naming both fingerprints, when
 * they differ: a swapped key file must never reach a host.
 */
export function checkedRepository(data: VendorRepositoryData, where = data.id): VendorRepository | undefined {
    if (!data.key || !data.uris || data.suites === null) return undefined;
    const key = data.key.join("\n") + "\n";
    const published = normalizeFingerprint(data.fingerprint);
    const found = keyFingerprints(key).primary;
    if (found !== published) {
        throw new Error(`vendor repository ${where}: the shipped key's fingerprint is ${found}, but the vendor publishes ${published}; refusing to place it`);
    }
    return { id: data.id, uris: data.uris, suites: data.suites, components: data.components, key, fingerprint: published };
}

const cache = new Map<string, VendorRepositoryData>();

/** vendor-repos/<id>.json, validated. */
export function readVendorRepository(id: string): VendorRepositoryData {
    let data = cache.get(id);
    if (!data) {
        const file = path.join(VENDOR_REPOS_DIR, `${id}.json`);
        const parsed = vendorRepositorySchema.safeParse(JSON.parse(fs.readFileSync(file, "utf8")));
        if (!parsed.success) throw new Error(`${file}: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
        data = parsed.data;
        cache.set(id, data);
    }
    return data;
}

/** Which repository each step sets up. */
export const VENDOR_REPOSITORY_IDS = {
    toolkit: { nvidia: "nvidia-container-toolkit", amd: "amd-rocm" },
    driver: { nvidia: "nvidia-cuda", amd: "amd-rocm" },
} as const;

const checked = new Map<string, VendorRepository | undefined>();

/** The repository a step sets up, or undefined while the project does not ship its key (checked once per run, not per host). */
export function vendorRepository(step: keyof typeof VENDOR_REPOSITORY_IDS, vendor: "nvidia" | "amd"): VendorRepository | undefined {
    const id = VENDOR_REPOSITORY_IDS[step][vendor];
    if (!checked.has(id)) checked.set(id, checkedRepository(readVendorRepository(id)));
    return checked.get(id);
}
