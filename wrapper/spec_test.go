package main

import (
	"encoding/json"
	"os"
	"path/filepath"
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

func TestEditSpecEnv(t *testing.T) {
	out, err := editSpec([]byte(baseSpec), edits{Env: map[string]string{"NVIDIA_VISIBLE_DEVICES": "0,1", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}, UnsetEnv: []string{"HSA_OVERRIDE_GFX_VERSION", "AMD_VISIBLE_DEVICES"}})
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
	out, err := editSpec([]byte(baseSpec), edits{Env: map[string]string{"X": "1"}})
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
	mounts := []datasetMount{{"/srv/a", "/srv/a", false}, {"/srv/b_rw", "/srv/b_rw", true}, {"/srv/taken", "/srv/taken", false}, {"/real/c", "/srv/c", false}}
	out, err := editSpec([]byte(baseSpec), edits{Mounts: mounts})
	if err != nil {
		t.Fatal(err)
	}
	// Applying the same edits twice (a retried create) changes nothing more.
	again, err := editSpec(out, edits{Mounts: mounts})
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(out) {
		t.Errorf("second edit changed the spec:\n%s\n%s", out, again)
	}
	got := decode(t, out)["mounts"].([]interface{})
	if len(got) != 5 {
		t.Fatalf("mounts = %v, want proc, taken and 3 datasets", got)
	}
	want := []map[string]interface{}{
		{"destination": "/srv/a", "type": "bind", "source": "/srv/a", "options": []interface{}{"rbind", "ro"}},
		{"destination": "/srv/b_rw", "type": "bind", "source": "/srv/b_rw", "options": []interface{}{"rbind", "rw"}},
		{"destination": "/srv/c", "type": "bind", "source": "/real/c", "options": []interface{}{"rbind", "ro"}},
	}
	for i, w := range want {
		if !reflect.DeepEqual(got[i+2], map[string]interface{}(w)) {
			t.Errorf("mount %d = %v, want %v", i, got[i+2], w)
		}
	}
}

func TestEditSpecRecursiveReadOnly(t *testing.T) {
	mounts := []datasetMount{{"/srv/a", "/srv/a", false}, {"/srv/b_rw", "/srv/b_rw", true}}
	out, err := editSpec([]byte(`{"mounts":[]}`), edits{Mounts: mounts, RecursiveReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"mounts":[{"destination":"/srv/a","type":"bind","source":"/srv/a","options":["rbind","ro","rro"]},{"destination":"/srv/b_rw","type":"bind","source":"/srv/b_rw","options":["rbind","rw"]}]}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}

// appendString writes what encoding/json reads back as the same string, for every byte a
// UTF-8 folder name can hold.
func TestAppendStringRoundTrips(t *testing.T) {
	var all []byte
	for c := 1; c < 0x80; c++ {
		all = append(all, byte(c))
	}
	for _, s := range []string{"", string(all), "space name $(x)\n\t\r", `quote " back \ slash`, "café_rw 🎉", "\u2028\u2029", "\x7f"} {
		var back string
		if err := json.Unmarshal(appendString(nil, s), &back); err != nil || back != s {
			t.Errorf("appendString(%q) = %s, read back as %q (%v)", s, appendString(nil, s), back, err)
		}
	}
}

func TestEditSpecDevices(t *testing.T) {
	dev := hostDevice{Path: "/dev/kfd", Type: "c", Major: 1, Minor: 3, FileMode: 0o666}
	out, err := editSpec([]byte(baseSpec), edits{Devices: []hostDevice{dev}})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := editSpec(out, edits{Devices: []hostDevice{dev}})
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
	out, err := editSpec([]byte(`{"process":{}}`), edits{Devices: []hostDevice{{Path: "/dev/x", Type: "c", Major: 1, Minor: 3}}})
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
	out, err := editProcess([]byte(doc), edits{Env: map[string]string{"NVIDIA_VISIBLE_DEVICES": "GPU-1"}, UnsetEnv: []string{"HSA_OVERRIDE_GFX_VERSION"}})
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
	same, err := editProcess([]byte(doc), edits{})
	if err != nil || string(same) != doc {
		t.Errorf("no edits: got %s, %v; want the document untouched", same, err)
	}
	for _, bad := range []string{``, `[]`, `null`, `{"env":"A=1"}`, `{"env":[1]}`} {
		if _, err := editProcess([]byte(bad), edits{Env: map[string]string{"A": "1"}}); err == nil {
			t.Errorf("editProcess(%q) succeeded, want an error", bad)
		}
	}
}

func TestEditSpecRejectsBadDocuments(t *testing.T) {
	for _, doc := range []string{``, `{`, `[]`, `null`, `{"process":{"env":"A=1"}}`, `{"mounts":{}}`} {
		if _, err := editSpec([]byte(doc), edits{Env: map[string]string{"A": "1"}, Mounts: []datasetMount{{"/a", "/a", false}}}); err == nil {
			t.Errorf("editSpec(%q) succeeded, want an error", doc)
		}
	}
}

func TestStatDevice(t *testing.T) {
	d, err := statDevice("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	if d.Type != "c" || d.Major != 1 || d.Minor != 3 {
		t.Errorf("/dev/null = %+v, want c 1:3", d)
	}
	if _, err := statDevice("/etc/hostname"); err == nil || !strings.Contains(err.Error(), "not a character or block device") {
		t.Errorf("a plain file was taken as a device: %v", err)
	}
}

func TestWriteAtomicallyKeepsMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(path)
	if err := writeAtomically(path, []byte(`{"a":1}`), info); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(path)
	data, _ := os.ReadFile(path)
	if after.Mode().Perm() != 0o600 || string(data) != `{"a":1}` {
		t.Errorf("mode %v content %s", after.Mode(), data)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temp files left behind: %v", entries)
	}
}
