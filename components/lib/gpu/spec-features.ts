/**
 * What a container's spec may carry that the runc wrapper refuses unless the worker's settings
 * allow it (`wrapper.allow`): each reaches past what the worker gives a task. Concourse's own
 * specs carry none of them; another caller of the runtime (a Kubernetes tenant, a hand-written
 * bundle) can. The wrapper names the feature it refuses (wrapper/features.go). Pure.
 */
export const SPEC_FEATURES = {
    "no-pid-namespace":
        "no pid namespace of its own: the task sees the host's processes, and through /proc/<pid>/root their files, past the read-only datasets",
    "host-hooks": "hooks that run on the host as root (prestart, createRuntime, poststart, poststop)",
    "cdi-annotations": "cdi.k8s.io/ annotations: the NVIDIA runtime in CDI mode gives the container the devices they name",
    "other-gpu-devices": "device nodes in linux.devices of GPUs the worker does not select",
} as const;

export type SpecFeature = keyof typeof SPEC_FEATURES;

export const SPEC_FEATURE_NAMES = Object.keys(SPEC_FEATURES) as [SpecFeature, ...SpecFeature[]];

/** What installing the wrapper does over a runc open to a known container breakout (host/install-runc-wrapper.sh's RUNC_CVES). */
export const RUNC_CVE_POLICIES = ["warn", "refuse"] as const;
export type RuncCvePolicy = (typeof RUNC_CVE_POLICIES)[number];
