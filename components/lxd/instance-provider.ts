/**
 * The Pulumi dynamic provider for LXD instances: the operations in instance-ops.ts, loaded
 * when the provider runs (see components/dynamic/lazy-provider.ts for why).
 */
import * as path from "path";
import type * as pulumi from "@pulumi/pulumi";
import { makeLazyProvider } from "../dynamic/lazy-provider";

/** The implementation module, without extension (resolves to .js when compiled, .ts under ts-node). */
const OPS_MODULE = path.join(__dirname, "instance-ops");

/** Builds a provider whose methods load the operations module at `opsPath` when called. */
export function makeLxdInstanceProvider(opsPath: string, opsFromProgram: string): pulumi.dynamic.ResourceProvider {
    return makeLazyProvider(opsPath, opsFromProgram, "lxd");
}

/** The provider every LxdInstance uses. */
export const lxdInstanceProvider = makeLxdInstanceProvider(OPS_MODULE, path.relative(process.cwd(), OPS_MODULE));
