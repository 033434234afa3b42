/** The problems a stack config is refused for, none when it is accepted. */
import { parseStack } from "../../stacks/checks/stack";
import { RawStackConfig, StackConfigError } from "../../stacks/config/stack";

export function problemsOf(raw: RawStackConfig): string[] {
    try {
        parseStack(raw);
    } catch (e) {
        if (e instanceof StackConfigError) return e.problems;
        throw e;
    }
    return [];
}
