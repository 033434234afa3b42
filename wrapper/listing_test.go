package main

import (
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"
)

func rootStat(t *testing.T, root string) *syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	must(t, syscall.Stat(root, &st))
	return &st
}

// A kept listing is used while the root's identity and times stay the same; any change of
// its entries changes the times, and the root is listed again.
func TestListingIsKeptWhileTheRootIsUnchanged(t *testing.T) {
	defer func(old string) { stateDir = old }(stateDir)
	stateDir = filepath.Join(t.TempDir(), "run")
	root := t.TempDir()
	must(t, os.Chmod(root, 0o755))
	must(t, os.Mkdir(filepath.Join(root, "a_rw"), 0o755))
	source, _ := filepath.EvalSymlinks(root)
	suffixes := []string{"_rw"}
	// What a listing kept earlier says (a folder that is not there proves it was used).
	writeListing(listingKey(source, rootStat(t, source), suffixes), []string{"a_rw", "kept_rw"})
	d, _, err := scanDatasets(root, suffixes)
	must(t, err)
	if !reflect.DeepEqual(d.Writable, []string{"a_rw", "kept_rw"}) {
		t.Errorf("with an unchanged root: %q, want the kept listing", d.Writable)
	}
	if d, _, _ := scanDatasets(root, []string{"_rw", "_writable"}); !reflect.DeepEqual(d.Writable, []string{"a_rw"}) {
		t.Errorf("other suffixes: %q, want a fresh listing", d.Writable)
	}
	writeListing(listingKey(source, rootStat(t, source), suffixes), []string{"a_rw", "kept_rw"})
	time.Sleep(20 * time.Millisecond) // past a tick of the file system's clock
	must(t, os.Mkdir(filepath.Join(root, "b_rw"), 0o755))
	if d, _, _ := scanDatasets(root, suffixes); !reflect.DeepEqual(d.Writable, []string{"a_rw", "b_rw"}) {
		t.Errorf("after a change of the root: %q, want a fresh listing", d.Writable)
	}
}

func TestListingIsCheckedBeforeUse(t *testing.T) {
	defer func(old string) { stateDir = old }(stateDir)
	stateDir = filepath.Join(t.TempDir(), "run")
	root := t.TempDir()
	must(t, os.Chmod(root, 0o755))
	source, _ := filepath.EvalSymlinks(root)
	key := listingKey(source, rootStat(t, source), []string{"_rw"})
	for _, names := range [][]string{{"../etc"}, {".."}, {"a/b_rw"}, {"caf\xe9_rw"}} {
		writeListing(key, names)
		if got, ok := readListing(key); ok {
			t.Errorf("a listing holding %q was used: %q", names, got)
		}
	}
	writeListing(key, []string{"x_rw", "new\nline_rw"})
	if got, ok := readListing(key); !ok || !reflect.DeepEqual(got, []string{"x_rw", "new\nline_rw"}) {
		t.Errorf("a sound listing: %q %v", got, ok)
	}
	if _, ok := readListing(key + "x"); ok {
		t.Error("a listing of another key was used")
	}
	if os.Geteuid() == 0 {
		must(t, os.Chmod(filepath.Join(stateDir, listingFile), 0o666))
		if _, ok := readListing(key); ok {
			t.Error("a listing anyone could write was used")
		}
	}
}

func TestSettled(t *testing.T) {
	now := time.Now()
	at := func(t time.Time) syscall.Timespec { return syscall.NsecToTimespec(t.UnixNano()) }
	old, fresh := at(now.Add(-time.Minute)), at(now.Add(-time.Second))
	for _, c := range []struct {
		mtime, ctime syscall.Timespec
		want         bool
	}{{old, old, true}, {fresh, old, false}, {old, fresh, false}} {
		if got := settled(&syscall.Stat_t{Mtim: c.mtime, Ctim: c.ctime}); got != c.want {
			t.Errorf("settled(%v, %v) = %v", c.mtime, c.ctime, got)
		}
	}
}
