package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// A container whose spec grants any of these could undo the datasets' modes, whatever
// namespaces it has: runc makes the read-only mounts inside the container's own mount
// namespace, so they are not locked, and CAP_SYS_ADMIN in the container's user namespace
// is enough to remount them read-write. Such a spec is refused unless the settings say
// allowPrivileged (the operator asked for privileged tasks).
var undoingCapabilities = map[string]string{
	"CAP_SYS_ADMIN":       "mount and remount: makes a read-only dataset writable",
	"CAP_DAC_READ_SEARCH": "open_by_handle_at: reaches any file of a mounted file system",
	"CAP_SYS_MODULE":      "loads kernel modules",
	"CAP_SYS_RAWIO":       "raw access to devices and memory",
}

// capabilitySets are the sets of process.capabilities, in the spec's order.
var capabilitySets = []string{"bounding", "effective", "inheritable", "permitted", "ambient"}

// containerPrivileges lists what in a container's spec would let a task undo the datasets'
// modes: capabilities (processPrivileges), a device cgroup rule that opens every device,
// every block device or every character device, and a block device node.
func containerPrivileges(spec object) ([]string, error) {
	var found []string
	if raw, ok := spec["process"]; ok && string(raw) != "null" {
		process, err := parseSpec(raw)
		if err != nil {
			return nil, fmt.Errorf("process: %v", err)
		}
		if found, err = processPrivileges(process); err != nil {
			return nil, fmt.Errorf("process.%v", err)
		}
	}
	var linux struct {
		Resources *struct {
			Devices []struct {
				Allow  bool    `json:"allow"`
				Type   string  `json:"type"`
				Major  *int64  `json:"major"`
				Minor  *int64  `json:"minor"`
				Access *string `json:"access"`
			} `json:"devices"`
		} `json:"resources"`
		Devices []struct {
			Path string `json:"path"`
			Type string `json:"type"`
		} `json:"devices"`
	}
	if raw, ok := spec["linux"]; ok {
		if err := json.Unmarshal(raw, &linux); err != nil {
			return nil, fmt.Errorf("linux: not the devices of an OCI spec: %v", err)
		}
	}
	if linux.Resources != nil {
		for _, r := range linux.Resources.Devices {
			access := "rwm" // absent: all of it
			if r.Access != nil && *r.Access != "" {
				access = *r.Access
			}
			// Access "m" alone lets a node be made but not opened (runc and Concourse allow it for every device).
			if !r.Allow || !strings.ContainsAny(access, "rw") {
				continue
			}
			rule := fmt.Sprintf("%s %s:%s %s", orDefault(r.Type, "a"), deviceNumber(r.Major), deviceNumber(r.Minor), access)
			switch {
			case r.Type == "" || r.Type == "a":
				found = append(found, fmt.Sprintf("device rule %q (every device)", rule))
			case r.Type == "b":
				found = append(found, fmt.Sprintf("device rule %q (block devices: the disks under the datasets)", rule))
			case r.Type == "c" && (r.Major == nil || *r.Major < 0):
				found = append(found, fmt.Sprintf("device rule %q (every character device)", rule))
			}
		}
	}
	for _, d := range linux.Devices {
		if d.Type == "b" {
			found = append(found, fmt.Sprintf("block device %s in linux.devices", d.Path))
		}
	}
	return found, nil
}

// processPrivileges lists the capabilities of process (a container's first process, or
// one `runc exec --process` starts) that would let a task undo the datasets' modes, each
// with the sets that hold it.
func processPrivileges(process object) ([]string, error) {
	raw, ok := process["capabilities"]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var sets map[string][]string
	if err := json.Unmarshal(raw, &sets); err != nil {
		return nil, fmt.Errorf("capabilities: not lists of capability names: %v", err)
	}
	in := map[string][]string{}
	for _, set := range capabilitySets {
		for _, c := range sets[set] {
			// runc knows only the upper-case CAP_ names, but no spelling gets past this.
			name := strings.ToUpper(c)
			if !strings.HasPrefix(name, "CAP_") {
				name = "CAP_" + name
			}
			if _, bad := undoingCapabilities[name]; bad && !contains(in[name], set) {
				in[name] = append(in[name], set)
			}
		}
	}
	names := make([]string, 0, len(in))
	for name := range in {
		names = append(names, name)
	}
	sort.Strings(names)
	found := make([]string, 0, len(names))
	for _, name := range names {
		found = append(found, fmt.Sprintf("%s in %s (%s)", name, strings.Join(in[name], ", "), undoingCapabilities[name]))
	}
	return found, nil
}

// refusal is the one line that says why a container or process was refused, and how to allow it.
func refusal(what string, found []string) error {
	return fmt.Errorf("%s refused: it would let a task undo the read-only datasets: %s. To run such containers on purpose, set the worker's concourse.privilegedMode to full or fuse-only in the stack (it sets \"allowPrivileged\": true in %s)",
		what, strings.Join(found, "; "), configPath)
}

func deviceNumber(n *int64) string {
	if n == nil || *n < 0 {
		return "*"
	}
	return fmt.Sprint(*n)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
