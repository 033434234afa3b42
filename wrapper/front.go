//go:build gpuworkers_front

package main

// #include "front.h"
import "C"

// The paths come from front.c, where they are fixed at build time.
func init() {
	configPath = C.GoString(C.gw_config_path())
	defaultLogPath = C.GoString(C.gw_log_path())
	realRunc = C.GoString(C.gw_real_runc())
	stateDir = C.GoString(C.gw_state_dir())
}
