//go:build gpuworkers_front

// Paths fixed when the wrapper is built; front.c holds them, front.go hands them to Go.
const char *gw_config_path(void);
const char *gw_log_path(void);
const char *gw_real_runc(void);
const char *gw_state_dir(void);

// release.c: at `delete`, the container's GPU job records and dcgm-exporter mapping lines go.
void gw_release(const char *state_dir, const char *id);
const char *gw_delete_id(int argc, char **argv, int sub);
