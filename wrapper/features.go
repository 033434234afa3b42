package main

import (
	"encoding/json"
	"fmt"
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
			Path string `json:"path"`
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
		for _, d := range linux.Devices {
			if gpuNode.MatchString(d.Path) && !contains(gpuNodes, d.Path) {
				found = append(found, fmt.Sprintf("device node %s in linux.devices (%s: a GPU the worker does not select, or whose unit the container does not hold)", d.Path, otherGpuDevices))
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
