/** What the GPU plan refuses, at the setting's path (selection, fabricManager.mode, allocation.perTask). */
export class PlanError extends Error {
    constructor(
        public readonly path: string,
        message: string,
    ) {
        super(`${path}: ${message}`);
        this.name = "PlanError";
    }
}
