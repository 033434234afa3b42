package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// What a container's spec may carry only where the worker's settings allow it (allowSpec): each
// reaches past what the worker gives a task. The names and their reasons are the program's
// SPEC_FEATURES (components/lib/gpu/spec-features.ts).
const (
	noPidNamespace  = "no-pid-namespace"
	hostHooks       = "host-hooks"
	cdiAnnotations  = "cdi-annotations"
	otherGpuDevices = "other-gpu-devices"
)

// The hooks that run in the runtime's namespaces, on the host, as root (createContainer and
// startContainer run in the container's, and CDI's hooks are of those).
var hostHookKinds = []string{"prestart", "createRuntime", "poststart", "poststop"}

// A device node of one GPU (not the control nodes every GPU container shares).
var gpuNode = regexp.MustCompile(`^/dev/(nvidia[0-9]+|dri/(card|renderD)[0-9]+)$`)

// specFeatures lists what spec carries that allowSpec does not let through, each naming its
// feature; gpuNodes are the GPU nodes it may carry (the selected GPUs', or the held units').
func specFeatures(spec object, s *settings, gpuNodes []string) ([]string, error) {
	allowed := map[string]bool{}
	for _, f := range s.AllowSpec {
		allowed[f] = true
	}
	var found []string
	var linux struct {
		Namespaces []struct {
			Type string `json:"type"`
		} `json:"namespaces"`
		Devices []struct {
			Path  string `json:"path"`
			Type  string `json:"type"`
			Major int64  `json:"major"`
			Minor int64  `json:"minor"`
		} `json:"devices"`
	}
	if raw, ok := spec["linux"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &linux); err != nil {
			return nil, fmt.Errorf("linux: not the namespaces and devices of an OCI spec: %v", err)
		}
	}
	if !allowed[noPidNamespace] {
		own := false
		for _, n := range linux.Namespaces {
			own = own || n.Type == "pid"
		}
		if !own {
			found = append(found, fmt.Sprintf("no pid namespace of its own (%s: the task would see the host's processes, and through /proc/<pid>/root their files, past the read-only datasets)", noPidNamespace))
		}
	}
	if !allowed[hostHooks] {
		var hooks map[string][]struct {
			Path string `json:"path"`
		}
		if raw, ok := spec["hooks"]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &hooks); err != nil {
				return nil, fmt.Errorf("hooks: not the hooks of an OCI spec: %v", err)
			}
		}
		for _, kind := range hostHookKinds {
			for _, h := range hooks[kind] {
				found = append(found, fmt.Sprintf("hook hooks.%s %s (%s: it runs on the host as root)", kind, h.Path, hostHooks))
			}
		}
	}
	if !allowed[cdiAnnotations] {
		var annotations map[string]string
		if raw, ok := spec["annotations"]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &annotations); err != nil {
				return nil, fmt.Errorf("annotations: not a map of strings: %v", err)
			}
		}
		for key := range annotations {
			if strings.HasPrefix(key, "cdi.k8s.io/") {
				found = append(found, fmt.Sprintf("annotation %s (%s: the NVIDIA runtime in CDI mode gives the container the devices it names)", key, cdiAnnotations))
			}
		}
	}
	if !allowed[otherGpuDevices] {
		forbidden := otherGpuNumbers(gpuNodes)
		for _, d := range linux.Devices {
			if gpuNode.MatchString(d.Path) && !contains(gpuNodes, d.Path) {
				found = append(found, fmt.Sprintf("device node %s in linux.devices (%s: a GPU the worker does not select, or whose unit the container does not hold)", d.Path, otherGpuDevices))
			} else if host, ok := forbidden[devNumbers{d.Major, d.Minor}]; ok && (d.Type == "c" || d.Type == "u") {
				found = append(found, fmt.Sprintf("device node %s in linux.devices with the numbers of %s (%s: a GPU the worker does not select, or whose unit the container does not hold, under another name)", d.Path, host, otherGpuDevices))
			}
		}
	}
	return found, nil
}

// featureRefusal says why a container was refused, and how to allow it.
func featureRefusal(what string, found []string) error {
	return fmt.Errorf("%s refused: its spec carries %s. Where that is meant, add the feature to the worker's wrapper.allow in the stack (it sets \"allowSpec\" in %s)",
		what, strings.Join(found, "; "), configPath)
}

type devNumbers struct{ Major, Minor int64 }

// otherGpuNumbers: the device numbers of the host's GPU nodes (/dev/nvidiaN, /dev/dri's card and
// render nodes) but the allowed ones', each with its node: a spec may not name one of them
// under another path (a by-path name, or a path of its own), as it may not under its own.
func otherGpuNumbers(allowed []string) map[devNumbers]string {
	var host []string
	for _, dir := range []string{"/dev", "/dev/dri"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if p := filepath.Join(dir, e.Name()); gpuNode.MatchString(p) {
				host = append(host, p)
			}
		}
	}
	mine := map[devNumbers]bool{}
	for _, p := range allowed {
		if d, err := statDevice(p); err == nil {
			mine[devNumbers{d.Major, d.Minor}] = true
		}
	}
	out := map[devNumbers]string{}
	for _, p := range host {
		if d, err := statDevice(p); err == nil && d.Type == "c" && !mine[devNumbers{d.Major, d.Minor}] {
			out[devNumbers{d.Major, d.Minor}] = p
		}
	}
	return out
}
