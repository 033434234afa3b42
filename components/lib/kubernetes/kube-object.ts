/** A Kubernetes object as plain data. */

/** A Kubernetes object as the API server takes it. */
export interface KubeObject {
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
    [field: string]: unknown;
}
