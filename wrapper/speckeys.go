package main

import (
	"encoding/json"
	"fmt"
	"strings"
)

// runc reads config.json with Go's encoding/json, which matches an object's keys to the spec's
// field names without regard to case, Unicode's simple folding included ("PROCESS", "Process"
// and "proceſſ" are all "process"). The wrapper reads and edits members by their exact names.
// So a spec whose keys are not spelled as the spec spells them is refused, naming the key: what
// the wrapper checks is then what runc reads. Only the levels that are structures are checked;
// maps (annotations, sysctl, unified) have keys of their own.

// specLevel is one structure of the runtime spec: its fields by their JSON names, each with the
// structure of its value (an array's items for an array), or nil for a value with no fields to check.
type specLevel map[string]*specLevel

func level(fields ...string) *specLevel {
	l := specLevel{}
	for _, f := range fields {
		l[f] = nil
	}
	return &l
}

func (l *specLevel) with(field string, inner *specLevel) *specLevel {
	(*l)[field] = inner
	return l
}

// The runtime spec's Linux structures, as runc 1.1 to 1.4 decode them (opencontainers/runtime-spec
// specs-go/config.go). A field some version lacks only makes a misspelling of it refused.
var (
	hookLevel    = level("path", "args", "env", "timeout")
	processLevel = level("terminal", "consoleSize", "user", "args", "commandLine", "env", "cwd", "capabilities", "rlimits", "noNewPrivileges",
		"apparmorProfile", "oomScoreAdj", "scheduler", "selinuxLabel", "ioPriority", "execCPUAffinity").
		with("consoleSize", level("height", "width")).
		with("user", level("uid", "gid", "umask", "additionalGids", "username")).
		with("capabilities", level("bounding", "effective", "inheritable", "permitted", "ambient")).
		with("rlimits", level("type", "hard", "soft")).
		with("scheduler", level("policy", "nice", "priority", "flags", "runtime", "deadline", "period")).
		with("ioPriority", level("class", "priority")).
		with("execCPUAffinity", level("initial", "final"))
	idMappingLevel = level("containerID", "hostID", "size")
	resourcesLevel = level("devices", "memory", "cpu", "pids", "blockIO", "hugepageLimits", "network", "rdma", "unified").
			with("devices", level("allow", "type", "major", "minor", "access")).
			with("memory", level("limit", "reservation", "swap", "kernel", "kernelTCP", "swappiness", "disableOOMKiller", "useHierarchy", "checkBeforeUpdate")).
			with("cpu", level("shares", "quota", "burst", "period", "realtimeRuntime", "realtimePeriod", "cpus", "mems", "idle")).
			with("pids", level("limit")).
			with("blockIO", level("weight", "leafWeight", "weightDevice", "throttleReadBpsDevice", "throttleWriteBpsDevice", "throttleReadIOPSDevice",
			"throttleWriteIOPSDevice")).
		with("hugepageLimits", level("pageSize", "limit")).
		with("network", level("classID", "priorities").with("priorities", level("name", "priority")))
	linuxLevel = level("uidMappings", "gidMappings", "sysctl", "resources", "cgroupsPath", "namespaces", "devices", "netDevices", "seccomp",
		"rootfsPropagation", "maskedPaths", "readonlyPaths", "mountLabel", "intelRdt", "memoryPolicy", "personality", "timeOffsets").
		with("uidMappings", idMappingLevel).
		with("gidMappings", idMappingLevel).
		with("resources", resourcesLevel).
		with("namespaces", level("type", "path")).
		with("devices", level("path", "type", "major", "minor", "fileMode", "uid", "gid")).
		with("seccomp", level("defaultAction", "defaultErrnoRet", "architectures", "flags", "listenerPath", "listenerMetadata", "syscalls").
			with("syscalls", level("names", "action", "errnoRet", "args").with("args", level("index", "value", "valueTwo", "op")))).
		with("intelRdt", level("closID", "schemata", "l3CacheSchema", "memBwSchema", "enableMonitoring")).
		with("memoryPolicy", level("mode", "nodes", "flags")).
		with("personality", level("domain", "flags"))
	specRoot = level("ociVersion", "process", "root", "hostname", "domainname", "mounts", "hooks", "annotations", "linux", "solaris", "windows", "vm",
		"zos", "freebsd").
		with("process", processLevel).
		with("root", level("path", "readonly")).
		with("mounts", level("destination", "type", "source", "options", "uidMappings", "gidMappings").with("uidMappings", idMappingLevel).with("gidMappings", idMappingLevel)).
		with("hooks", level("prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop").
			with("prestart", hookLevel).with("createRuntime", hookLevel).with("createContainer", hookLevel).
			with("startContainer", hookLevel).with("poststart", hookLevel).with("poststop", hookLevel)).
		with("linux", linuxLevel)
)

// specKeysProblem says where raw (an object of the structure l, at path) has a key that runc
// would read as one of the structure's fields but that is not spelled as the field is.
func specKeysProblem(raw json.RawMessage, l *specLevel, path string) error {
	if len(raw) == 0 || raw[0] == 'n' {
		return nil
	}
	if raw[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return fmt.Errorf("%s: not a list", describe(path))
		}
		for i, item := range items {
			if err := specKeysProblem(item, l, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if raw[0] != '{' {
		return nil // a value of another kind: runc refuses it, or it is no structure
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return fmt.Errorf("%s: not an object", describe(path))
	}
	for key, value := range members {
		field, inner := fieldOf(l, key)
		if field == "" {
			continue // runc ignores a member it has no field for
		}
		if key != field {
			return fmt.Errorf("the key %q %s: runc reads it as %q, and the wrapper reads the spec by its own spelling only; write it %q", key, within(path), field, field)
		}
		if inner != nil {
			if err := specKeysProblem(value, inner, path+"."+field); err != nil {
				return err
			}
		}
	}
	return nil
}

// fieldOf finds the field encoding/json would fill from key: its exact name, or one equal to it
// under Unicode's simple folding.
func fieldOf(l *specLevel, key string) (string, *specLevel) {
	if inner, ok := (*l)[key]; ok {
		return key, inner
	}
	for field, inner := range *l {
		if strings.EqualFold(field, key) {
			return field, inner
		}
	}
	return "", nil
}

func within(path string) string {
	if path == "" {
		return "at the spec's top level"
	}
	return "in " + describe(path)
}

// describe names a place in the spec: "process.capabilities", or "the spec" for its top level.
func describe(path string) string {
	if path == "" {
		return "the spec"
	}
	return strings.TrimPrefix(path, ".")
}
