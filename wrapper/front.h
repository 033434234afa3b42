//go:build gpuworkers_front

// Paths fixed when the wrapper is built; front.c holds them, front.go hands them to Go.
const char *gw_config_path(void);
const char *gw_log_path(void);
const char *gw_real_runc(void);
const char *gw_state_dir(void);
