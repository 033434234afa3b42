/**
 * The one rule for a path placed twice on a host: with the same content it is placed once,
 * by its first owner; with different content the host would keep whichever ran last, so it
 * is refused, naming both owners. The host plan applies it across components, and a
 * component across its own pieces.
 */
import { sha256Text } from "../file-hash";
import { HostFile } from "../host/steps";

export interface OwnedFiles {
    /** Who places these files, as the error names it (e.g. ContainerToolkit). */
    owner: string;
    files: HostFile[];
}

export interface PlacedFile extends HostFile {
    owner: string;
}

export interface Placement {
    /** Every path once, in order, with its first owner. */
    placed: PlacedFile[];
    /** Per group (same order as given): the paths it renders that an earlier group places. */
    placedEarlier: string[][];
}

/** What the bytes are, for comparing: a secret is never equal to anything, it has one owner. */
function identity(file: HostFile): string {
    if (file.artifact) return `file:${file.artifact.sha256}`;
    if (file.generated) return `generated:${file.generated}`;
    return `text:${sha256Text(file.content)}`;
}

export function placeOnce(host: string, groups: OwnedFiles[]): Placement {
    const placed: PlacedFile[] = [];
    const first = new Map<string, { owner: string; file: HostFile }>();
    const placedEarlier = groups.map((group) => {
        const shared: string[] = [];
        for (const file of group.files) {
            const earlier = first.get(file.path);
            if (!earlier) {
                first.set(file.path, { owner: group.owner, file });
                placed.push({ ...file, owner: group.owner });
                continue;
            }
            const why =
                file.secret || earlier.file.secret
                    ? "as a secret, which has one owner"
                    : identity(file) !== identity(earlier.file)
                      ? "with different contents"
                      : file.mode !== earlier.file.mode
                        ? `with different modes (${earlier.file.mode}, ${file.mode})`
                        : undefined;
            if (why) {
                const who = earlier.owner === group.owner ? `twice by ${group.owner}` : `by both ${earlier.owner} and ${group.owner}`;
                throw new Error(`host ${host}: ${file.path} is placed ${who} ${why}`);
            }
            if (earlier.owner !== group.owner && !shared.includes(file.path)) shared.push(file.path);
        }
        return shared;
    });
    return { placed, placedEarlier };
}
