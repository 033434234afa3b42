/**
 * A shared board from the stack config as planning sees it (lib/plan/board-plan.ts): through
 * the same mapping the program takes (board-args.ts, then SharedGpuBoard's own boardSpec),
 * with placeholders for what only `up` knows. The offline render and the checks of the
 * stack plan from this.
 */
import { ArtifactSource, boardSpec, BoardSpec } from "../../components/program";
import { boardArgs } from "./board-args";
import type { StackWeb } from "./component-args";
import { BoardConfig } from "../config/schema";

/** What stands for a secret value where only the plan is wanted. */
export const SECRET_PLACEHOLDER = "[secret]";

export function boardSpecOf(board: BoardConfig, baseDir = process.cwd(), web?: StackWeb, artifacts?: ArtifactSource): BoardSpec {
    return boardSpec(
        board.name,
        boardArgs(board, () => SECRET_PLACEHOLDER, baseDir, web),
        // The stack's settings were parsed whole by its config stage.
        { artifacts, settingsParsed: true },
    );
}
