/**
 * Turns the provider's raw inputs into a complete spec: defaults applied, and booleans or
 * numbers in config and device maps written as the strings LXD stores (so that what we
 * store compares equal to what LXD reads back). Pure.
 */
import type { LxdDevices, LxdInstanceSpec, NormalizedSpec } from "./types";

function stringValues(map: unknown): unknown {
    if (typeof map !== "object" || map === null || Array.isArray(map)) return map;
    return Object.fromEntries(Object.entries(map).map(([k, v]) => [k, typeof v === "boolean" || typeof v === "number" ? String(v) : v]));
}

export function normalizeSpec(raw: Partial<LxdInstanceSpec>): NormalizedSpec {
    const devices =
        raw.devices && typeof raw.devices === "object"
            ? (Object.fromEntries(Object.entries(raw.devices).map(([name, d]) => [name, stringValues(d)])) as LxdDevices)
            : (raw.devices ?? {});
    return {
        ...raw,
        server: raw.server ?? {},
        name: raw.name as string,
        image: raw.image as string,
        type: raw.type ?? "container",
        profiles: raw.profiles ?? ["default"],
        config: (stringValues(raw.config) ?? {}) as Record<string, string>,
        devices,
        files: raw.files ?? [],
        running: raw.running ?? true,
    };
}

/** Config keys LXD writes itself; they are neither set nor compared. */
export function isLxdManagedConfigKey(key: string): boolean {
    return key.startsWith("volatile.") || key.startsWith("image.");
}

/** The user-managed part of an instance's config as LXD reports it. */
export function userConfig(config: Record<string, string> | undefined): Record<string, string> {
    return Object.fromEntries(Object.entries(config ?? {}).filter(([k]) => !isLxdManagedConfigKey(k)));
}
