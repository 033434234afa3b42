package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// object is a JSON object whose members we do not know: each keeps its exact value.
type object map[string]json.RawMessage

// edits is everything the wrapper changes in one container's spec.
type edits struct {
	Env      map[string]string
	UnsetEnv []string
	Mounts   []datasetMount
	Devices  []hostDevice
	// RecursiveReadOnly adds "rro" to read-only dataset mounts, so that a mount nested
	// inside one is read-only too (the runtime and kernel must support it: recursive.go).
	RecursiveReadOnly bool
}

// editSpec applies e to the OCI spec in data and returns the new document. Only
// process.env, mounts, linux.devices and linux.resources.devices change; every other
// member, known or not, is kept as it was.
func editSpec(data []byte, e edits) ([]byte, error) {
	var spec object
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if spec == nil {
		return nil, fmt.Errorf("not a JSON object: null")
	}
	if err := editProcessEnv(spec, e); err != nil {
		return nil, err
	}
	if err := addMounts(spec, e.Mounts, e.RecursiveReadOnly); err != nil {
		return nil, err
	}
	if len(e.Devices) > 0 {
		if err := addDevices(spec, e.Devices); err != nil {
			return nil, err
		}
	}
	size := 2
	for k, v := range spec {
		size += len(k) + len(v) + 4
	}
	return appendObject(make([]byte, 0, size), spec), nil
}

// appendObject writes o with its members in key order. Every value is already JSON (kept
// from the input, or marshalled by us), so it is copied as it is, not encoded again.
func appendObject(buf []byte, o object) []byte {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	buf = append(buf, '{')
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendString(buf, k)
		buf = append(buf, ':')
		buf = append(buf, o[k]...)
	}
	return append(buf, '}')
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string. s is valid UTF-8 (scanDatasets skips other
// names), so only quotes, backslashes and control characters need escaping.
func appendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf = append(buf, s[start:i]...)
		switch c {
		case '"', '\\':
			buf = append(buf, '\\', c)
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\t':
			buf = append(buf, '\\', 't')
		case '\r':
			buf = append(buf, '\\', 'r')
		default:
			buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

func marshal(v interface{}) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// getObject decodes member key of o as an object; absent or null gives an empty one.
func getObject(o object, key string) (object, error) {
	out := object{}
	raw, ok := o[key]
	if !ok || string(raw) == "null" {
		return out, nil
	}
	if err := json.Unmarshal(raw, &out); err != nil || out == nil {
		return nil, fmt.Errorf("%s is not an object", key)
	}
	return out, nil
}

func getArray(o object, key string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	raw, ok := o[key]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s is not an array", key)
	}
	return out, nil
}

func set(o object, key string, v interface{}) error {
	raw, err := marshal(v)
	if err != nil {
		return err
	}
	o[key] = raw
	return nil
}

// editProcessEnv applies the environment edits to the spec's process.
func editProcessEnv(spec object, e edits) error {
	if len(e.Env) == 0 && len(e.UnsetEnv) == 0 {
		return nil
	}
	process, err := getObject(spec, "process")
	if err != nil {
		return err
	}
	if err := editEnv(process, e); err != nil {
		return err
	}
	return set(spec, "process", process)
}

// editProcess applies the environment edits to a process of its own, as `runc exec
// --process` reads it: Concourse starts a task's command that way, its params in the env.
func editProcess(data []byte, e edits) ([]byte, error) {
	if len(e.Env) == 0 && len(e.UnsetEnv) == 0 {
		return data, nil
	}
	var process object
	if err := json.Unmarshal(data, &process); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if process == nil {
		return nil, fmt.Errorf("not a JSON object: null")
	}
	if err := editEnv(process, e); err != nil {
		return nil, err
	}
	return appendObject(nil, process), nil
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

// addMounts appends a bind mount per dataset whose destination the spec does not mount
// yet (mounts hold distinct destinations, as one scan gives them). The options are separate items ("rbind", "ro"): one "rbind,ro" string would be
// passed to mount(2) as data and fail. Each entry is written straight into the array, so
// thousands of folders cost little more than copying their names.
func addMounts(spec object, mounts []datasetMount, recursiveReadOnly bool) error {
	if len(mounts) == 0 {
		return nil
	}
	existing, err := getArray(spec, "mounts")
	if err != nil {
		return err
	}
	// Only the spec's own destinations are looked up: one scan's datasets have distinct names.
	taken := make(map[string]bool, len(existing))
	size := 2
	for _, raw := range existing {
		var m struct {
			Destination string `json:"destination"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("mounts: an entry is not an object")
		}
		taken[filepath.Clean(m.Destination)] = true
		size += len(raw) + 1
	}
	readOnly := `"rbind","ro"`
	if recursiveReadOnly {
		readOnly = `"rbind","ro","rro"`
	}
	for _, m := range mounts {
		size += len(m.Destination) + len(m.Source) + 96 // the rest of the entry; escapes are rare
	}
	buf := make([]byte, 0, size)
	buf = append(buf, '[')
	for i, raw := range existing {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, raw...)
	}
	n := len(existing)
	for _, m := range mounts {
		if taken[filepath.Clean(m.Destination)] {
			continue
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		n++
		buf = append(buf, `{"destination":`...)
		buf = appendString(buf, m.Destination)
		buf = append(buf, `,"type":"bind","source":`...)
		buf = appendString(buf, m.Source)
		buf = append(buf, `,"options":[`...)
		if m.Writable {
			buf = append(buf, `"rbind","rw"`...)
		} else {
			buf = append(buf, readOnly...)
		}
		buf = append(buf, "]}"...)
	}
	spec["mounts"] = append(buf, ']')
	return nil
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
