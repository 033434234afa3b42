/**
 * The Pulumi dynamic provider for LXD instances: the operations in instance-ops.ts, loaded
 * when the provider runs (see ../lazy-provider.ts for why).
 */
import { lazyProvider } from "../lazy-provider";

/** The provider every LxdInstance uses. A dynamic provider: no LXD provider plugin is to be had, and it speaks LXD's REST API itself. */
export const lxdInstanceProvider = lazyProvider("lxd-instance", "lxd");
