/**
 * Pure pieces of an LXD-backed host: the files that let us in over SSH through the
 * loopback proxy device, with a host key we generated and therefore can pin.
 */
import { stringify } from "yaml";

export const LXD_SSHD_DROP_IN = "/etc/ssh/sshd_config.d/gpu-workers.conf";

/** sshd offers only our host key and takes only keys, so the pinned key is the one it shows. */
export function renderSshdDropIn(): string {
    return [
        "# Rendered by gpu-workers.",
        "HostKey /etc/ssh/ssh_host_ed25519_key",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PermitRootLogin prohibit-password",
        "",
    ].join("\n");
}

/** The user's home and its authorized_keys path inside the instance. */
export function authorizedKeysPath(user: string): string {
    return user === "root" ? "/root/.ssh/authorized_keys" : `/home/${user}/.ssh/authorized_keys`;
}

/**
 * The same access files as cloud-init user-data, for a virtual machine (it takes no file
 * pushes before its agent runs). write_files runs before cloud-init's ssh module, which must
 * then keep our host key (no deletion; it generates only key types that are missing) and
 * leave root's keys as they are; sshd starts after cloud-init, with our key and drop-in.
 */
export function renderAccessUserData(files: { path: string; content: string; mode: string }[]): string {
    const doc = {
        disable_root: false,
        ssh_pwauth: false,
        ssh_deletekeys: false,
        ssh_genkeytypes: ["ed25519"],
        write_files: files.map((f) => ({ path: f.path, permissions: f.mode, owner: "root:root", content: f.content })),
    };
    return `#cloud-config\n# Rendered by gpu-workers: the SSH access of this instance.\n${stringify(doc, { lineWidth: 0 })}`;
}
