/** The part of the `diff` package (jsdiff 7, which ships no types of its own) that `render --against` uses. */
declare module "diff" {
    export interface Hunk {
        oldStart: number;
        oldLines: number;
        newStart: number;
        newLines: number;
        /** Each line with its mark (` `, `-`, `+`), and `\ No newline at end of file` where a side ends without one. */
        lines: string[];
    }
    export interface ParsedDiff {
        hunks: Hunk[];
    }
    export function structuredPatch(
        oldFileName: string,
        newFileName: string,
        oldStr: string,
        newStr: string,
        oldHeader?: string,
        newHeader?: string,
        options?: { context?: number },
    ): ParsedDiff;
}
