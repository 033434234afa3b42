/** Names with a grammar of their own in the stack config. */
import { z } from "zod";

/** A DNS label (lower-case letters, digits and dashes, at most 63), as `what` names it; `example` shows one. */
export function dnsLabel(what: string, example: string) {
    return z
        .string({ error: `expected ${what}` })
        .regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, { error: `expected lower-case letters, digits and dashes (a DNS label), e.g. ${example}` });
}
