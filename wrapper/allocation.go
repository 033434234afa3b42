package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// GPUs handed out per task (issue 41; the contract is docs/runc-wrapper.md, "Allocation"). The
// settings' `allocation` names the worker's units; a task's container asks for some with
// GPU_WORKERS_GPUS, holds them (holds.go) and gets only their variables and nodes. Absent: every
// container gets every selected GPU, as before.

// askEnv is the task's param that asks for units.
const askEnv = "GPU_WORKERS_GPUS"

// maxWaitSeconds stays well inside Concourse's 5-minute create timeout (containerd request and
// garden client both), so a create that cannot get units fails with our reason, not theirs.
const maxWaitSeconds = 240

type allocation struct {
	Mode              string            `json:"mode"`
	PerTask           int               `json:"perTask"`
	Replicas          int               `json:"replicas"`
	WaitSeconds       int               `json:"waitSeconds"`
	VisibleEnv        string            `json:"visibleEnv"`
	HolderEnv         map[string]string `json:"holderEnv"`
	HolderDeviceNodes []string          `json:"holderDeviceNodes"`
	Units             []allocUnit       `json:"units"`
	HealthFile        string            `json:"healthFile"`
}

// allocUnit is a selected GPU, or one MIG instance of one.
type allocUnit struct {
	ID          string       `json:"id"`
	Gpu         string       `json:"gpu"`
	Visible     string       `json:"visible"`
	DeviceNodes []string     `json:"deviceNodes"`
	DeviceLinks []deviceLink `json:"deviceLinks"`
	GpuNodes    []string     `json:"gpuNodes"`
	// Env and Mounts are what its holder gets besides (mps: its GPU's daemon's pipe folder,
	// and its shm at /dev/shm). A unit whose mount source is not a folder is handed out to no one.
	Env    map[string]string `json:"env"`
	Mounts []unitMount       `json:"mounts"`
}

// unitMount is a host folder bound read-write, without devices, setuid or exec, into a holder.
type unitMount struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

var unitID = regexp.MustCompile(`^[0-9]{1,8}(:[0-9]{1,8})?$`)

func (a *allocation) validate() error {
	switch a.Mode {
	case "exclusive":
		if a.Replicas != 1 {
			return fmt.Errorf("allocation.replicas must be 1 in mode exclusive (got %d)", a.Replicas)
		}
	case "timeSlice", "mps":
		if a.Replicas < 1 {
			return fmt.Errorf("allocation.replicas must be at least 1 (got %d)", a.Replicas)
		}
		if a.Mode == "mps" && a.PerTask > 1 {
			return fmt.Errorf("allocation.perTask must be 0 or 1 in mode mps (got %d)", a.PerTask)
		}
	default:
		return fmt.Errorf("allocation.mode: expected exclusive, timeSlice or mps (got %q)", a.Mode)
	}
	if len(a.Units) == 0 {
		return fmt.Errorf("allocation.units: expected at least one unit")
	}
	if a.PerTask < 0 || a.PerTask > len(a.Units) {
		return fmt.Errorf("allocation.perTask must be 0 to the number of units, %d (got %d)", len(a.Units), a.PerTask)
	}
	if a.WaitSeconds < 0 || a.WaitSeconds > maxWaitSeconds {
		return fmt.Errorf("allocation.waitSeconds must be 0 to %d (got %d)", maxWaitSeconds, a.WaitSeconds)
	}
	// "": no variable names a holder's units (Intel's: a container sees the GPUs whose nodes it has).
	if a.VisibleEnv != "" && !validEnvName(a.VisibleEnv) {
		return fmt.Errorf("allocation.visibleEnv: invalid variable name %q", a.VisibleEnv)
	}
	for name := range a.HolderEnv {
		if !validEnvName(name) || name == a.VisibleEnv {
			return fmt.Errorf("allocation.holderEnv: invalid variable name %q", name)
		}
	}
	if err := absolutePaths("allocation.holderDeviceNodes", a.HolderDeviceNodes); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, u := range a.Units {
		at := fmt.Sprintf("allocation.units[%d]", i)
		if !unitID.MatchString(u.ID) {
			return fmt.Errorf("%s.id: expected digits or digits:digits (got %q)", at, u.ID)
		}
		if seen[u.ID] {
			return fmt.Errorf("%s.id: %q is named twice", at, u.ID)
		}
		seen[u.ID] = true
		if !isGpuIndex(u.Gpu) {
			return fmt.Errorf("%s.gpu: %q is not a GPU index", at, u.Gpu)
		}
		if (u.Visible == "") != (a.VisibleEnv == "") || strings.ContainsAny(u.Visible, ",\x00\n") {
			return fmt.Errorf("%s.visible: expected a value without commas, empty exactly when visibleEnv is (got %q)", at, u.Visible)
		}
		if err := absolutePaths(at+".deviceNodes", u.DeviceNodes); err != nil {
			return err
		}
		if err := validDeviceLinks(at+".deviceLinks", u.DeviceLinks); err != nil {
			return err
		}
		if err := absolutePaths(at+".gpuNodes", u.GpuNodes); err != nil {
			return err
		}
		for name := range u.Env {
			if _, holders := a.HolderEnv[name]; !validEnvName(name) || name == a.VisibleEnv || holders {
				return fmt.Errorf("%s.env: invalid variable name %q (the visible variable and the holders' own are set apart)", at, name)
			}
		}
		for j, m := range u.Mounts {
			if !normalAbsolute(m.Source) || !normalAbsolute(m.Destination) || m.Destination == "/" {
				return fmt.Errorf("%s.mounts[%d]: source and destination must be absolute paths in normal form, the destination not / (got %q, %q)", at, j, m.Source, m.Destination)
			}
		}
	}
	if a.HealthFile != "" && !normalAbsolute(a.HealthFile) {
		return fmt.Errorf("allocation.healthFile must be an absolute path in normal form (got %q)", a.HealthFile)
	}
	return nil
}

