package main

import (
	"fmt"
	"os"
	"strings"

	"tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
	specs "tags.cncf.io/container-device-interface/specs-go"
)

// checkFile returns every problem the CDI library finds in the spec at path, each as
// "FIELD: problem". The spec is read with the library's own strict parser (unknown keys and
// wrong types refuse it, as they do in runtimes), then each part goes through the library's
// validator for that part, so that one bad device does not hide the next. Last, the file is
// read the way runtimes read it (cdi.ReadSpec): that verdict is the one that counts, and a
// refusal the parts did not explain is printed as it is.
func checkFile(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return []string{fmt.Sprintf("cannot read the spec: %v", err)}
	}
	raw, err := cdi.ParseSpec(data)
	if err != nil {
		return []string{oneLine(fmt.Sprintf("not a CDI spec runtimes can read: %v", err))}
	}
	if raw == nil {
		return []string{"not a CDI spec runtimes can read: the file holds no spec"}
	}
	problems := specProblems(raw)
	if _, err := cdi.ReadSpec(path, 0); err != nil && len(problems) == 0 {
		problems = append(problems, oneLine(fmt.Sprintf("refused by the CDI library: %v", err)))
	}
	return problems
}

// oneLine: a problem on one line (the YAML decoder lists its errors on lines of their own).
func oneLine(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, " ")
}

// specProblems: the library's checks of a parsed spec, part by part, in the order the
// library applies them. Annotations are not among them: the library's annotation check
// looks only at maps of arbitrary values, which a parsed spec's string maps never are, so
// runtimes accept any annotation key.
func specProblems(raw *specs.Spec) []string {
	var problems []string
	add := func(field string, err error) {
		if err != nil {
			problems = append(problems, oneLine(fmt.Sprintf("%s: %v", field, err)))
		}
	}
	add("cdiVersion", versionProblem(raw))
	vendor, class := parser.ParseQualifier(raw.Kind)
	add("kind", parser.ValidateVendorName(vendor))
	add("kind", parser.ValidateClassName(class))
	problems = append(problems, editsProblems("containerEdits", &raw.ContainerEdits)...)
	if len(raw.Devices) == 0 {
		add("devices", fmt.Errorf("invalid spec, no devices"))
	}
	seen := map[string]int{}
	for i := range raw.Devices {
		d := &raw.Devices[i]
		field := fmt.Sprintf("devices[%d]", i)
		add(field+".name", parser.ValidateDeviceName(d.Name))
		if first, ok := seen[d.Name]; ok {
			add(field+".name", fmt.Errorf("invalid spec, multiple device %q (also devices[%d])", d.Name, first))
		} else {
			seen[d.Name] = i
		}
		if emptyEdits(&d.ContainerEdits) {
			add(field+".containerEdits", fmt.Errorf("invalid device, empty device edits"))
		}
		problems = append(problems, editsProblems(field+".containerEdits", &d.ContainerEdits)...)
	}
	return problems
}

// versionProblem: the declared cdiVersion must be one the library knows and at least the
// version the spec's content needs.
func versionProblem(raw *specs.Spec) error {
	err := specs.ValidateVersion(raw)
	if err == nil {
		return nil
	}
	if need, e := specs.MinimumRequiredVersion(raw); e == nil {
		return fmt.Errorf("%v (the spec declares %q; its content needs %s)", err, raw.Version, need)
	}
	return fmt.Errorf("%v (the spec declares %q)", err, raw.Version)
}

// editsProblems: the library's validators of each container edit, entry by entry.
func editsProblems(field string, e *specs.ContainerEdits) []string {
	var problems []string
	add := func(at string, err error) {
		if err != nil {
			problems = append(problems, oneLine(fmt.Sprintf("%s.%s: %v", field, at, err)))
		}
	}
	for i, v := range e.Env {
		add(fmt.Sprintf("env[%d]", i), cdi.ValidateEnv([]string{v}))
	}
	for i, n := range e.DeviceNodes {
		add(fmt.Sprintf("deviceNodes[%d]", i), (&cdi.DeviceNode{DeviceNode: n}).Validate())
	}
	for i, h := range e.Hooks {
		add(fmt.Sprintf("hooks[%d]", i), (&cdi.Hook{Hook: h}).Validate())
	}
	for i, m := range e.Mounts {
		add(fmt.Sprintf("mounts[%d]", i), (&cdi.Mount{Mount: m}).Validate())
	}
	if e.IntelRdt != nil {
		add("intelRdt", (&cdi.IntelRdt{IntelRdt: e.IntelRdt}).Validate())
	}
	each := true
	for i, d := range e.NetDevices {
		err := (&cdi.LinuxNetDevice{LinuxNetDevice: d}).Validate()
		add(fmt.Sprintf("netDevices[%d]", i), err)
		each = each && err == nil
	}
	if each {
		// Duplicates: only the whole list shows them.
		add("netDevices", cdi.ValidateNetDevices(e.NetDevices))
	}
	return problems
}

// emptyEdits: a device must edit the container somehow (the spec's own edits may be empty).
// The library keeps this rule unexported; cdi.ReadSpec's verdict in checkFile backs it.
func emptyEdits(e *specs.ContainerEdits) bool {
	return len(e.Env) == 0 && len(e.DeviceNodes) == 0 && len(e.Hooks) == 0 && len(e.Mounts) == 0 &&
		len(e.AdditionalGIDs) == 0 && e.IntelRdt == nil && len(e.NetDevices) == 0
}
