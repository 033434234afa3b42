/**
 * The one renderer of the env files placed on hosts (systemd's EnvironmentFile=, which the host
 * scripts also read, key by key and literally: never sourced). A value goes in only where
 * systemd would hand it to the service exactly as written: one line, no quote, backslash, `$`
 * or backquote (which systemd or a reader could take for syntax), no control character, no
 * space at either end. Anything else is refused, naming the key (never the value: some are
 * passwords), so a component used without the stack's schema is safe as well. Pure.
 */

export class EnvFileError extends Error {
    constructor(message: string) {
        super(message);
        this.name = "EnvFileError";
    }
}

const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Why systemd would not carry `value` verbatim, or undefined. */
export function envValueProblem(value: string): string | undefined {
    if (/[\n\r]/.test(value)) return "holds a line break";
    // eslint-disable-next-line no-control-regex -- control characters are what this check looks for
    if (/[\0-\x08\x0b\x0c\x0e-\x1f\x7f]/.test(value)) return "holds a control character";
    if (/["'`]/.test(value)) return "holds a quote or backquote";
    if (value.includes("\\")) return "holds a backslash";
    if (value.includes("$")) return "holds a $";
    if (/^[ \t]|[ \t]$/.test(value)) return "begins or ends with a space";
    return undefined;
}

/** `KEY=value` lines, after an optional comment line; throws EnvFileError on a key or value systemd would not carry verbatim. */
export function renderEnvFile(entries: [string, string | number][], comment?: string): string {
    const seen = new Set<string>();
    const lines = entries.map(([key, raw]) => {
        if (!KEY.test(key)) throw new EnvFileError(`env file: ${JSON.stringify(key)} is no variable name`);
        if (seen.has(key)) throw new EnvFileError(`env file: ${key} is set twice`);
        seen.add(key);
        const value = String(raw);
        const problem = envValueProblem(value);
        if (problem) throw new EnvFileError(`env file: the value of ${key} ${problem}, which an env file cannot carry as it is`);
        return `${key}=${value}`;
    });
    return (comment === undefined ? "" : `# ${comment}\n`) + lines.join("\n") + "\n";
}
