// Command runc-wrapper sits where containerd's shim looks for runc. On `create` and `run`
// it refuses a spec that could undo the datasets' modes (privileged.go), adds the worker's
// dataset mounts, GPU environment and device nodes to the bundle's config.json, then execs
// the real runtime with the same arguments (with `allocation`, a task's container first holds
// the GPU units it asks for and gets only theirs: allocation.go, holds.go); on `exec` it gives the process file the same
// refusal and GPU environment (a task's params come that way); every other call is
// passed straight to the real runc by the C front (front.c) before the Go runtime starts (which
// at `delete` first removes the container's GPU job records, gpujobs.go).
// Its settings come only from a root-owned file at a path fixed at build time, never from
// the image, the bundle or the caller's environment.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
)

// markerEnv is set in the real runtime's environment; seeing it on entry means the
// "real" runtime (or one it calls, such as nvidia-container-runtime) called us again.
const markerEnv = "GPU_WORKERS_WRAPPER_ACTIVE"

const prefix = "gpu-workers runc wrapper: "

// heldFor is the container whose GPU hold this call wrote, until the real runtime is exec'ed.
var heldFor string

// reporter says why a call failed: one line on stderr (what containerd shows) and the same
// line in the log.
type reporter struct {
	sub string
	log string
}

func (r *reporter) line(format string, a ...interface{}) string {
	if r.sub == "" {
		return prefix + fmt.Sprintf(format, a...)
	}
	return prefix + r.sub + ": " + fmt.Sprintf(format, a...)
}

func (r *reporter) note(format string, a ...interface{}) {
	appendLog(r.log, r.line(format, a...))
}

func (r *reporter) fail(format string, a ...interface{}) {
	if heldFor != "" {
		// Nothing runs: the units go back (a create that dies here by a signal is swept later, holds.go).
		releaseHold(heldFor)
	}
	line := strings.ReplaceAll(r.line(format, a...), "\n", `\n`) // one line, whatever a path holds
	fmt.Fprintln(os.Stderr, line)
	appendLog(r.log, line)
	os.Exit(1)
}

// main runs on the process's first thread, so the real runtime is exec'ed from it: an exec from
// another thread shows the process to a reader of /proc as a zombie for a moment (holds.go, notReaped).
func init() { runtime.LockOSThread() }

func main() {
	args := os.Args[1:]
	inv, argsErr := parseArgs(args)
	r := &reporter{sub: inv.Subcommand, log: defaultLogPath}
	if configPath == "" {
		r.fail("built without its paths; build it with scripts/build-wrapper.sh")
	}
	if _, set := os.LookupEnv(markerEnv); set {
		r.fail("refusing to run: %s is set, so the real runtime called this wrapper again (a loop); the runtime it calls must be the real runc, never the wrapper", markerEnv)
	}
	if !editsBundle(inv.Subcommand) && !editsProcess(inv.Subcommand) {
		// front.c passes these calls through before Go starts; this is the same rule, for
		// a build without the front. The settings are not read.
		execRuntime(r, "real runc", realRunc, args)
	}
	if argsErr != nil {
		// What the wrapper edits must be what runc runs: a call it cannot read as runc does runs nothing.
		r.fail("%v", argsErr)
	}
	// A life of a few milliseconds: a garbage collection would cost more than the memory.
	debug.SetGCPercent(-1)
	s, err := loadSettings(configPath)
	if err != nil {
		r.fail("%v", err)
	}
	r.log = s.Log
	if editsProcess(inv.Subcommand) {
		// A process started in a running container gets the same refusal and environment as its first one.
		if err := prepareProcess(inv, s); err != nil {
			r.fail("%v", err)
		}
		execRuntime(r, "real runc", realRunc, args)
	}
	real, err := checkRealRuntime(s.RealRuntime)
	if err != nil {
		r.fail("%v", err)
	}
	if err := prepareBundle(inv, s, real, r); err != nil {
		r.fail("%v", err)
	}
	execRuntime(r, "real runtime", real, args)
}

