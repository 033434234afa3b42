package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestScanDatasets(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "srv")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "plain"), filepath.Join(root, "data_rw"), filepath.Join(root, "DATA_RW"), filepath.Join(root, "nested", "child"), filepath.Join(root, "space name $(x)\n")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(root, "file.txt"), nil, 0o644))
	// A link is read-write only when its name and the dataset its target lies in both say so.
	must(os.Symlink("plain", filepath.Join(root, "link_rw")))
	must(os.MkdirAll(filepath.Join(root, "nested", "inner_rw"), 0o755))
	must(os.Symlink("nested/inner_rw", filepath.Join(root, "deep_rw")))
	must(os.MkdirAll(filepath.Join(root, "data_rw", "sub"), 0o755))
	must(os.Symlink("data_rw/sub", filepath.Join(root, "scratch_rw")))
	must(os.Symlink("data_rw", filepath.Join(root, "view")))
	must(os.Symlink(outside, filepath.Join(root, "escape")))
	must(os.Symlink("missing", filepath.Join(root, "dangling")))
	must(os.Symlink(".", filepath.Join(root, "self_rw")))
	must(os.Symlink("file.txt", filepath.Join(root, "filelink")))
	must(syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	must(os.Mkdir(filepath.Join(root, "caf\xe9_rw"), 0o755)) // Latin-1, not UTF-8
	must(os.Mkdir(filepath.Join(root, "café_rw"), 0o755))

	mounts, notes, err := scanDatasets(root, []string{"_rw", "_writable"})
	must(err)
	resolvedRoot, err := filepath.EvalSymlinks(root)
	must(err)
	want := []datasetMount{
		{filepath.Join(root, "DATA_RW"), filepath.Join(root, "DATA_RW"), false},
		{filepath.Join(root, "café_rw"), filepath.Join(root, "café_rw"), true},
		{filepath.Join(root, "data_rw"), filepath.Join(root, "data_rw"), true},
		{filepath.Join(root, "nested", "inner_rw"), filepath.Join(root, "deep_rw"), false},
		{filepath.Join(root, "plain"), filepath.Join(root, "link_rw"), false},
		{filepath.Join(root, "nested"), filepath.Join(root, "nested"), false},
		{filepath.Join(root, "plain"), filepath.Join(root, "plain"), false},
		{filepath.Join(root, "data_rw", "sub"), filepath.Join(root, "scratch_rw"), true},
		{filepath.Join(root, "space name $(x)\n"), filepath.Join(root, "space name $(x)\n"), false},
		{filepath.Join(root, "data_rw"), filepath.Join(root, "view"), false},
	}
	// The temp dir may itself sit behind a symlink: compare resolved sources.
	for i := range want {
		if s, err := filepath.EvalSymlinks(want[i].Source); err == nil {
			want[i].Source = s
		}
	}
	for i := range mounts {
		if s, err := filepath.EvalSymlinks(mounts[i].Source); err == nil {
			mounts[i].Source = s
		}
	}
	if !reflect.DeepEqual(mounts, want) {
		t.Errorf("mounts =\n%+v\nwant\n%+v", mounts, want)
	}
	joined := strings.Join(notes, "\n")
	for _, n := range []string{"escape", "dangling", "self_rw", "not UTF-8",
		`link_rw" mounted read-only although its name ends with a writable suffix: it is a symlink to ` + resolvedRoot + `/plain, which lies in the read-only dataset "plain"`,
		`deep_rw" mounted read-only`} {
		if !strings.Contains(joined, n) {
			t.Errorf("no note for %s in %q", n, notes)
		}
	}
	if strings.Contains(joined, "fifo") || strings.Contains(joined, "file.txt") {
		t.Errorf("files are ignored silently, got %q", notes)
	}
}

func TestScanDatasetsMissingOrEmptyRoot(t *testing.T) {
	for name, root := range map[string]string{"missing": filepath.Join(t.TempDir(), "none"), "empty": t.TempDir(), "no": ""} {
		if m, n, err := scanDatasets(root, nil); m != nil || n != nil || err != nil {
			t.Errorf("%s root gave %v %v %v", name, m, n, err)
		}
	}
}

func TestScanDatasetsUnlistableRoot(t *testing.T) {
	// A root that exists but cannot be listed must fail the create, not start a container without its datasets.
	root := filepath.Join(t.TempDir(), "srv")
	if err := os.WriteFile(root, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m, _, err := scanDatasets(root, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot be listed") || m != nil {
		t.Errorf("a root that is a file gave %v, %v", m, err)
	}
}
