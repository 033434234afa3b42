package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Only real folders with a writable suffix get a mount of their own; links are never
// followed (they resolve inside the container), everything else is in the read-only root.
func TestScanDatasets(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "srv")
	outside := filepath.Join(base, "outside_rw")
	for _, d := range []string{root, outside, filepath.Join(root, "plain"), filepath.Join(root, "data_rw"), filepath.Join(root, "DATA_RW"),
		filepath.Join(root, "nested", "child_rw"), filepath.Join(root, "space name $(x)\n_rw"), filepath.Join(root, "cache_writable"), filepath.Join(root, "scratch_rw", "team")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(root, "file_rw"), nil, 0o644))
	must(t, os.Symlink("plain", filepath.Join(root, "link_rw")))
	must(t, os.Symlink("scratch_rw/team", filepath.Join(root, "team_rw")))
	must(t, os.Symlink(outside, filepath.Join(root, "escape_rw")))
	must(t, os.Symlink("/etc", filepath.Join(root, "etc_rw")))
	must(t, os.Symlink("missing", filepath.Join(root, "dangling_rw")))
	must(t, syscall.Mkfifo(filepath.Join(root, "fifo_rw"), 0o644))
	must(t, os.Mkdir(filepath.Join(root, "caf\xe9_rw"), 0o755)) // Latin-1, not UTF-8
	must(t, os.Mkdir(filepath.Join(root, "café_rw"), 0o755))

	d, notes, err := scanDatasets(root+"/", []string{"_rw", "_writable"})
	must(t, err)
	source, err := filepath.EvalSymlinks(root)
	must(t, err)
	want := &datasets{Root: root, Source: source, Writable: []string{"cache_writable", "café_rw", "data_rw", "scratch_rw", "space name $(x)\n_rw"}}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("datasets =\n%#v\nwant\n%#v", d, want)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], `caf\xe9_rw" stays read-only although its name ends with a writable suffix: the name is not UTF-8`) {
		t.Errorf("notes = %q, want one for the Latin-1 name", notes)
	}
}

// The root is resolved once (it is the operator's path); the container sees it at its own path.
func TestScanDatasetsResolvesTheRootOnce(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "data", "srv")
	must(t, os.MkdirAll(filepath.Join(real, "a_rw"), 0o755))
	link := filepath.Join(base, "srv")
	must(t, os.Symlink(real, link))
	d, _, err := scanDatasets(link, []string{"_rw"})
	must(t, err)
	resolved, _ := filepath.EvalSymlinks(real)
	if d.Root != link || d.Source != resolved || !reflect.DeepEqual(d.Writable, []string{"a_rw"}) {
		t.Errorf("datasets = %+v, want root %s from %s", d, link, resolved)
	}
}

// Thousands of folders, few writable: one pass, and only the writable ones come back.
func TestScanDatasetsManyFolders(t *testing.T) {
	root := t.TempDir()
	must(t, os.Chmod(root, 0o755))
	for i := 0; i < 3000; i++ {
		must(t, os.Mkdir(filepath.Join(root, "set-"+strconv.Itoa(i)), 0o755))
	}
	for _, n := range []string{"a_rw", "b_rw"} {
		must(t, os.Mkdir(filepath.Join(root, n), 0o755))
	}
	d, _, err := scanDatasets(root, []string{"_rw"})
	must(t, err)
	if !reflect.DeepEqual(d.Writable, []string{"a_rw", "b_rw"}) {
		t.Errorf("writable = %q", d.Writable)
	}
}

func TestScanDatasetsMissingRoot(t *testing.T) {
	for name, root := range map[string]string{"missing": filepath.Join(t.TempDir(), "none"), "no": "", "dangling link": danglingLink(t)} {
		if d, n, err := scanDatasets(root, nil); d != nil || n != nil || err != nil {
			t.Errorf("%s root gave %v %v %v", name, d, n, err)
		}
	}
}

func danglingLink(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "srv")
	must(t, os.Symlink("nowhere", p))
	return p
}

