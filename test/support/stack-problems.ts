/** The problems a stack config is refused for, none when it is accepted. */
import { parseStack, RawStackConfig, StackConfigError } from "../../stacks/config";

export function problemsOf(raw: RawStackConfig): string[] {
    try {
        parseStack(raw);
    } catch (e) {
        if (e instanceof StackConfigError) return e.problems;
        throw e;
    }
    return [];
}
