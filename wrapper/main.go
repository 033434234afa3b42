// Command runc-wrapper sits where containerd's shim looks for runc. On `create` and `run`
// it adds the worker's dataset mounts, GPU environment and device nodes to the bundle's
// config.json, then execs the real runtime with the same arguments; every other call is
// passed straight through. Its settings come only from a root-owned file at a path
// fixed at build time, never from the image, the bundle or the caller's environment.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// markerEnv is set in the real runtime's environment; seeing it on entry means the
// "real" runtime (or one it calls, such as nvidia-container-runtime) called us again.
const markerEnv = "GPU_WORKERS_WRAPPER_ACTIVE"

const prefix = "gpu-workers runc wrapper: "

func main() {
	args := os.Args[1:]
	inv := parseArgs(args)
	logPath := defaultLogPath
	fail := func(format string, a ...interface{}) {
		line := prefix + inv.Subcommand + ": " + fmt.Sprintf(format, a...)
		if inv.Subcommand == "" {
			line = prefix + fmt.Sprintf(format, a...)
		}
		line = strings.ReplaceAll(line, "\n", `\n`) // one line, whatever a path holds
		fmt.Fprintln(os.Stderr, line)
		appendLog(logPath, line)
		os.Exit(1)
	}
	if _, set := os.LookupEnv(markerEnv); set {
		fail("refusing to run: %s is set, so the real runtime called this wrapper again (a loop); the runtime it calls must be the real runc, never the wrapper", markerEnv)
	}
	s, err := loadSettings(configPath)
	if err != nil {
		fail("%v", err)
	}
	logPath = s.Log
	real, err := checkRealRuntime(s.RealRuntime)
	if err != nil {
		fail("%v", err)
	}
	if editsBundle(inv.Subcommand) {
		notes, err := prepareBundle(inv.Bundle, s)
		for _, n := range notes {
			appendLog(logPath, prefix+inv.Subcommand+": "+n)
		}
		if err != nil {
			fail("%v", err)
		}
	}
	argv := append([]string{real}, args...)
	env := append(os.Environ(), markerEnv+"=1")
	err = syscall.Exec(real, argv, env)
	fail("cannot exec the real runtime %s: %v", real, err)
}

// checkRealRuntime resolves the configured runtime and makes sure it is an executable
// file that is not this very program (which would call itself forever).
func checkRealRuntime(path string) (string, error) {
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("real runtime %s is missing: %v", path, err)
	}
	info, err := os.Stat(resolved)
	if err != nil {
		return "", fmt.Errorf("real runtime %s is missing: %v", path, err)
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("real runtime %s is not an executable file", path)
	}
	if self, err := os.Stat("/proc/self/exe"); err == nil && os.SameFile(self, info) {
		return "", fmt.Errorf("refusing to run: the real runtime %s is this wrapper itself (a loop); point realRuntime in %s at the real runc", path, configPath)
	}
	return resolved, nil
}

// prepareBundle edits <bundle>/config.json. Everything that can fail is done before the
// file is replaced, so on error the bundle is left exactly as it was.
func prepareBundle(bundle string, s *settings) (notes []string, err error) {
	if bundle == "" {
		bundle = "."
	}
	if abs, err := filepath.Abs(bundle); err == nil {
		bundle = abs
	}
	path := filepath.Join(bundle, "config.json")
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %v", path, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %v", path, err)
	}
	e := edits{Env: s.Env, UnsetEnv: s.UnsetEnv}
	for _, p := range s.DeviceNodes {
		d, err := statDevice(p)
		if err != nil {
			return nil, err
		}
		e.Devices = append(e.Devices, d)
	}
	e.Mounts, notes, err = scanDatasets(s.DatasetRoot, s.WritableSuffixes)
	if err != nil {
		return notes, err
	}
	out, err := editSpec(data, e)
	if err != nil {
		return notes, fmt.Errorf("cannot edit %s: %v", path, err)
	}
	if err := writeAtomically(path, out, info); err != nil {
		return notes, fmt.Errorf("cannot write %s: %v", path, err)
	}
	return notes, nil
}

// appendLog adds one line to the log file; best effort, the line is on stderr anyway.
func appendLog(path, line string) {
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		if os.MkdirAll(filepath.Dir(path), 0o755) != nil {
			return
		}
		if f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640); err != nil {
			return
		}
	}
	defer f.Close()
	line = strings.ReplaceAll(line, "\n", `\n`) // one line per event, even when a name holds a newline
	fmt.Fprintf(f, "%s %s\n", time.Now().UTC().Format(time.RFC3339), line)
}
