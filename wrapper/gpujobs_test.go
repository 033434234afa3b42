package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func readText(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func withStateDir(t *testing.T) string {
	t.Helper()
	old := stateDir
	t.Cleanup(func() { stateDir = old })
	stateDir = filepath.Join(t.TempDir(), "run")
	return stateDir
}

func TestRecordGpuJobs(t *testing.T) {
	state := withStateDir(t)
	mapping := filepath.Join(t.TempDir(), "dcgm")
	g := &gpuJobs{Gpus: []string{"0", "3"}, MappingDir: mapping}
	spec, _ := parseSpec([]byte(`{"process":{"env":["PATH=/bin","BUILD_TEAM_NAME=main","BUILD_PIPELINE_NAME=train","BUILD_JOB_NAME=fit","BUILD_NAME=7","BUILD_ID=1234"]}}`))
	if err := recordGpuJobs(g, "handle-b", "", spec); err != nil {
		t.Fatal(err)
	}
	task, _ := parseSpec([]byte(`{"process":{"env":["PATH=/bin"]}}`))
	if err := recordGpuJobs(g, "handle-a", "", task); err != nil {
		t.Fatal(err)
	}
	want := "container=handle-b\nteam=main\npipeline=train\njob=fit\nbuild=7\nbuild_id=1234\n"
	if got := readText(t, filepath.Join(state, "gpu-jobs", "3", "handle-b")); got != want {
		t.Errorf("record = %q, want %q", got, want)
	}
	empty := "container=handle-a\nteam=\npipeline=\njob=\nbuild=\nbuild_id=\n"
	if got := readText(t, filepath.Join(state, "gpu-jobs", "0", "handle-a")); got != empty {
		t.Errorf("a task's record = %q, want the id alone: %q", got, empty)
	}
	for _, gpu := range g.Gpus {
		if got := readText(t, filepath.Join(mapping, gpu)); got != "handle-a\nhandle-b\n" {
			t.Errorf("mapping %s = %q, want both containers, one a line", gpu, got)
		}
	}
	if got := readText(t, filepath.Join(state, "gpu-jobs", mappingLinkName)); got != mapping+"\n" {
		t.Errorf("%s = %q", mappingLinkName, got)
	}
	if entries, _ := os.ReadDir(mapping); len(entries) != 2 {
		t.Errorf("mapping folder holds %d entries (a temp file left?), want 2", len(entries))
	}

	// Off again: the folder is no longer named, so delete writes no mapping.
	g.MappingDir = ""
	if err := recordGpuJobs(g, "handle-c", "", task); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, "gpu-jobs", mappingLinkName)); !os.IsNotExist(err) {
		t.Errorf("%s left behind: %v", mappingLinkName, err)
	}
}

func TestRecordGpuJobsRefuses(t *testing.T) {
	state := withStateDir(t)
	g := &gpuJobs{Gpus: []string{"0"}}
	for _, id := range []string{"../x", "a/b", ".hidden", "", "a\nb"} {
		if err := recordGpuJobs(g, id, "", object{}); err == nil || !strings.Contains(err.Error(), "not a plain file name") {
			t.Errorf("id %q: %v", id, err)
		}
	}
	// A records' folder others can write is never written through.
	if err := os.MkdirAll(filepath.Join(state, "gpu-jobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(state, "gpu-jobs"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := recordGpuJobs(g, "ok", "", object{}); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Errorf("a world-writable records' folder: %v", err)
	}
	// A link where the mapping folder should be is not followed.
	if err := os.Chmod(filepath.Join(state, "gpu-jobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "mapping")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	g.MappingDir = link
	if err := recordGpuJobs(g, "ok", "", object{}); err == nil || !strings.Contains(err.Error(), "dcgm-exporter job mapping") {
		t.Errorf("a link as the mapping folder: %v", err)
	}
}

func TestJobLabelValues(t *testing.T) {
	spec, _ := parseSpec([]byte(`{"process":{"env":["BUILD_TEAM_NAME=a\u0000b\nteam=forged","BUILD_NAME=` + strings.Repeat("x", 300) + `"]}}`))
	got := jobLabels("h", "", spec)
	if strings.Count(got, "\n") != 6 || !strings.Contains(got, "team=abteam=forged\n") {
		t.Errorf("a value broke its line: %q", got)
	}
	if !strings.Contains(got, "build="+strings.Repeat("x", 256)+"\n") {
		t.Errorf("a long value was not cut at 256 bytes: %q", got)
	}
}

func TestGpuJobsSettings(t *testing.T) {
	bad := map[string]string{
		`{"realRuntime":"/r","gpuJobs":{"gpus":[]}}`:                           "at least one",
		`{"realRuntime":"/r","gpuJobs":{"gpus":["0:1"]}}`:                      "not a GPU index",
		`{"realRuntime":"/r","gpuJobs":{"gpus":["0"],"mappingDir":"rel"}}`:     "absolute",
		`{"realRuntime":"/r","gpuJobs":{"gpus":["0"],"mappingDir":"/a/../b"}}`: "normal form",
		`{"realRuntime":"/r","gpuJobs":{"gpus":["0"],"typo":1}}`:               "unknown field",
	}
	for text, want := range bad {
		if _, err := loadSettings(writeSettings(t, text, 0o644)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to mention %q", text, err, want)
		}
	}
	s, err := loadSettings(writeSettings(t, `{"realRuntime":"/r","gpuJobs":{"gpus":["0","1"],"mappingDir":"/run/dcgm"}}`, 0o644))
	if err != nil || s.GpuJobs == nil || len(s.GpuJobs.Gpus) != 2 {
		t.Errorf("gpuJobs: %+v %v", s, err)
	}
}

func TestSweepStaleRecords(t *testing.T) {
	state := withStateDir(t)
	root := filepath.Join(t.TempDir(), "runc")
	if err := os.MkdirAll(filepath.Join(root, "alive"), 0o700); err != nil {
		t.Fatal(err)
	}
	mapping := filepath.Join(t.TempDir(), "dcgm")
	g := &gpuJobs{Gpus: []string{"0"}, MappingDir: mapping}
	for _, id := range []string{"alive", "gone", "young"} {
		if err := recordGpuJobs(g, id, root, object{}); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleAfter)
	for _, id := range []string{"alive", "gone"} {
		if err := os.Chtimes(filepath.Join(state, "gpu-jobs", "0", id), old, old); err != nil {
			t.Fatal(err)
		}
	}
	if got := readText(t, filepath.Join(state, "gpu-jobs", "0", "gone")); !strings.HasSuffix(got, "runc_root="+root+"\n") {
		t.Errorf("record = %q, want runc's state folder last", got)
	}
	if err := recordGpuJobs(g, "new", root, object{}); err != nil {
		t.Fatal(err)
	}
	// gone: old, and runc keeps no state for it; alive has its state; young may be a create under way.
	if got := readText(t, filepath.Join(mapping, "0")); got != "alive\nnew\nyoung\n" {
		t.Errorf("mapping after the sweep = %q", got)
	}
	if _, err := os.Stat(filepath.Join(state, "gpu-jobs", "0", "gone")); !os.IsNotExist(err) {
		t.Errorf("the leftover record stayed: %v", err)
	}
}
