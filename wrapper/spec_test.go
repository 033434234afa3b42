package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const baseSpec = `{"ociVersion":"1.0.2","x-unknown":{"keep":[1,2.50,"a<b"]},"process":{"args":["sh"],"env":["PATH=/bin","NVIDIA_VISIBLE_DEVICES=all","A=1","NVIDIA_VISIBLE_DEVICES=3","HSA_OVERRIDE_GFX_VERSION=9.9.9","NOEQUALS"],"cwd":"/"},"mounts":[{"destination":"/proc","type":"proc","source":"proc"},{"destination":"/srv/taken/","type":"tmpfs","source":"tmpfs"}],"linux":{"resources":{"devices":[{"allow":false,"access":"rwm"}]},"devices":[{"path":"/dev/kfd","type":"c","major":9,"minor":9}],"namespaces":[{"type":"mount"}]}}`

func decode(t *testing.T, data []byte) map[string]interface{} {
	t.Helper()
	var v map[string]interface{}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, data)
	}
	return v
}

// edit parses data and applies e, as prepareBundle does.
func edit(data string, e edits) ([]byte, []string, error) {
	spec, err := parseSpec([]byte(data))
	if err != nil {
		return nil, nil, err
	}
	return editSpec(spec, e)
}

func TestEditSpecEnv(t *testing.T) {
	out, _, err := edit(baseSpec, edits{Env: map[string]string{"NVIDIA_VISIBLE_DEVICES": "0,1", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}, UnsetEnv: []string{"HSA_OVERRIDE_GFX_VERSION", "AMD_VISIBLE_DEVICES"}})
	if err != nil {
		t.Fatal(err)
	}
	env := decode(t, out)["process"].(map[string]interface{})["env"].([]interface{})
	want := []interface{}{"PATH=/bin", "A=1", "NOEQUALS", "NVIDIA_DRIVER_CAPABILITIES=compute,utility", "NVIDIA_VISIBLE_DEVICES=0,1"}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
}

