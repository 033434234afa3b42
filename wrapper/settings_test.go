package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeSettings(t *testing.T, text string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadSettings(t *testing.T) {
	defer func(old string) { defaultLogPath = old }(defaultLogPath)
	defaultLogPath = "/var/log/test-variant/runc-wrapper.log"
	s, err := loadSettings(writeSettings(t, `{"realRuntime":"/usr/sbin/runc","datasetRoot":"/srv","writableSuffixes":["_rw"],"env":{"A":"1"},"unsetEnv":["B"],"deviceNodes":["/dev/kfd"]}`, 0o644))
	if err != nil {
		t.Fatal(err)
	}
	if s.Log != defaultLogPath || s.Env["A"] != "1" || s.AllowPrivileged {
		t.Errorf("settings = %+v (allowPrivileged absent is false)", s)
	}
	if s, err := loadSettings(writeSettings(t, `{"realRuntime":"/r","allowPrivileged":true}`, 0o644)); err != nil || !s.AllowPrivileged {
		t.Errorf("allowPrivileged: %+v %v", s, err)
	}
	bad := map[string]string{
		`{"realRuntime":"runc"}`:                          "absolute",
		`{"realRuntime":"/r","typo":1}`:                   "unknown field",
		`{"realRuntime":"/r","env":{"A=B":"1"}}`:          "invalid variable name",
		`{"realRuntime":"/r","deviceNodes":["dev/kfd"]}`:  "absolute",
		`{"realRuntime":"/r","writableSuffixes":["a/b"]}`: "invalid suffix",
		`{"realRuntime":"/r","allowPrivileged":"yes"}`:    "cannot unmarshal string",
		`not json`: "invalid settings",
	}
	for text, want := range bad {
		if _, err := loadSettings(writeSettings(t, text, 0o644)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to mention %q", text, err, want)
		}
	}
	if os.Geteuid() == 0 {
		if _, err := loadSettings(writeSettings(t, `{"realRuntime":"/r"}`, 0o666)); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
			t.Errorf("a world-writable settings file was accepted: %v", err)
		}
	}
}
