/**
 * The defaults of a host's transport, applied in one place: GpuHost, GpuWorker and ConcourseWeb
 * fill in what their caller left out here, and the stack schema declares the same values as its
 * defaults. Pure.
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

/** The fields of an LXD transport that every component shares, as a caller may give them. */
export interface LxdTransportGiven {
    instance: string;
    image: string;
    type?: LxdInstanceType;
    profiles?: string[];
    config?: Record<string, string>;
    sshAddress?: string;
    sshPort: number;
    user?: string;
    network?: string;
    address?: string;
}

/** Those fields with the defaults applied (network and address only where given). */
export interface LxdTransportShape {
    instance: string;
    image: string;
    type: LxdInstanceType;
    profiles: string[];
    config: Record<string, string>;
    sshAddress: string;
    sshPort: number;
    user: string;
    network?: string;
    address?: string;
}

export function lxdTransportShape(lxd: LxdTransportGiven): LxdTransportShape {
    const d = LXD_TRANSPORT_DEFAULTS;
    return {
        instance: lxd.instance,
        image: lxd.image,
        type: lxd.type ?? d.type,
        profiles: lxd.profiles ?? [...d.profiles],
        config: lxd.config ?? { ...d.config },
        sshAddress: lxd.sshAddress ?? d.sshAddress,
        sshPort: lxd.sshPort,
        user: lxd.user ?? d.user,
        ...(lxd.network !== undefined ? { network: lxd.network } : {}),
        ...(lxd.address !== undefined ? { address: lxd.address } : {}),
    };
}