func TestScanDatasetsEmptyRoot(t *testing.T) {
	root := t.TempDir()
	must(t, os.Chmod(root, 0o755))
	d, n, err := scanDatasets(root, []string{"_rw"})
	if err != nil || n != nil || d == nil || d.Writable != nil {
		t.Errorf("empty root gave %+v %v %v; want the root alone", d, n, err)
	}
}

func TestScanDatasetsRefusals(t *testing.T) {
	// A root that exists but cannot be listed must fail the create, not start a container without its datasets.
	file := filepath.Join(t.TempDir(), "srv")
	must(t, os.WriteFile(file, nil, 0o644))
	if d, _, err := scanDatasets(file, nil); err == nil || !strings.Contains(err.Error(), "dataset root "+file+" cannot be listed") || !strings.Contains(err.Error(), "not a directory") || d != nil {
		t.Errorf("a root that is a file gave %v, %v", d, err)
	}
	if _, _, err := scanDatasets("/", nil); err == nil || !strings.Contains(err.Error(), "is the host's /") {
		t.Errorf("root / gave %v", err)
	}
	open := filepath.Join(t.TempDir(), "srv")
	must(t, os.Mkdir(open, 0o755))
	must(t, syscall.Chmod(open, 0o1777))
	if _, _, err := scanDatasets(open, nil); err == nil || !strings.Contains(err.Error(), "must not be writable by group or others (mode 1777): whoever can write the root could swap a writable folder for a link") {
		t.Errorf("a world-writable root gave %v", err)
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(t.TempDir(), "srv")
		must(t, os.Mkdir(other, 0o755))
		must(t, os.Chown(other, 1000, 1000))
		if _, _, err := scanDatasets(other, nil); err == nil || !strings.Contains(err.Error(), "must be owned by root (owner uid 1000)") {
			t.Errorf("a root owned by uid 1000 gave %v", err)
		}
	}
}

// Each rule of which folders are writable and which roots are safe, pinned alone, with the
// expected answers written out.
func TestWritableSuffixIsAnEndingByteForByte(t *testing.T) {
	suffixes := []string{"_writable", "_rw"}
	for name, want := range map[string]bool{
		"scratch_rw":    true,
		"out_writable":  true,
		"_rw":           true,
		"modelsrw":      false, // ends with "rw", not with "_rw"
		"_rwx":          false, // starts with "_rw"
		"scratch_RW":    false, // another case is another name
		"scratch_rw.":   false,
		"a_rw_b":        false,
		"writable":      false,
		"x_writablex":   false,
		"models_rw_rw":  true,
		"models-rw":     false,
		"scratch_rw ":   false,
		"scratch\x00rw": false,
	} {
		if got := hasWritableSuffix([]byte(name), suffixes); got != want {
			t.Errorf("%q: writable %v, want %v", name, got, want)
		}
	}
}

func TestRootModes(t *testing.T) {
	for mode, want := range map[uint32]string{
		0o755:  "",
		0o750:  "",
		0o700:  "",
		0o1755: "",
		0o775:  "must not be writable by group or others (mode 0775)",
		0o757:  "must not be writable by group or others (mode 0757)",
		0o777:  "must not be writable by group or others (mode 0777)",
		0o1777: "must not be writable by group or others (mode 1777)",
		0o2775: "must not be writable by group or others (mode 2775)",
	} {
		dir := t.TempDir()
		if err := os.Chmod(dir, os.FileMode(mode&0o777)|modeBits(mode)); err != nil {
			t.Fatal(err)
		}
		fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			t.Fatal(err)
		}
		got := ""
		if err := rootIsSafe(fd, &st); err != nil {
			got = err.Error()
		}
		syscall.Close(fd)
		if got != want {
			t.Errorf("mode %04o: %q, want %q", mode, got, want)
		}
	}
}

// modeBits: the sticky and setgid bits of a numeric mode, as os.FileMode has them.
func modeBits(mode uint32) os.FileMode {
	var m os.FileMode
	if mode&0o1000 != 0 {
		m |= os.ModeSticky
	}
	if mode&0o2000 != 0 {
		m |= os.ModeSetgid
	}
	return m
}
