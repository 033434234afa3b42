package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Concourse's own specs (worker/runtime/spec in Concourse): unprivileged, and the two
// privileged modes.
const (
	concourseUnprivilegedCaps = `"CAP_AUDIT_WRITE","CAP_CHOWN","CAP_DAC_OVERRIDE","CAP_FOWNER","CAP_FSETID","CAP_KILL","CAP_MKNOD","CAP_NET_BIND_SERVICE","CAP_NET_RAW","CAP_SETFCAP","CAP_SETGID","CAP_SETPCAP","CAP_SETUID","CAP_SYS_CHROOT"`
	concourseFullCaps         = `"CAP_AUDIT_CONTROL","CAP_AUDIT_READ","CAP_AUDIT_WRITE","CAP_BLOCK_SUSPEND","CAP_CHOWN","CAP_DAC_OVERRIDE","CAP_DAC_READ_SEARCH","CAP_FOWNER","CAP_FSETID","CAP_IPC_LOCK","CAP_IPC_OWNER","CAP_KILL","CAP_LEASE","CAP_LINUX_IMMUTABLE","CAP_MAC_ADMIN","CAP_MAC_OVERRIDE","CAP_MKNOD","CAP_NET_ADMIN","CAP_NET_BIND_SERVICE","CAP_NET_BROADCAST","CAP_NET_RAW","CAP_SETFCAP","CAP_SETGID","CAP_SETPCAP","CAP_SETUID","CAP_SYSLOG","CAP_SYS_ADMIN","CAP_SYS_BOOT","CAP_SYS_CHROOT","CAP_SYS_MODULE","CAP_SYS_NICE","CAP_SYS_PACCT","CAP_SYS_PTRACE","CAP_SYS_RAWIO","CAP_SYS_RESOURCE","CAP_SYS_TIME","CAP_SYS_TTY_CONFIG","CAP_WAKE_ALARM"`
	// Older Concourse releases also allow mknod (only) of every device, as runc itself does.
	concourseDeviceRules = `[{"allow":true,"type":"c","major":-1,"minor":-1,"access":"m"},{"allow":true,"type":"b","major":-1,"minor":-1,"access":"m"},{"allow":true,"type":"c","major":1,"minor":3,"access":"rwm"},{"allow":true,"type":"c","major":136,"minor":-1,"access":"rwm"},{"allow":true,"type":"c","major":10,"minor":229,"access":"rwm"}]`
	concourseUserns      = `"namespaces":[{"type":"pid"},{"type":"ipc"},{"type":"uts"},{"type":"mount"},{"type":"network"},{"type":"user"}],"uidMappings":[{"containerID":0,"hostID":65535,"size":1}]`
	fuseNode             = `"devices":[{"path":"/dev/fuse","type":"c","major":10,"minor":229,"fileMode":438}]`
)

func concourseSpec(caps, namespaces string) string {
	sets := `{"bounding":[` + caps + `],"effective":[` + caps + `],"inheritable":[` + caps + `],"permitted":[` + caps + `]}`
	return `{"process":{"args":["/tmp/gdn-init"],"capabilities":` + sets + `},"linux":{` + namespaces + `,"resources":{"devices":` + concourseDeviceRules + `},` + fuseNode + `}}`
}

