package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A device node the wrapper adds keeps its host owner, group and mode, so a container process
// opens it by those bits. /dev/dri's nodes are the render and video groups' (0660): a task that
// is not root outside its user namespace (Concourse's unprivileged containers map the
// container's root to an unprivileged host uid) opens them only as a member of that group. So
// each such group becomes a supplementary group of the container's processes, the init's at
// create and each `runc exec`'s, as the group's number inside the container's user namespace.

// idMapping is one line of a user namespace's gid map (the spec's linux.gidMappings, or
// /proc/<pid>/gid_map).
type idMapping struct {
	ContainerID uint32 `json:"containerID"`
	HostID      uint32 `json:"hostID"`
	Size        uint32 `json:"size"`
}

// deviceGroups: the host groups that open a node beyond what its mode gives everyone, each once.
// Group 0 is never given: it would open far more than the node.
func deviceGroups(devices []hostDevice) []uint32 {
	var gids []uint32
	for _, d := range devices {
		group, other := (d.FileMode>>3)&7, d.FileMode&7
		if d.GID == 0 || group&^other == 0 || containsGid(gids, d.GID) {
			continue
		}
		gids = append(gids, d.GID)
	}
	return gids
}

func containsGid(list []uint32, g uint32) bool {
	for _, x := range list {
		if x == g {
			return true
		}
	}
	return false
}

// containerGids: the host groups as the container names them. maps nil: no user namespace of
// its own (the numbers are the host's). A group its namespace does not map is left out, and named.
func containerGids(host []uint32, maps []idMapping) (gids, unmapped []uint32) {
	for _, h := range host {
		if maps == nil {
			gids = append(gids, h)
			continue
		}
		found := false
		for _, m := range maps {
			if h >= m.HostID && h-m.HostID < m.Size {
				gids, found = append(gids, m.ContainerID+(h-m.HostID)), true
				break
			}
		}
		if !found {
			unmapped = append(unmapped, h)
		}
	}
	return gids, unmapped
}

// specGidMappings: the spec's gid map when it makes a user namespace of its own; nil when it
// makes none; an empty map (nothing mapped) when it joins one by path, whose map it does not say.
func specGidMappings(spec object) ([]idMapping, error) {
	var linux struct {
		Namespaces []struct {
			Type string `json:"type"`
			Path string `json:"path"`
		} `json:"namespaces"`
		GidMappings []idMapping `json:"gidMappings"`
	}
	if raw, ok := spec["linux"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &linux); err != nil {
			return nil, fmt.Errorf("linux: not the namespaces and gid mappings of an OCI spec: %v", err)
		}
	}
	for _, n := range linux.Namespaces {
		if n.Type == "user" {
			if n.Path != "" {
				return []idMapping{}, nil
			}
			return append([]idMapping{}, linux.GidMappings...), nil
		}
	}
	return nil, nil
}

// runningGidMappings: the gid map of a running container's init, from runc's state under root.
func runningGidMappings(root, id string) ([]idMapping, error) {
	data, err := readNoLinks(filepath.Join(root, id, "state.json"))
	if err != nil {
		return nil, fmt.Errorf("container %q: runc's state: %v", id, err)
	}
	var st runcState
	if json.Unmarshal(data, &st) != nil || st.InitPid <= 0 {
		return nil, fmt.Errorf("container %q: runc's state names no init process", id)
	}
	text, err := os.ReadFile("/proc/" + strconv.Itoa(st.InitPid) + "/gid_map")
	if err != nil || processStart(st.InitPid) != strconv.FormatUint(st.InitStart, 10) {
		return nil, fmt.Errorf("container %q: its init process has exited", id)
	}
	return parseGidMap(string(text))
}

// parseGidMap reads /proc/<pid>/gid_map: "inside outside count" a line.
func parseGidMap(text string) ([]idMapping, error) {
	maps := []idMapping{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("gid_map: unexpected line %q", line)
		}
		var n [3]uint64
		for i := range f {
			v, err := strconv.ParseUint(f[i], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("gid_map: unexpected line %q", line)
			}
			n[i] = v
		}
		maps = append(maps, idMapping{ContainerID: uint32(n[0]), HostID: uint32(n[1]), Size: uint32(n[2])})
	}
	return maps, nil
}

// addGroups adds the gids to process.user.additionalGids, each once, keeping those it has.
func addGroups(process object, gids []uint32) error {
	user, err := getObject(process, "user")
	if err != nil {
		return fmt.Errorf("process.%w", err)
	}
	var have []uint32
	if raw, ok := user["additionalGids"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &have); err != nil {
			return fmt.Errorf("process.user.additionalGids is not a list of group numbers")
		}
	}
	for _, g := range gids {
		if !containsGid(have, g) {
			have = append(have, g)
		}
	}
	if err := set(user, "additionalGids", have); err != nil {
		return err
	}
	return set(process, "user", user)
}
