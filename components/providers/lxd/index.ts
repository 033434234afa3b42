/** LXD hosts: instances with GPU passthrough, managed through LXD's REST API. */
export { LxdInstance, LxdInstanceArgs, LxdServerArgs, LxdFileArgs, LXD_INSTANCE_MODULE, LXD_INSTANCE_TYPE } from "./instance";
export { lxdDevicesForWorker, lxdConfigForWorker, lxdSshProxyDevice, lxdPciAddress, WorkerDeviceOptions } from "../../lib/lxd/devices";
export { lxdInstanceProblems, lxdDeviceProblems, validateLxdInstance, isCdiId, LxdValidationError, LXD_DEVICE_TYPES } from "../../lib/lxd/validate";
export { LxdClient, LxdApiError, DEFAULT_LXD_SOCKET } from "./client";
export type { LxdExecResult, LxdInstanceRecord, LxdServerInfo } from "./client";
export type { LxdClientOptions, LxdConnection, LxdObject, LxdOperation, LxdResponse } from "./transport";
export type { LazyProviderResource } from "../lazy-resource";
export { LxdInstanceError } from "./instance-ops";
export { lxdInstanceProvider } from "./instance-provider";
export type {
    LxdServer,
    LxdDevice,
    LxdDevices,
    LxdFile,
    LxdWaitFor,
    LxdInstanceSpec,
    LxdInstanceState,
    LxdInstanceType,
    NormalizedSpec,
} from "../../lib/lxd/types";
