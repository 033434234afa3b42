/**
 * A fleet past one stack: `gpu-workers:fleet` (how `npm run fleet` drives the stack's racks) and
 * `gpu-workers:fleetMember` (which part of the stack a member stack holds, a rack or the web; the
 * fleet driver sets it, a person does not). A host names its rack with `rack`.
 */
import { z } from "zod";
import { dnsLabel } from "./names";

/** The rack of a host that names none. */
export const DEFAULT_RACK = "default";

/** The name of the fleet's part that is its web's own stack: no rack may take it. */
export const WEB_PART = "web";

/** A rack's name: a DNS label, as its stack `<stack>-<rack>` must be a stack name. */
export const rackName = dnsLabel("a rack name", "rack-a").meta({
    description: `the rack the host is in: \`npm run fleet\` converges each rack in a stack of its own, \`<stack>-<rack>\` (default \`${DEFAULT_RACK}\`; a shared board's workers are in their board's rack). A plain \`pulumi up\` of the stack ignores it`,
});

/** A Pulumi stack name (letters, digits, `-`, `_`, `.`). */
const stackName = z
    .string({ error: "expected a stack name" })
    .regex(/^[A-Za-z0-9_.-]{1,100}$/, { error: "expected a stack name: letters, digits, -, _ and ., e.g. prod-web" });

export const fleetOptionsSchema = z
    .strictObject({
        parallel: z
            .number({ error: "expected a whole number of racks, 1 or more" })
            .int({ error: "expected a whole number of racks, 1 or more" })
            .min(1, { error: "expected a whole number of racks, 1 or more" })
            .optional()
            .meta({ description: "how many racks `npm run fleet` runs at once (default: this machine's cores)" }),
        skipCheckpoints: z.boolean({ error: "expected true or false" }).default(false).meta({
            description:
                "write each rack's state only at the end of its run (`PULUMI_SKIP_CHECKPOINTS`): far fewer bytes written, but a run killed midway leaves state behind the hosts; run `fleet refresh`, then `fleet up`",
        }),
        webStack: stackName.optional().meta({
            description: `the stack \`npm run fleet\` converges the web node in, first, when the stack has one; each rack's workers take its TSA key and password from its outputs (default \`<stack>-${WEB_PART}\`)`,
        }),
    })
    .meta({
        description:
            "how `npm run fleet` drives the stack's racks, each in a stack of its own ([docs/fleet.md](docs/fleet.md)): `{parallel, skipCheckpoints, webStack}`",
    });

export type FleetOptions = z.output<typeof fleetOptionsSchema>;

/**
 * What a member stack of the fleet holds, set by the fleet driver with the folder the stack's paths
 * are relative to: one rack (its workers take the web, if the fleet has one, from `webStack`'s
 * outputs), or the web alone.
 */
export const fleetMemberSchema = z
    .strictObject({
        rack: rackName.optional(),
        web: z.literal(true, { error: "expected true" }).optional(),
        webStack: stackName.optional(),
        /** The stack the fleet is made from: its name, not the member's, goes into the owner ids of host steps, so a host moved between member stacks keeps its ids. */
        fleet: stackName,
        projectDir: z.string({ error: "expected the project's folder" }).refine((p) => p.startsWith("/"), { error: "expected an absolute path" }),
    })
    .refine((m) => (m.rack === undefined) !== (m.web === undefined), { error: "expected rack (a rack's stack) or web: true (the web's), not both" })
    .refine((m) => m.webStack === undefined || m.rack !== undefined, { error: "webStack is for a rack's stack", path: ["webStack"] });

export type FleetMember = z.output<typeof fleetMemberSchema>;
