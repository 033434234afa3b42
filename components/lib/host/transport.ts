/**
 * How a host is reached: a machine over SSH, or an LXD instance the same `up` creates. The
 * one dispatch between the two; every place that treats them differently goes through it.
 */
export type Transport<Ssh, Lxd> =
    | {
          /** A machine reached over SSH. */
          ssh: Ssh;
          /** Not with ssh. */
          lxd?: undefined;
      }
    | {
          /** An LXD instance the same `up` creates. */
          lxd: Lxd;
          /** Not with lxd. */
          ssh?: undefined;
      };

/** Calls the case of `transport`'s kind with its settings. */
export function onTransport<Ssh, Lxd, R>(transport: Transport<Ssh, Lxd>, cases: { ssh: (ssh: Ssh) => R; lxd: (lxd: Lxd) => R }): R {
    return transport.ssh !== undefined ? cases.ssh(transport.ssh) : cases.lxd(transport.lxd as Lxd);
}

/** "ssh" or "lxd". */
export function transportKind(transport: Transport<unknown, unknown>): "ssh" | "lxd" {
    return onTransport<unknown, unknown, "ssh" | "lxd">(transport, { ssh: () => "ssh", lxd: () => "lxd" });
}
