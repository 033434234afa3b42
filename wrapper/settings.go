package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// settings is the root-owned JSON file at configPath, rendered by renderWrapperConfig
// (components/lib/render/runc-wrapper.ts). Only create, run and exec read it.
type settings struct {
	RealRuntime      string            `json:"realRuntime"`
	DatasetRoot      string            `json:"datasetRoot"`
	WritableSuffixes []string          `json:"writableSuffixes"`
	Env              map[string]string `json:"env"`
	UnsetEnv         []string          `json:"unsetEnv"`
	DeviceNodes      []string          `json:"deviceNodes"`
	DeviceLinks      []deviceLink      `json:"deviceLinks"`
	// GpuNodes are the selected GPUs' device nodes: another GPU's node in a spec is refused (features.go).
	GpuNodes []string `json:"gpuNodes"`
	Log      string   `json:"log"`
	// AllowPrivileged lets through specs that could undo the datasets' modes (privileged.go);
	// absent means false.
	AllowPrivileged bool `json:"allowPrivileged"`
	// AllowSpec names the spec features (features.go) a container may carry; absent means none.
	AllowSpec []string `json:"allowSpec"`
	// GpuJobs: record which container holds which GPU, for metrics (gpujobs.go); absent means none.
	GpuJobs *gpuJobs `json:"gpuJobs"`
	// Allocation hands the units out per task (allocation.go, holds.go); absent means every
	// container gets every selected GPU.
	Allocation *allocation `json:"allocation"`
}

func loadSettings(path string) (*settings, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read settings %s: %w", path, err)
	}
	defer f.Close()
	if err := checkOwnership(f); err != nil {
		return nil, fmt.Errorf("settings %s: %w", path, err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("cannot read settings %s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s settings
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("invalid settings %s: %w", path, err)
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("invalid settings %s: %w", path, err)
	}
	if s.Log == "" {
		s.Log = defaultLogPath
	}
	return &s, nil
}

// checkOwnership: whoever can write the settings chooses what runs as root, so when the
// wrapper runs as root the file must belong to root and be writable by nobody else.
func checkOwnership(f *os.File) error {
	if os.Geteuid() != 0 {
		return nil
	}
	info, err := f.Stat()
	if err != nil {
		return err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if st.Uid != 0 {
		return fmt.Errorf("must be owned by root (owner uid %d)", st.Uid)
	}
	if info.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("must not be writable by group or others (mode %04o)", info.Mode().Perm())
	}
	return nil
}

func (s *settings) validate() error {
	if !filepath.IsAbs(s.RealRuntime) {
		return fmt.Errorf("realRuntime must be an absolute path (got %q)", s.RealRuntime)
	}
	if s.DatasetRoot != "" && !filepath.IsAbs(s.DatasetRoot) {
		return fmt.Errorf("datasetRoot must be an absolute path (got %q)", s.DatasetRoot)
	}
	for name := range s.Env {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return fmt.Errorf("env: invalid variable name %q", name)
		}
	}
	for _, name := range s.UnsetEnv {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return fmt.Errorf("unsetEnv: invalid variable name %q", name)
		}
	}
	for _, p := range s.DeviceNodes {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("deviceNodes: %q is not an absolute path", p)
		}
	}
	if err := validDeviceLinks("deviceLinks", s.DeviceLinks); err != nil {
		return err
	}
	for _, p := range s.GpuNodes {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("gpuNodes: %q is not an absolute path", p)
		}
	}
	for _, f := range s.AllowSpec {
		if f != noPidNamespace && f != hostHooks && f != cdiAnnotations && f != otherGpuDevices {
			return fmt.Errorf("allowSpec: unknown feature %q", f)
		}
	}
	for _, suffix := range s.WritableSuffixes {
		if suffix == "" || strings.ContainsAny(suffix, "/\x00") {
			return fmt.Errorf("writableSuffixes: invalid suffix %q", suffix)
		}
	}
	if s.GpuJobs != nil {
		if err := s.GpuJobs.validate(); err != nil {
			return err
		}
	}
	if s.Allocation != nil {
		if err := s.Allocation.validate(); err != nil {
			return err
		}
	}
	if s.Log != "" && !filepath.IsAbs(s.Log) {
		return fmt.Errorf("log must be an absolute path (got %q)", s.Log)
	}
	return nil
}
