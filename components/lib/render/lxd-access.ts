/**
 * Pure pieces of an LXD-backed host: the files that let us in over SSH through the
 * loopback proxy device, with a host key we generated and therefore can pin.
 */
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