func TestEditSpecKeepsUnknownMembers(t *testing.T) {
	out, _, err := edit(baseSpec, edits{Env: map[string]string{"X": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"x-unknown":{"keep":[1,2.50,"a<b"]}`) {
		t.Errorf("unknown member changed: %s", out)
	}
	v := decode(t, out)
	if v["ociVersion"] != "1.0.2" || v["linux"].(map[string]interface{})["namespaces"] == nil || v["process"].(map[string]interface{})["cwd"] != "/" {
		t.Errorf("members lost: %s", out)
	}
}

func TestEditSpecMounts(t *testing.T) {
	d := &datasets{Root: "/srv", Source: "/data/srv", Writable: []string{"b_rw", "taken_rw"}}
	spec := `{"mounts":[{"destination":"/proc","type":"proc","source":"proc"},{"destination":"/srv/taken_rw/","type":"tmpfs","source":"tmpfs"},{"destination":"/etc/hosts","type":"bind","source":"/h"}]}`
	out, notes, err := edit(spec, edits{Datasets: d, RecursiveReadOnly: true})
	if err != nil || notes != nil {
		t.Fatal(err, notes)
	}
	// The root once, read-only all the way down, before the spec's own mount inside it; the
	// writable folder right after it; the one the spec mounts itself is left to the spec.
	want := `{"mounts":[{"destination":"/proc","type":"proc","source":"proc"},` +
		`{"destination":"/srv","type":"bind","source":"/data/srv","options":["rbind","ro","rro","rprivate"]},` +
		`{"destination":"/srv/b_rw","type":"bind","source":"/data/srv/b_rw","options":["rbind","rw","rprivate"]},` +
		`{"destination":"/srv/taken_rw/","type":"tmpfs","source":"tmpfs"},{"destination":"/etc/hosts","type":"bind","source":"/h"}]}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}

func TestEditSpecMountsAtTheEnd(t *testing.T) {
	d := &datasets{Root: "/srv", Source: "/srv", Writable: []string{"b_rw"}, NestedReadOnly: []string{"models", "models/cache"}}
	out, _, err := edit(`{"mounts":[{"destination":"/srvx","type":"tmpfs","source":"tmpfs"}]}`, edits{Datasets: d})
	if err != nil {
		t.Fatal(err)
	}
	// Without rro: the root read-only at its top, and each host mount point inside a read-only dataset read-only too.
	want := `{"mounts":[{"destination":"/srvx","type":"tmpfs","source":"tmpfs"},` +
		`{"destination":"/srv","type":"bind","source":"/srv","options":["rbind","ro","rprivate"]},` +
		`{"destination":"/srv/models","type":"bind","source":"/srv/models","options":["rbind","ro","rprivate"]},` +
		`{"destination":"/srv/models/cache","type":"bind","source":"/srv/models/cache","options":["rbind","ro","rprivate"]},` +
		`{"destination":"/srv/b_rw","type":"bind","source":"/srv/b_rw","options":["rbind","rw","rprivate"]}]}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	none, _, err := edit(`{}`, edits{Datasets: &datasets{Root: "/srv", Source: "/srv"}})
	if err != nil || string(none) != `{"mounts":[{"destination":"/srv","type":"bind","source":"/srv","options":["rbind","ro","rprivate"]}]}` {
		t.Errorf("a spec without mounts: %s %v", none, err)
	}
}

// A spec that mounts the root itself keeps it: no dataset mounts, and a note for the log.
// A retried create (the spec already edited) is the same case, and changes nothing more.
func TestEditSpecRootAlreadyMounted(t *testing.T) {
	d := &datasets{Root: "/srv", Source: "/srv", Writable: []string{"b_rw"}}
	spec := `{"mounts":[{"destination":"/srv/","type":"tmpfs","source":"tmpfs"}]}`
	out, notes, err := edit(spec, edits{Datasets: d, RecursiveReadOnly: true})
	if err != nil || string(out) != spec || len(notes) != 1 || !strings.Contains(notes[0], `dataset root /srv: the container's spec already mounts it (from "tmpfs")`) {
		t.Errorf("got %s %q %v", out, notes, err)
	}
	once, _, _ := edit(`{"mounts":[]}`, edits{Datasets: d, RecursiveReadOnly: true})
	twice, _, err := edit(string(once), edits{Datasets: d, RecursiveReadOnly: true})
	if err != nil || string(twice) != string(once) {
		t.Errorf("second edit changed the spec:\n%s\n%s", once, twice)
	}
}

func TestEditSpecMountsHoldAnyUTF8Name(t *testing.T) {
	names := []string{"space name $(x)\n_rw", `quote " back \ slash_rw`, "café 🎉_rw", "-rf_rw"}
	out, _, err := edit(`{}`, edits{Datasets: &datasets{Root: "/srv", Source: "/srv", Writable: names}})
	if err != nil {
		t.Fatal(err)
	}
	mounts := decode(t, out)["mounts"].([]interface{})
	for i, n := range names {
		m := mounts[i+1].(map[string]interface{})
		if m["destination"] != "/srv/"+n || m["source"] != "/srv/"+n {
			t.Errorf("mount %d = %v, want %q", i, m, n)
		}
	}
}

func TestEditSpecDevices(t *testing.T) {
	dev := hostDevice{Path: "/dev/kfd", Type: "c", Major: 1, Minor: 3, FileMode: 0o666}
	out, _, err := edit(baseSpec, edits{Devices: []hostDevice{dev}})
	if err != nil {
		t.Fatal(err)
	}
	again, _, _ := edit(string(out), edits{Devices: []hostDevice{dev}})
	if string(again) != string(out) {
		t.Errorf("second edit changed the spec")
	}
	linux := decode(t, out)["linux"].(map[string]interface{})
	devices := linux["devices"].([]interface{})
	if len(devices) != 1 || devices[0].(map[string]interface{})["major"] != 1.0 {
		t.Errorf("devices = %v, want the host's /dev/kfd only", devices)
	}
	rules := linux["resources"].(map[string]interface{})["devices"].([]interface{})
	last := rules[len(rules)-1].(map[string]interface{})
	if len(rules) != 2 || last["allow"] != true || last["access"] != "rwm" || last["minor"] != 3.0 {
		t.Errorf("rules = %v, want deny-all then allow c 1:3 rwm", rules)
	}
}

func TestEditSpecNoLinuxMember(t *testing.T) {
	out, _, err := edit(`{"process":{}}`, edits{Devices: []hostDevice{{Path: "/dev/x", Type: "c", Major: 1, Minor: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"resources":{"devices":[{"allow":true`) {
		t.Errorf("linux member not created: %s", out)
	}
}

// runc exec --process: the task's own env (Concourse's params) cannot choose the GPUs.
func TestEditProcess(t *testing.T) {
	doc := `{"args":["sh","-c","nvidia-smi"],"env":["PATH=/bin","NVIDIA_VISIBLE_DEVICES=all","HSA_OVERRIDE_GFX_VERSION=9.9.9"],"cwd":"/tmp/build","user":{"uid":0,"gid":0},"x-unknown":[1.50]}`
	process, err := parseSpec([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	out, err := editProcess(process, edits{Env: map[string]string{"NVIDIA_VISIBLE_DEVICES": "GPU-1"}, UnsetEnv: []string{"HSA_OVERRIDE_GFX_VERSION"}})
	if err != nil {
		t.Fatal(err)
	}
	v := decode(t, out)
	want := []interface{}{"PATH=/bin", "NVIDIA_VISIBLE_DEVICES=GPU-1"}
	if !reflect.DeepEqual(v["env"], want) {
		t.Errorf("env = %q, want %q", v["env"], want)
	}
	if v["cwd"] != "/tmp/build" || !strings.Contains(string(out), `"x-unknown":[1.50]`) || len(v["args"].([]interface{})) != 3 {
		t.Errorf("members lost or changed: %s", out)
	}
	for _, bad := range []string{``, `[]`, `null`, `{"env":"A=1"}`, `{"env":[1]}`} {
		p, err := parseSpec([]byte(bad))
		if err == nil {
			_, err = editProcess(p, edits{Env: map[string]string{"A": "1"}})
		}
		if err == nil {
			t.Errorf("editProcess(%q) succeeded, want an error", bad)
		}
	}
}

func TestEditSpecRejectsBadDocuments(t *testing.T) {
	for _, doc := range []string{``, `{`, `[]`, `null`, `{"process":{"env":"A=1"}}`, `{"mounts":{}}`} {
		if _, _, err := edit(doc, edits{Env: map[string]string{"A": "1"}, Datasets: &datasets{Root: "/a", Source: "/a"}}); err == nil {
			t.Errorf("editSpec(%q) succeeded, want an error", doc)
		}
	}
}