func privileges(t *testing.T, spec string) []string {
	t.Helper()
	o, err := parseSpec([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	found, err := containerPrivileges(o)
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func TestConcourseSpecs(t *testing.T) {
	if found := privileges(t, concourseSpec(concourseUnprivilegedCaps, concourseUserns)); len(found) != 0 {
		t.Errorf("Concourse's unprivileged spec was refused: %q", found)
	}
	full := privileges(t, concourseSpec(concourseFullCaps, `"namespaces":[{"type":"mount"}]`))
	want := []string{
		"CAP_DAC_READ_SEARCH in bounding, effective, inheritable, permitted (open_by_handle_at: reaches any file of a mounted file system)",
		"CAP_SYS_ADMIN in bounding, effective, inheritable, permitted (mount and remount: makes a read-only dataset writable)",
		"CAP_SYS_MODULE in bounding, effective, inheritable, permitted (loads kernel modules)",
		"CAP_SYS_RAWIO in bounding, effective, inheritable, permitted (raw access to devices and memory)",
	}
	if strings.Join(full, "\n") != strings.Join(want, "\n") {
		t.Errorf("Concourse's full privileged spec:\n%s\nwant\n%s", strings.Join(full, "\n"), strings.Join(want, "\n"))
	}
	// fuse-only: the unprivileged capabilities plus CAP_SYS_ADMIN, in a user namespace (which does not lock runc's mounts).
	fuse := privileges(t, concourseSpec(concourseUnprivilegedCaps+`,"CAP_SYS_ADMIN"`, concourseUserns))
	if len(fuse) != 1 || !strings.HasPrefix(fuse[0], "CAP_SYS_ADMIN in bounding, effective, inheritable, permitted") {
		t.Errorf("Concourse's fuse-only spec: %q", fuse)
	}
}

func TestEachCapabilityInEachSet(t *testing.T) {
	for _, c := range []string{"CAP_SYS_ADMIN", "CAP_DAC_READ_SEARCH", "CAP_SYS_MODULE", "CAP_SYS_RAWIO"} {
		// The spec's five sets, written out: a set dropped from the production list fails here.
		for _, set := range []string{"bounding", "effective", "inheritable", "permitted", "ambient"} {
			for _, spelling := range []string{c, strings.ToLower(c), strings.TrimPrefix(c, "CAP_")} {
				found := privileges(t, `{"process":{"capabilities":{"`+set+`":["CAP_KILL","`+spelling+`"]}}}`)
				if len(found) != 1 || !strings.HasPrefix(found[0], c+" in "+set+" (") {
					t.Errorf("%s in %s: %q", spelling, set, found)
				}
			}
		}
	}
}

func TestDeviceRules(t *testing.T) {
	refused := map[string]string{
		`{"allow":true,"type":"a","access":"rwm"}`:                      `device rule "a *:* rwm" (every device)`,
		`{"allow":true,"access":"rwm"}`:                                 `device rule "a *:* rwm" (every device)`,
		`{"allow":true}`:                                                `device rule "a *:* rwm" (every device)`,
		`{"allow":true,"type":"b","major":8,"minor":0,"access":"r"}`:    `device rule "b 8:0 r" (block devices`,
		`{"allow":true,"type":"b","major":-1,"minor":-1,"access":"rw"}`: `device rule "b *:* rw" (block devices`,
		`{"allow":true,"type":"c","access":"rwm"}`:                      `device rule "c *:* rwm" (every character device)`,
		`{"allow":true,"type":"c","major":-1,"minor":5,"access":"w"}`:   `device rule "c *:5 w" (every character device)`,
	}
	for rule, want := range refused {
		found := privileges(t, `{"linux":{"resources":{"devices":[{"allow":false,"access":"rwm"},`+rule+`]}}}`)
		if len(found) != 1 || !strings.HasPrefix(found[0], want) {
			t.Errorf("%s: %q, want %s", rule, found, want)
		}
	}
	for _, rule := range []string{
		`{"allow":false,"type":"a","access":"rwm"}`,
		`{"allow":true,"type":"b","major":-1,"minor":-1,"access":"m"}`,
		`{"allow":true,"type":"c","major":195,"minor":-1,"access":"rwm"}`,
		`{"allow":true,"type":"c","major":10,"minor":229,"access":"rwm"}`,
	} {
		if found := privileges(t, `{"linux":{"resources":{"devices":[`+rule+`]}}}`); len(found) != 0 {
			t.Errorf("%s refused: %q", rule, found)
		}
	}
	found := privileges(t, `{"linux":{"devices":[{"path":"/dev/fuse","type":"c","major":10,"minor":229},{"path":"/dev/sda","type":"b","major":8,"minor":0}]}}`)
	if len(found) != 1 || found[0] != "block device /dev/sda in linux.devices" {
		t.Errorf("a block device node: %q", found)
	}
}

func TestPrivilegesOfMalformedSpecs(t *testing.T) {
	for _, spec := range []string{`{"process":{"capabilities":{"bounding":"CAP_SYS_ADMIN"}}}`, `{"process":[]}`, `{"linux":{"devices":{}}}`} {
		o, err := parseSpec([]byte(spec))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := containerPrivileges(o); err == nil {
			t.Errorf("%s: no error", spec)
		}
	}
}

// exec --process: the process file is refused the same way, and left untouched unless allowed.
func TestPrepareProcessRefusesPrivileges(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "process.json")
	doc := `{"args":["sh"],"env":["NVIDIA_VISIBLE_DEVICES=all"],"capabilities":{"ambient":["CAP_SYS_ADMIN"]}}`
	must(t, os.WriteFile(file, []byte(doc), 0o600))
	s := &settings{Env: map[string]string{"NVIDIA_VISIBLE_DEVICES": "1"}}
	err := prepareProcess(invocation{Subcommand: "exec", Process: file, ID: "c1"}, s)
	if err == nil || !strings.HasPrefix(err.Error(), `process `+file+` for container "c1" refused: it would let a task undo the read-only datasets: CAP_SYS_ADMIN in ambient (mount and remount`) ||
		!strings.Contains(err.Error(), `set the worker's concourse.privilegedMode to full or fuse-only in the stack (it sets "allowPrivileged": true in `) {
		t.Errorf("error %v", err)
	}
	if data, _ := os.ReadFile(file); string(data) != doc {
		t.Errorf("the refused process file was changed: %s", data)
	}
	s.AllowPrivileged = true
	must(t, prepareProcess(invocation{Subcommand: "exec", Process: file, ID: "c1"}, s))
	if data, _ := os.ReadFile(file); !strings.Contains(string(data), `"NVIDIA_VISIBLE_DEVICES=1"`) {
		t.Errorf("allowed: the env was not edited: %s", data)
	}
	// No env edits and no privileges: the file is read, found fine and left as it was.
	plain := `{"args":["sh"],"capabilities":{"bounding":["CAP_KILL"]}}`
	must(t, os.WriteFile(file, []byte(plain), 0o600))
	must(t, prepareProcess(invocation{Subcommand: "exec", Process: file, ID: "c1"}, &settings{}))
	if data, _ := os.ReadFile(file); string(data) != plain {
		t.Errorf("an unedited process file was rewritten: %s", data)
	}
}