func normalAbsolute(p string) bool { return filepath.IsAbs(p) && filepath.Clean(p) == p }

func validEnvName(name string) bool { return name != "" && !strings.ContainsAny(name, "=\x00") }

func absolutePaths(at string, paths []string) error {
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("%s: %q is not an absolute path", at, p)
		}
	}
	return nil
}

// taskMount: Concourse mounts a task's working folder, /tmp/build/<8 hex digits of its name's
// sha256>, into the task's container; get, put and run steps use other names, and a check none.
var taskMount = regexp.MustCompile(`^/tmp/build/[0-9a-f]{8}(/|$)`)

// isTaskContainer: a mount of the spec lands at a task's working folder or below it.
func isTaskContainer(spec object) (bool, error) {
	mounts, err := getArray(spec, "mounts")
	if err != nil {
		return false, err
	}
	for _, raw := range mounts {
		var m struct {
			Destination string `json:"destination"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return false, fmt.Errorf("mounts: an entry is not an object")
		}
		if taskMount.MatchString(filepath.Clean(m.Destination)) {
			return true, nil
		}
	}
	return false, nil
}

// specEnv is the spec's process.env (nil when it has none).
func specEnv(spec object) ([]string, error) {
	process, err := getObject(spec, "process")
	if err != nil || process == nil {
		return nil, err
	}
	var env []string
	if raw, ok := process["env"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &env); err != nil {
			return nil, fmt.Errorf("process.env is not a list of strings")
		}
	}
	return env, nil
}

// askOf is how many units a container wants: the last GPU_WORKERS_GPUS in its env (a task's
// param comes after its image's); without one, perTask for a task's container and none for any
// other. Concourse gives the param to no check, get or put container: their env is the build's
// metadata and their image's (docs/gpu-allocation.md#which-containers-hold-no-gpu-and-how-the-wrapper-tells).
func (a *allocation) askOf(spec object) (int, error) {
	env, err := specEnv(spec)
	if err != nil {
		return 0, err
	}
	value, asked := "", false
	for _, kv := range env {
		if strings.HasPrefix(kv, askEnv+"=") {
			value, asked = kv[len(askEnv)+1:], true
		}
	}
	if asked {
		n, err := parseAsk(value, len(a.Units))
		if err == nil && n > 1 && a.Mode == "mps" {
			// One daemon per GPU, and a client talks to the one its pipe folder names.
			return 0, fmt.Errorf("%s=%s: in mode mps a container holds one GPU at most (its MPS client talks to one GPU's daemon); this worker has %d", askEnv, value, len(a.Units))
		}
		return n, err
	}
	task, err := isTaskContainer(spec)
	if err != nil || !task {
		return 0, err
	}
	return a.PerTask, nil
}

// parseAsk reads an ask: digits, at most capacity.
func parseAsk(value string, capacity int) (int, error) {
	if value == "" || strings.Trim(value, "0123456789") != "" {
		return 0, fmt.Errorf("%s=%q is not a whole number of GPUs (this worker has %d)", askEnv, value, capacity)
	}
	trimmed := strings.TrimLeft(value, "0")
	n := 0
	for _, c := range trimmed {
		n = n*10 + int(c-'0')
		if n > capacity || len(trimmed) > 9 {
			return 0, fmt.Errorf("%s=%s asks more GPUs than this worker has (%d)", askEnv, value, capacity)
		}
	}
	return n, nil
}

// holderEdits is the environment of a container holding units (none: every GPU variable unset).
func (a *allocation) holderEdits(s *settings, units []allocUnit) (map[string]string, []string) {
	env := make(map[string]string, len(s.Env)+len(a.HolderEnv)+1)
	for k, v := range s.Env {
		env[k] = v
	}
	var gpuNames []string
	if a.VisibleEnv != "" {
		gpuNames = append(gpuNames, a.VisibleEnv)
	}
	for name := range a.HolderEnv {
		gpuNames = append(gpuNames, name)
	}
	sort.Strings(gpuNames)
	var unset []string
	if len(units) == 0 {
		for _, name := range gpuNames {
			delete(env, name)
		}
		unset = append(unset, s.UnsetEnv...)
		for _, name := range gpuNames {
			if !contains(unset, name) {
				unset = append(unset, name)
			}
		}
		return env, unset
	}
	for k, v := range a.HolderEnv {
		env[k] = v
	}
	visible := make([]string, len(units))
	for i, u := range units {
		visible[i] = u.Visible
		for k, v := range u.Env {
			env[k] = v
		}
	}
	if a.VisibleEnv != "" {
		env[a.VisibleEnv] = strings.Join(visible, ",")
	}
	for _, name := range s.UnsetEnv {
		if _, set := env[name]; !set {
			unset = append(unset, name)
		}
	}
	return env, unset
}

// heldDeviceNodes: the nodes every holder gets, then each held unit's.
func (a *allocation) heldDeviceNodes(units []allocUnit) []string {
	if len(units) == 0 {
		return nil
	}
	nodes := append([]string(nil), a.HolderDeviceNodes...)
	for _, u := range units {
		for _, n := range u.DeviceNodes {
			if !contains(nodes, n) {
				nodes = append(nodes, n)
			}
		}
	}
	return nodes
}

// heldDeviceLinks: each held unit's links, in order.
func heldDeviceLinks(units []allocUnit) []deviceLink {
	var links []deviceLink
	for _, u := range units {
		links = append(links, u.DeviceLinks...)
	}
	return links
}

// heldMounts: each held unit's folders, in order.
func heldMounts(units []allocUnit) []unitMount {
	var mounts []unitMount
	for _, u := range units {
		mounts = append(mounts, u.Mounts...)
	}
	return mounts
}

// heldGpuNodes are the only GPU nodes a holder's spec may carry.
func heldGpuNodes(units []allocUnit) []string {
	var nodes []string
	for _, u := range units {
		nodes = append(nodes, u.GpuNodes...)
	}
	return nodes
}

// heldGpus: the GPU indexes of the units, each once, in order (the GPU job records).
func heldGpus(units []allocUnit) []string {
	var gpus []string
	for _, u := range units {
		if !contains(gpus, u.Gpu) {
			gpus = append(gpus, u.Gpu)
		}
	}
	return gpus
}
