/**
 * The defaults of a host's transport: the transport schemas (lib/settings/transport-schema.ts) declare
 * them, and what reaches a host without a schema (a connection's port and user) reads them here. Pure.
 */
import type { LxdInstanceType } from "../lxd/types";

/** The login user over SSH (others run commands through `sudo -n`); a jump host's too. */
export const SSH_USER_DEFAULT = "root";

/** sshd's port, on a host and on a jump host. */
export const SSH_PORT_DEFAULT = 22;

/** What an LXD instance a component creates gets when its caller says nothing. */
export const LXD_TRANSPORT_DEFAULTS = {
    type: "container" as LxdInstanceType,
    profiles: ["default"],
    config: {} as Record<string, string>,
    /** The sshd proxy listens on the LXD server's loopback. */
    sshAddress: "127.0.0.1",
    /** The key placed in the instance is root's. */
    user: "root" as const,
    /** Pass GPUs by PCI address: LXD 5.0 (Debian 12) reads CDI ids as card numbers. */
    gpuCdi: false,
    /** idmap-shift writable dataset disks (needs kernel idmapped mounts). */
    shiftWritable: true,
};
