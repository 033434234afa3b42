package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestFeaturesCache(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run", featuresFile)
	if _, ok := readFeaturesCache(path, "k"); ok {
		t.Fatal("an absent cache was read")
	}
	writeFeaturesCache(path, "k1", rroSupport{Supported: true})
	if s, ok := readFeaturesCache(path, "k1"); !ok || !s.Supported {
		t.Errorf("cache k1 = %+v %v, want supported", s, ok)
	}
	if _, ok := readFeaturesCache(path, "k2"); ok {
		t.Error("a cache of another key was used")
	}
	writeFeaturesCache(path, "k2", rroSupport{Why: "no rro\nhere"})
	if s, ok := readFeaturesCache(path, "k2"); !ok || s.Supported || s.Why != "no rro here" {
		t.Errorf("cache k2 = %+v %v", s, ok)
	}
	if os.Geteuid() == 0 {
		os.Chmod(path, 0o666)
		if _, ok := readFeaturesCache(path, "k2"); ok {
			t.Error("a cache anyone could write was trusted")
		}
	}
}

// The key changes when the runtime behind it is replaced (a runc upgrade), so the answer is asked again.
func TestFeaturesKeyFollowsTheRuntime(t *testing.T) {
	dir := t.TempDir()
	defer func(old string) { realRunc = old }(realRunc)
	realRunc = filepath.Join(dir, "runc.real")
	rt := filepath.Join(dir, "runtime")
	os.WriteFile(rt, []byte("one"), 0o755)
	a := featuresKey(rt)
	os.WriteFile(rt+".new", []byte("two!"), 0o755)
	os.Rename(rt+".new", rt)
	b := featuresKey(rt)
	if a == "" || b == "" || a == b {
		t.Errorf("keys %q and %q", a, b)
	}
	if featuresKey(filepath.Join(dir, "missing")) != "" {
		t.Error("a missing runtime has a key")
	}
}

// With the real runc of this machine (runc 1.1 or newer on Linux 5.12 or newer here).
func TestProbeRecursiveReadOnlyWithRealRunc(t *testing.T) {
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Fatal("runc is not installed; the wrapper's tests need it (apt-get install runc)")
	}
	s := probeRecursiveReadOnly(runc)
	if !s.Supported {
		t.Errorf("runc on this machine: %+v", s)
	}
	notRunc := probeRecursiveReadOnly("/bin/false")
	if notRunc.Supported || !strings.Contains(notRunc.Why, "cannot say what it supports") {
		t.Errorf("/bin/false: %+v", notRunc)
	}
}
