package main

import (
	"reflect"
	"testing"
)

func TestDeviceGroups(t *testing.T) {
	devices := []hostDevice{
		{Path: "/dev/nvidia0", FileMode: 0o666, GID: 0},          // everyone opens it: no group
		{Path: "/dev/dri/card1", FileMode: 0o660, GID: 44},       // video
		{Path: "/dev/dri/renderD129", FileMode: 0o660, GID: 993}, // render
		{Path: "/dev/dri/renderD130", FileMode: 0o660, GID: 993}, // render, once
		{Path: "/dev/dri/renderD131", FileMode: 0o666, GID: 993}, // the group adds nothing
		{Path: "/dev/kfd", FileMode: 0o660, GID: 0},              // group root: never given
	}
	if got, want := deviceGroups(devices), []uint32{44, 993}; !reflect.DeepEqual(got, want) {
		t.Errorf("deviceGroups = %v, want %v", got, want)
	}
}

func TestContainerGids(t *testing.T) {
	// Concourse's unprivileged map: the container's root is host uid/gid max, 1.. are themselves.
	concourse := []idMapping{{ContainerID: 0, HostID: 4294967294, Size: 1}, {ContainerID: 1, HostID: 1, Size: 4294967293}}
	if gids, unmapped := containerGids([]uint32{44, 993}, concourse); !reflect.DeepEqual(gids, []uint32{44, 993}) || unmapped != nil {
		t.Errorf("Concourse's map: gids %v, unmapped %v", gids, unmapped)
	}
	shifted := []idMapping{{ContainerID: 0, HostID: 100000, Size: 65536}}
	if gids, unmapped := containerGids([]uint32{100993, 993}, shifted); !reflect.DeepEqual(gids, []uint32{993}) || !reflect.DeepEqual(unmapped, []uint32{993}) {
		t.Errorf("a shifted map: gids %v, unmapped %v", gids, unmapped)
	}
	if gids, _ := containerGids([]uint32{993}, nil); !reflect.DeepEqual(gids, []uint32{993}) {
		t.Errorf("no user namespace: gids %v", gids)
	}
	if gids, unmapped := containerGids([]uint32{993}, []idMapping{}); gids != nil || !reflect.DeepEqual(unmapped, []uint32{993}) {
		t.Errorf("a namespace joined by path (its map unknown): gids %v, unmapped %v", gids, unmapped)
	}
}

func TestSpecGidMappings(t *testing.T) {
	for _, c := range []struct {
		name, spec string
		want       []idMapping
	}{
		{"no user namespace", `{"linux":{"namespaces":[{"type":"pid"}],"gidMappings":[{"containerID":0,"hostID":5,"size":1}]}}`, nil},
		{"its own", `{"linux":{"namespaces":[{"type":"user"}],"gidMappings":[{"containerID":0,"hostID":5,"size":1}]}}`, []idMapping{{0, 5, 1}}},
		{"joined by path", `{"linux":{"namespaces":[{"type":"user","path":"/proc/1/ns/user"}],"gidMappings":[{"containerID":0,"hostID":5,"size":1}]}}`, []idMapping{}},
		{"no linux", `{}`, nil},
	} {
		spec, err := parseSpec([]byte(c.spec))
		if err != nil {
			t.Fatal(err)
		}
		got, err := specGidMappings(spec)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %#v, %v; want %#v", c.name, got, err, c.want)
		}
	}
	spec, _ := parseSpec([]byte(`{"linux":{"namespaces":"user"}}`))
	if _, err := specGidMappings(spec); err == nil {
		t.Error("namespaces that are not a list: no error")
	}
}

func TestParseGidMap(t *testing.T) {
	got, err := parseGidMap("         0 4294967294          1\n         1          1 4294967293\n")
	if want := []idMapping{{0, 4294967294, 1}, {1, 1, 4294967293}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseGidMap = %v, %v; want %v", got, err, want)
	}
	if _, err := parseGidMap("0 0\n"); err == nil {
		t.Error("a line of two fields: no error")
	}
	if _, err := parseGidMap("0 x 1\n"); err == nil {
		t.Error("a field that is not a number: no error")
	}
}

func TestEditSpecGroups(t *testing.T) {
	spec := `{"process":{"args":["sh"],"user":{"uid":0,"gid":0,"additionalGids":[10,993]}},"linux":{}}`
	out, _, err := edit(spec, edits{Groups: []uint32{44, 993}})
	if err != nil {
		t.Fatal(err)
	}
	user := decode(t, out)["process"].(map[string]interface{})["user"].(map[string]interface{})
	if got, want := user["additionalGids"], []interface{}{10.0, 993.0, 44.0}; !reflect.DeepEqual(got, want) {
		t.Errorf("additionalGids = %v, want %v (kept, each once)", got, want)
	}
	if user["uid"] != 0.0 || user["gid"] != 0.0 {
		t.Errorf("uid and gid changed: %v", user)
	}
	if _, _, err := edit(`{"process":{"user":{"additionalGids":"993"}}}`, edits{Groups: []uint32{44}}); err == nil {
		t.Error("additionalGids that are not a list: no error")
	}
	out, _, err = edit(`{"process":{"args":["sh"]}}`, edits{Groups: []uint32{44}})
	if err != nil {
		t.Fatal(err)
	}
	if got := decode(t, out)["process"].(map[string]interface{})["user"].(map[string]interface{})["additionalGids"]; !reflect.DeepEqual(got, []interface{}{44.0}) {
		t.Errorf("a process without user: additionalGids = %v", got)
	}
}

func TestValidDeviceLinks(t *testing.T) {
	ok := []deviceLink{{Path: "/dev/dri/by-path/pci-0000:4d:00.0-render", Node: "/dev/dri/renderD128"}}
	if err := validDeviceLinks("deviceLinks", ok); err != nil {
		t.Error(err)
	}
	for _, bad := range []deviceLink{
		{Path: "dev/dri/x", Node: "/dev/dri/card0"},
		{Path: "/etc/passwd", Node: "/dev/dri/card0"},
		{Path: "/dev/dri/../../etc/x", Node: "/dev/dri/card0"},
		{Path: "/dev/dri/x", Node: "card0"},
	} {
		if err := validDeviceLinks("deviceLinks", []deviceLink{bad}); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
