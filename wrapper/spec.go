package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// edits is everything the wrapper changes in one container's spec.
type edits struct {
	Env      map[string]string
	UnsetEnv []string
	Datasets *datasets
	Devices  []hostDevice
	// Groups are supplementary groups of the process (container gids): those of its GPU nodes (devicegroups.go).
	Groups []uint32
	// UnitMounts are the held units' folders, bound after every other mount (so the
	// /dev/shm an MPS unit brings covers the spec's own).
	UnitMounts []unitMount
	// RecursiveReadOnly adds "rro" to the root's read-only mount, so that every mount
	// nested inside it is read-only too (the runtime and kernel must support it: recursive.go).
	RecursiveReadOnly bool
}

// editSpec applies e to the spec and returns the new document, and notes for the log.
// Only process.env, mounts, linux.devices and linux.resources.devices change; every other
// member, known or not, is kept as it was.
func editSpec(spec object, e edits) ([]byte, []string, error) {
	if err := editProcessEnv(spec, e); err != nil {
		return nil, nil, err
	}
	var notes []string
	note, err := addMounts(spec, e.Datasets, e.RecursiveReadOnly)
	if err != nil {
		return nil, nil, err
	}
	if note != "" {
		notes = append(notes, note)
	}
	if len(e.UnitMounts) > 0 {
		if err := appendUnitMounts(spec, e.UnitMounts); err != nil {
			return nil, nil, err
		}
	}
	if len(e.Devices) > 0 {
		if err := addDevices(spec, e.Devices); err != nil {
			return nil, nil, err
		}
	}
	size := 2
	for k, v := range spec {
		size += len(k) + len(v) + 4
	}
	return appendObject(make([]byte, 0, size), spec), notes, nil
}

// editProcessEnv applies the process edits (environment, groups) to the spec's process.
func editProcessEnv(spec object, e edits) error {
	if len(e.Env) == 0 && len(e.UnsetEnv) == 0 && len(e.Groups) == 0 {
		return nil
	}
	process, err := getObject(spec, "process")
	if err != nil {
		return err
	}
	if err := editProcessObject(process, e); err != nil {
		return err
	}
	return set(spec, "process", process)
}

// editProcess applies the process edits to a process of its own, as `runc exec
// --process` reads it: Concourse starts a task's command that way, its params in the env.
func editProcess(process object, e edits) ([]byte, error) {
	if err := editProcessObject(process, e); err != nil {
		return nil, err
	}
	return appendObject(nil, process), nil
}

func editProcessObject(process object, e edits) error {
	if len(e.Env) > 0 || len(e.UnsetEnv) > 0 {
		if err := editEnv(process, e); err != nil {
			return err
		}
	}
	if len(e.Groups) > 0 {
		return addGroups(process, e.Groups)
	}
	return nil
}

// editEnv sets every wanted variable once in process.env (dropping all earlier entries of
// that name, so an image's or a task's NVIDIA_VISIBLE_DEVICES=all cannot survive) and
// removes unsetEnv.
func editEnv(process object, e edits) error {
	var env []string
	if raw, ok := process["env"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &env); err != nil {
			return fmt.Errorf("process.env is not a list of strings")
		}
	}
	drop := make(map[string]bool, len(e.Env)+len(e.UnsetEnv))
	for name := range e.Env {
		drop[name] = true
	}
	for _, name := range e.UnsetEnv {
		drop[name] = true
	}
	out := make([]string, 0, len(env)+len(e.Env))
	for _, kv := range env {
		name := kv
		if i := strings.IndexByte(kv, '='); i >= 0 {
			name = kv[:i]
		}
		if !drop[name] {
			out = append(out, kv)
		}
	}
	names := make([]string, 0, len(e.Env))
	for name := range e.Env {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, name+"="+e.Env[name])
	}
	return set(process, "env", out)
}

