/**
 * Which client runs a host's steps and places its files: one setting, its default and its doc,
 * here and nowhere else (the components' `hostSteps` argument, the stack's `gpu-workers:hostSteps`
 * and the README's table come from it). Both clients take the same commands, stdin and triggers
 * (components/providers/host/step-transport.ts). Pure.
 */
import { z } from "zod";

export const HOST_STEP_TRANSPORTS = ["command", "builtin"] as const;

/** `command`: @pulumi/command's remote.Command and CopyToRemote; `builtin`: the program's own SSH client. */
export type HostStepTransport = (typeof HOST_STEP_TRANSPORTS)[number];

export const hostStepsSchema = z.enum(HOST_STEP_TRANSPORTS, { error: "expected command or builtin" }).default("command").meta({
    description:
        "what runs the host steps: `command`, the Pulumi Command provider's `remote.Command` and `CopyToRemote` (its plugin installed the usual way), or `builtin`, the program's own SSH client, which needs no plugin and keeps one connection per host. Both run the same commands with the same stdin and triggers; a stack moves from one to the other by one `up`, and no step's undo runs on a host ([docs/architecture.md](docs/architecture.md#host-steps-two-transports))",
});

/** The transport of a caller that names none. */
export const DEFAULT_HOST_STEPS: HostStepTransport = hostStepsSchema.parse(undefined);