// execRuntime replaces this process with the runtime, marked so that it cannot call us again.
func execRuntime(r *reporter, what, runtime string, args []string) {
	argv := append([]string{runtime}, args...)
	env := append(os.Environ(), markerEnv+"=1")
	err := syscall.Exec(runtime, argv, env)
	r.fail("cannot exec the %s %s: %v", what, runtime, err)
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
func prepareBundle(inv invocation, s *settings, real string, r *reporter) error {
	bundle := inv.Bundle
	if bundle == "" {
		bundle = "."
	}
	if abs, err := filepath.Abs(bundle); err == nil {
		bundle = abs
	}
	path := filepath.Join(bundle, "config.json")
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("cannot read %s: %v", path, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cannot read %s: %v", path, err)
	}
	spec, err := parseSpec(data)
	if err != nil {
		return fmt.Errorf("cannot edit %s: %v", path, err)
	}
	if err := specKeysProblem(data, specRoot, ""); err != nil {
		return fmt.Errorf("refusing %s: %v", path, err)
	}
	if !s.AllowPrivileged {
		found, err := containerPrivileges(spec)
		if err != nil {
			return fmt.Errorf("cannot edit %s: %v", path, err)
		}
		if len(found) > 0 {
			return refusal(fmt.Sprintf("container %q", inv.ID), found)
		}
	}
	e := edits{Env: s.Env, UnsetEnv: s.UnsetEnv}
	gpuNodes, deviceNodes, deviceLinks, jobs := s.GpuNodes, s.DeviceNodes, s.DeviceLinks, s.GpuJobs
	if a := s.Allocation; a != nil {
		n, err := a.askOf(spec)
		if err != nil {
			return fmt.Errorf("container %q: %v", inv.ID, err)
		}
		var units []allocUnit
		if n > 0 {
			if units, err = acquire(a, inv.ID, runcRoot(globalRoot(os.Args[1:])), n); err != nil {
				return fmt.Errorf("container %q: %v", inv.ID, err)
			}
			heldFor = inv.ID
		}
		e.Env, e.UnsetEnv = a.holderEdits(s, units)
		e.UnitMounts = heldMounts(units)
		gpuNodes = heldGpuNodes(units)
		deviceNodes = append(append([]string(nil), s.DeviceNodes...), a.heldDeviceNodes(units)...)
		deviceLinks = append(append([]deviceLink(nil), s.DeviceLinks...), heldDeviceLinks(units)...)
		if jobs != nil {
			// The records name exactly the GPUs held.
			jobs = nil
			if len(units) > 0 {
				jobs = &gpuJobs{Gpus: heldGpus(units), MappingDir: s.GpuJobs.MappingDir}
			}
		}
	}
	if found, err := specFeatures(spec, s, gpuNodes); err != nil {
		return fmt.Errorf("cannot edit %s: %v", path, err)
	} else if len(found) > 0 {
		return featureRefusal(fmt.Sprintf("container %q", inv.ID), found)
	}
	if e.Devices, err = containerDevices(deviceNodes, deviceLinks); err != nil {
		return err
	}
	if groups := deviceGroups(e.Devices); len(groups) > 0 {
		maps, err := specGidMappings(spec)
		if err != nil {
			return fmt.Errorf("cannot edit %s: %v", path, err)
		}
		var unmapped []uint32
		e.Groups, unmapped = containerGids(groups, maps)
		for _, g := range unmapped {
			r.note("container %q: its user namespace maps no gid for host group %d, which opens its GPU nodes: its processes open them only as the nodes' mode gives everyone", inv.ID, g)
		}
	}
	var notes []string
	e.Datasets, notes, err = scanDatasets(s.DatasetRoot, s.WritableSuffixes)
	for _, n := range notes {
		r.note("%s", n)
	}
	if err != nil {
		return err
	}
	if e.Datasets != nil {
		rro := recursiveReadOnly(real)
		e.RecursiveReadOnly = rro.Supported
		if !rro.Supported {
			if rro.Probed {
				r.note("read-only datasets are made read-only mount by mount, as the runtime cannot make the root read-only all the way down: %s; each host mount point inside a read-only dataset gets a read-only mount of its own", rro.Why)
			}
			if e.Datasets.NestedReadOnly, err = nestedReadOnly(e.Datasets); err != nil {
				return err
			}
		}
	}
	out, notes, err := editSpec(spec, e)
	if err != nil {
		return fmt.Errorf("cannot edit %s: %v", path, err)
	}
	for _, n := range notes {
		r.note("%s", n)
	}
	if err := writeAtomically(path, out, info); err != nil {
		return fmt.Errorf("cannot write %s: %v", path, err)
	}
	if jobs != nil {
		// For metrics only: a failure is logged, and the container is created all the same.
		if err := recordGpuJobs(jobs, inv.ID, runcRoot(globalRoot(os.Args[1:])), spec); err != nil {
			r.note("%v", err)
		}
	}
	return nil
}

// prepareProcess checks and edits the process file of `runc exec --process FILE`, the way
// containerd's shim starts every process after the first (Concourse's tasks among them):
// the same refusal of privileges as a container's spec, and the same environment. Without
// a process file the process is on the command line, runc's own use by hand: left as it is.
func prepareProcess(inv invocation, s *settings) error {
	path := inv.Process
	e := edits{Env: s.Env, UnsetEnv: s.UnsetEnv}
	nodes, links := s.DeviceNodes, s.DeviceLinks
	if a := s.Allocation; a != nil {
		// The container's hold says its units (none: no GPU), whatever the process file asks.
		units, err := holdForExec(a, inv.ID)
		if err != nil {
			return err
		}
		e.Env, e.UnsetEnv = a.holderEdits(s, units)
		nodes = append(append([]string(nil), s.DeviceNodes...), a.heldDeviceNodes(units)...)
		links = append(append([]deviceLink(nil), s.DeviceLinks...), heldDeviceLinks(units)...)
	}
	if path == "" {
		return nil
	}
	// The groups the create gave the init. A node gone since (a GPU off the bus) or an init that
	// has exited gives none: the exec is not refused for it (runc refuses what it cannot run).
	if devices, err := containerDevices(nodes, links); err == nil {
		if groups := deviceGroups(devices); len(groups) > 0 {
			if maps, err := runningGidMappings(runcRoot(globalRoot(os.Args[1:])), inv.ID); err == nil {
				e.Groups, _ = containerGids(groups, maps)
			}
		}
	}
	editsProcess := len(e.Env) > 0 || len(e.UnsetEnv) > 0 || len(e.Groups) > 0
	if !editsProcess && s.AllowPrivileged {
		return nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("cannot read the process file %s: %v", path, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cannot read the process file %s: %v", path, err)
	}
	process, err := parseSpec(data)
	if err != nil {
		return fmt.Errorf("cannot edit the process file %s: %v", path, err)
	}
	if err := specKeysProblem(data, processLevel, "process"); err != nil {
		return fmt.Errorf("refusing the process file %s: %v", path, err)
	}
	if !s.AllowPrivileged {
		found, err := processPrivileges(process)
		if err != nil {
			return fmt.Errorf("cannot edit the process file %s: %v", path, err)
		}
		if len(found) > 0 {
			return refusal(fmt.Sprintf("process %s for container %q", path, inv.ID), found)
		}
	}
	if !editsProcess {
		return nil
	}
	out, err := editProcess(process, e)
	if err != nil {
		return fmt.Errorf("cannot edit the process file %s: %v", path, err)
	}
	if err := writeAtomically(path, out, info); err != nil {
		return fmt.Errorf("cannot write the process file %s: %v", path, err)
	}
	return nil
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
