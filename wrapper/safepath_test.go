package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// filesUnder lists every file (not folder) below dir.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// plantLink makes base/<names...> with the component at level a link to outside, where the rest
// of the path waits as real folders (so that following the link would succeed); returns the path.
func plantLink(t *testing.T, base, outside string, names []string, level int) string {
	t.Helper()
	at := base
	for i, n := range names {
		at = filepath.Join(at, n)
		if i == level {
			if err := os.MkdirAll(filepath.Join(append([]string{outside}, names[i+1:]...)...), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, at); err != nil {
				t.Fatal(err)
			}
		} else if i < level {
			if err := os.Mkdir(at, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	return at
}

func TestMappingDirLinksAtEveryLevel(t *testing.T) {
	names := []string{"dcgm", "jobs", "mapping"}
	for level := range names {
		withStateDir(t)
		base, outside := t.TempDir(), t.TempDir()
		mapping := plantLink(t, base, outside, names, level)
		g := &gpuJobs{Gpus: []string{"0", "1"}, MappingDir: mapping}
		err := recordGpuJobs(g, "c1", "", object{})
		if err == nil || !strings.Contains(err.Error(), "is a link or no folder: never followed") {
			t.Errorf("a link at %s: %v", filepath.Join(names[:level+1]...), err)
		}
		if files := filesUnder(t, outside); len(files) != 0 {
			t.Errorf("a link at %s: root wrote %v outside", filepath.Join(names[:level+1]...), files)
		}
	}
}

func TestRecordsDirLinksAtEveryLevel(t *testing.T) {
	names := []string{"run", "gpu-workers"}
	for level := range names {
		old := stateDir
		t.Cleanup(func() { stateDir = old })
		base, outside := t.TempDir(), t.TempDir()
		stateDir = plantLink(t, base, outside, names, level)
		err := recordGpuJobs(&gpuJobs{Gpus: []string{"0"}}, "c1", "", object{})
		if err == nil || !strings.Contains(err.Error(), "is a link or no folder: never followed") {
			t.Errorf("a link at %s: %v", filepath.Join(names[:level+1]...), err)
		}
		if files := filesUnder(t, outside); len(files) != 0 {
			t.Errorf("a link at %s: root wrote %v outside", filepath.Join(names[:level+1]...), files)
		}
	}
	// The records' folder itself.
	withStateDir(t)
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(stateDir, gpuJobsDirName)); err != nil {
		t.Fatal(err)
	}
	if err := recordGpuJobs(&gpuJobs{Gpus: []string{"0"}}, "c1", "", object{}); err == nil {
		t.Error("a link as the records' folder was followed")
	}
	if files := filesUnder(t, outside); len(files) != 0 {
		t.Errorf("root wrote %v through the records' folder link", files)
	}
}

// mappingIn writes a record with the mapping folder base/sub/jobs, base made with mode.
func mappingIn(t *testing.T, mode os.FileMode, owner int) (string, error) {
	t.Helper()
	withStateDir(t)
	base := filepath.Join(t.TempDir(), "sub")
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, mode); err != nil {
		t.Fatal(err)
	}
	if owner >= 0 {
		if err := os.Chown(base, owner, owner); err != nil {
			t.Fatal(err)
		}
	}
	mapping := filepath.Join(base, "jobs")
	return mapping, recordGpuJobs(&gpuJobs{Gpus: []string{"0"}, MappingDir: mapping}, "c1", "", object{})
}

func TestMappingDirWritableByOthers(t *testing.T) {
	for _, mode := range []os.FileMode{0o775, 0o757} {
		if _, err := mappingIn(t, mode, -1); err == nil || !strings.Contains(err.Error(), "without the sticky bit") {
			t.Errorf("a folder above of mode %o: %v", mode, err)
		}
	}
	// Sticky, as /tmp: others cannot move root's folder away, so the walk goes on.
	mapping, err := mappingIn(t, 0o777|os.ModeSticky, -1)
	if err != nil {
		t.Fatalf("a sticky folder above: %v", err)
	}
	if got := readText(t, filepath.Join(mapping, "0")); got != "c1\n" {
		t.Errorf("mapping = %q", got)
	}
	// The folder written in takes no sticky bit: others could put their own files there.
	if err := os.Chmod(mapping, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	err = recordGpuJobs(&gpuJobs{Gpus: []string{"0"}, MappingDir: mapping}, "c2", "", object{})
	if err == nil || !strings.Contains(err.Error(), "must not be writable by group or others (mode 1777)") {
		t.Errorf("a sticky world-writable mapping folder: %v", err)
	}
}

func TestMappingDirOwnedByAnother(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a folder to another user")
	}
	const nobody = 65534
	if _, err := mappingIn(t, 0o755, nobody); err == nil || !strings.Contains(err.Error(), "must be owned by root (owner uid 65534)") {
		t.Errorf("a folder above owned by another user: %v", err)
	}
	if _, err := mappingIn(t, 0o777|os.ModeSticky, nobody); err == nil || !strings.Contains(err.Error(), "must be owned by root") {
		t.Errorf("a sticky folder above owned by another user: %v", err)
	}
}

func TestMappingDirMadeAndNoted(t *testing.T) {
	state := withStateDir(t)
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	base := t.TempDir()
	made := []string{filepath.Join(base, "a"), filepath.Join(base, "a", "b"), filepath.Join(base, "a", "b", "jobs")}
	if err := recordGpuJobs(&gpuJobs{Gpus: []string{"0"}, MappingDir: made[2]}, "c1", "", object{}); err != nil {
		t.Fatal(err)
	}
	for _, dir := range made {
		info, err := os.Stat(dir)
		if err != nil || info.Mode().Perm() != 0o755 {
			t.Errorf("%s: %v %v, want a folder of mode 0755 whatever the umask", dir, info, err)
		}
	}
	list := filepath.Join(state, gpuJobsDirName, madeListName)
	if got := readText(t, list); got != strings.Join(made, "\n")+"\n" {
		t.Errorf("%s = %q, want the folders made, parents first", madeListName, got)
	}
	// A second create makes nothing, and the list stays.
	if err := recordGpuJobs(&gpuJobs{Gpus: []string{"0"}, MappingDir: made[2]}, "c2", "", object{}); err != nil {
		t.Fatal(err)
	}
	if got := readText(t, list); got != strings.Join(made, "\n")+"\n" {
		t.Errorf("%s after a second create = %q", madeListName, got)
	}
}