// addMounts adds the dataset mounts: the root once, read-only (all the way down with
// "rro"), then a read-only bind per host mount point inside a read-only dataset where rro
// is missing (nested.go), then a read-write bind per writable folder. They go before the
// first of the spec's own mounts that lies inside the root, so those stay visible on top.
// A destination the spec already mounts is left to the spec; a spec that mounts the root
// itself gets no dataset mounts (the note says so). The options are separate items
// ("rbind", "ro"): one "rbind,ro" string would be passed to mount(2) as data and fail. Each
// is "rprivate": a bind of a shared host mount would otherwise be its slave, and a mount the
// host makes below it later (an automount, an NFS share, an admin's bind) would appear in the
// running container read-write, under a read-only dataset, since "ro" and "rro" cover only the
// mounts there at create.
func addMounts(spec object, d *datasets, recursiveReadOnly bool) (note string, err error) {
	if d == nil {
		return "", nil
	}
	existing, err := getArray(spec, "mounts")
	if err != nil {
		return "", err
	}
	inside := d.Root + "/"
	insertAt := len(existing)
	taken := map[string]bool{}
	size := 2
	for i, raw := range existing {
		var m struct {
			Destination string `json:"destination"`
			Source      string `json:"source"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return "", fmt.Errorf("mounts: an entry is not an object")
		}
		dest := filepath.Clean(m.Destination)
		if dest == d.Root {
			return fmt.Sprintf("dataset root %s: the container's spec already mounts it (from %q), so it is left to the spec and no dataset mounts are added", d.Root, m.Source), nil
		}
		if strings.HasPrefix(dest, inside) {
			taken[dest] = true
			if insertAt == len(existing) {
				insertAt = i
			}
		}
		size += len(raw) + 1
	}
	size += 2 * (len(d.Root) + len(d.Source) + 96)
	for _, name := range d.Writable {
		size += 2*len(name) + len(d.Root) + len(d.Source) + 96 // escapes are rare
	}
	for _, rel := range d.NestedReadOnly {
		size += 2*len(rel) + len(d.Root) + len(d.Source) + 96
	}
	buf := make([]byte, 0, size)
	buf = append(buf, '[')
	for _, raw := range existing[:insertAt] {
		buf = append(append(buf, raw...), ',')
	}
	readOnly := `"rbind","ro","rprivate"`
	if recursiveReadOnly {
		readOnly = `"rbind","ro","rro","rprivate"`
	}
	buf = appendMount(buf, d.Root, d.Source, "", readOnly)
	for _, rel := range d.NestedReadOnly {
		if !taken[d.Root+"/"+rel] {
			buf = appendMount(append(buf, ','), d.Root, d.Source, rel, `"rbind","ro","rprivate"`)
		}
	}
	for _, name := range d.Writable {
		if !taken[d.Root+"/"+name] {
			buf = appendMount(append(buf, ','), d.Root, d.Source, name, `"rbind","rw","rprivate"`)
		}
	}
	for _, raw := range existing[insertAt:] {
		buf = append(append(buf, ','), raw...)
	}
	spec["mounts"] = append(buf, ']')
	return "", nil
}

// appendUnitMounts binds each folder at the end of the mounts: read-write (the daemon's pipes
// and shared memory are written both ways), with no device nodes, setuid or exec through it.
func appendUnitMounts(spec object, mounts []unitMount) error {
	existing, err := getArray(spec, "mounts")
	if err != nil {
		return err
	}
	buf := []byte{'['}
	for _, raw := range existing {
		buf = append(append(buf, raw...), ',')
	}
	for i, m := range mounts {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendMount(buf, m.Destination, m.Source, "", `"rbind","rw","nosuid","nodev","noexec","rprivate"`)
	}
	spec["mounts"] = append(buf, ']')
	return nil
}

// appendMount writes one bind mount of source/rel at root/rel (rel "" for the root itself).
func appendMount(buf []byte, root, source, rel, options string) []byte {
	buf = append(buf, `{"destination":`...)
	buf = appendPath(buf, root, rel)
	buf = append(buf, `,"type":"bind","source":`...)
	buf = appendPath(buf, source, rel)
	buf = append(buf, `,"options":[`...)
	buf = append(buf, options...)
	return append(buf, "]}"...)
}

func appendPath(buf []byte, dir, rel string) []byte {
	if rel == "" {
		return appendString(buf, dir)
	}
	return appendString(buf, dir+"/"+rel)
}

type specDevice struct {
	Path     string `json:"path"`
	Type     string `json:"type"`
	Major    int64  `json:"major"`
	Minor    int64  `json:"minor"`
	FileMode uint32 `json:"fileMode"`
	UID      uint32 `json:"uid"`
	GID      uint32 `json:"gid"`
}

type deviceRule struct {
	Allow  bool   `json:"allow"`
	Type   string `json:"type"`
	Major  int64  `json:"major"`
	Minor  int64  `json:"minor"`
	Access string `json:"access"`
}

// addDevices creates each node in the container (replacing an entry of the same path)
// and allows it in the device cgroup.
func addDevices(spec object, devices []hostDevice) error {
	linux, err := getObject(spec, "linux")
	if err != nil {
		return err
	}
	list, err := getArray(linux, "devices")
	if err != nil {
		return fmt.Errorf("linux.%w", err)
	}
	wanted := make(map[string]bool, len(devices))
	for _, d := range devices {
		wanted[filepath.Clean(d.Path)] = true
	}
	kept := list[:0]
	for _, raw := range list {
		var d struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			return fmt.Errorf("linux.devices: an entry is not an object")
		}
		if !wanted[filepath.Clean(d.Path)] {
			kept = append(kept, raw)
		}
	}
	resources, err := getObject(linux, "resources")
	if err != nil {
		return fmt.Errorf("linux.%w", err)
	}
	rules, err := getArray(resources, "devices")
	if err != nil {
		return fmt.Errorf("linux.resources.%w", err)
	}
	present := make(map[string]bool, len(rules))
	for _, raw := range rules {
		present[string(raw)] = true
	}
	for _, d := range devices {
		raw, err := marshal(specDevice{Path: d.Path, Type: d.Type, Major: d.Major, Minor: d.Minor, FileMode: d.FileMode, UID: d.UID, GID: d.GID})
		if err != nil {
			return err
		}
		kept = append(kept, raw)
		rule, err := marshal(deviceRule{Allow: true, Type: d.Type, Major: d.Major, Minor: d.Minor, Access: "rwm"})
		if err != nil {
			return err
		}
		if !present[string(rule)] {
			present[string(rule)] = true
			rules = append(rules, rule)
		}
	}
	if err := set(linux, "devices", kept); err != nil {
		return err
	}
	if err := set(resources, "devices", rules); err != nil {
		return err
	}
	if err := set(linux, "resources", resources); err != nil {
		return err
	}
	return set(spec, "linux", linux)
}
