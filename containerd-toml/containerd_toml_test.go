package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const ours = `version = 2
[plugins."io.containerd.grpc.v1.cri"]
enable_cdi = true
[plugins."io.containerd.grpc.v1.cri".containerd]
default_runtime_name = "gpu"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.gpu]
runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.gpu.options]
BinaryName = "/usr/local/lib/gpu-workers/runc-wrapper"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
`

func mustParse(t *testing.T, text string) table {
	t.Helper()
	doc, err := parse(text, "test")
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func cri(doc table) table {
	return doc["plugins"].(table)["io.containerd.grpc.v1.cri"].(table)
}

func TestDropInCarriesTheHostsTableWithOursOnTop(t *testing.T) {
	main := mustParse(t, `version = 2
[plugins."io.containerd.grpc.v1.cri"]
sandbox_image = "pause:1"
enable_cdi = false
[plugins."io.containerd.grpc.v1.cri".containerd]
default_runtime_name = "runc"
snapshotter = "native"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
SystemdCgroup = true
[plugins."io.containerd.internal.v1.opt"]
path = "/opt"
`)
	out, err := dropIn(main, mustParse(t, ours))
	if err != nil {
		t.Fatal(err)
	}
	doc := mustParse(t, string(out))
	if doc["version"] != int64(2) {
		t.Errorf("version = %v", doc["version"])
	}
	if plugins := doc["plugins"].(table); len(plugins) != 1 {
		t.Errorf("plugin tables %v, want only the CRI one (ours names only it)", plugins)
	}
	c := cri(doc)
	want := map[string]interface{}{
		"sandbox_image": "pause:1",
		"enable_cdi":    true,
	}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("%s = %v, want %v", k, c[k], v)
		}
	}
	ctd := c["containerd"].(table)
	if ctd["default_runtime_name"] != "gpu" || ctd["snapshotter"] != "native" {
		t.Errorf("containerd table %v", ctd)
	}
	runc := ctd["runtimes"].(table)["runc"].(table)
	if runc["runtime_type"] != "io.containerd.runc.v2" || runc["options"].(table)["SystemdCgroup"] != true {
		t.Errorf("runc runtime %v: our empty options must not drop the host's", runc)
	}
	if !strings.HasPrefix(string(out), "# Written by gpu-workers") {
		t.Errorf("no header: %s", out)
	}
}

func TestDropInWithoutAMainConfig(t *testing.T) {
	out, err := dropIn(table{}, mustParse(t, ours))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(mustParse(t, string(out)), mustParse(t, ours)) {
		t.Errorf("with no host settings the drop-in is ours:\n%s", out)
	}
}

func TestDropInRefuses(t *testing.T) {
	cases := map[string]string{
		"[plugins.cri]\nx = 1\n":     "version 1",
		"version = 3\n":              "version 3",
		"version = \"2\"\n":          "version must be a number",
		"version = 2\nplugins = 1\n": "plugins is not a table",
		"version = 2\n[plugins]\n\"io.containerd.grpc.v1.cri\" = 5\n": "is not a table",
	}
	for text, want := range cases {
		if _, err := dropIn(mustParse(t, text), mustParse(t, ours)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to mention %q", text, err, want)
		}
	}
}

func TestMergeReplacesListsAndLeavesItsArgumentsAlone(t *testing.T) {
	base := table{"a": []interface{}{"x"}, "t": table{"k": int64(1), "keep": true}}
	over := table{"a": []interface{}{"y"}, "t": table{"k": int64(2)}, "new": table{"n": "v"}}
	got := merge(base, over)
	want := table{"a": []interface{}{"y"}, "t": table{"k": int64(2), "keep": true}, "new": table{"n": "v"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merge = %v, want %v", got, want)
	}
	if base["t"].(table)["k"] != int64(1) || over["t"].(table)["keep"] != nil {
		t.Error("merge changed its arguments")
	}
}

func TestMainWithImport(t *testing.T) {
	const glob = "/etc/containerd/conf.d/*.toml"
	line := `imports = [ "/etc/containerd/conf.d/*.toml" ]` + "\n"
	empty, _ := mainWithImport("  \n", "m", glob)
	if string(empty) != "version = 2\n"+line {
		t.Errorf("empty: %q", empty)
	}
	host := "# host\nversion = 2\n[plugins.\"x\"]\n  a = 1 # why\n"
	got, err := mainWithImport(host, "m", glob)
	if err != nil || string(got) != line+host {
		t.Errorf("got %q, %v", got, err)
	}
	again, err := mainWithImport(string(got), "m", glob)
	if err != nil || string(again) != string(got) {
		t.Errorf("a config that imports the glob changed: %q, %v", again, err)
	}
	for text, want := range map[string]string{
		"imports = [\"/x/*.toml\"]\nversion = 2\n": `already has an imports list without "/etc/containerd/conf.d/*.toml"`,
		"imports = \"/x\"\nversion = 2\n":          "imports must be a list",
		"[plugins.cri]\nx = 1\n":                   "not a version 2 config (version 1)",
		"version = 2\n[broken\n":                   "not valid TOML",
	} {
		if _, err := mainWithImport(text, "m", glob); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", text, err, want)
		}
	}
}

func TestCompareDumps(t *testing.T) {
	before := mustParse(t, `version = 2
imports = ["/a/*.toml"]
[plugins."io.containerd.grpc.v1.cri"]
sandbox_image = "pause:host"
enable_cdi = false
max_concurrent_downloads = 3
unset_means_empty = ""
tolerated = []
[plugins."io.containerd.grpc.v1.cri".containerd]
default_runtime_name = "runc"
`)
	after := mustParse(t, `version = 2
[plugins."io.containerd.grpc.v1.cri"]
sandbox_image = "pause:other"
enable_cdi = true
[plugins."io.containerd.grpc.v1.cri".containerd]
default_runtime_name = "gpu"
`)
	got := compareDumps(before, after, mustParse(t, ours))
	want := []string{
		`lost: plugins."io.containerd.grpc.v1.cri".max_concurrent_downloads = 3`,
		`lost: plugins."io.containerd.grpc.v1.cri".sandbox_image = "pause:host" (now "pause:other")`,
		`missing: plugins."io.containerd.grpc.v1.cri".containerd.runtimes.gpu.options.BinaryName = "/usr/local/lib/gpu-workers/runc-wrapper"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("compareDumps =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if same := compareDumps(before, before, table{}); len(same) != 0 {
		t.Errorf("a dump compared with itself: %v", same)
	}
}

func TestQuoting(t *testing.T) {
	for in, want := range map[string]string{"runc": "runc", "io.containerd.grpc.v1.cri": `"io.containerd.grpc.v1.cri"`, "": `""`, `a"b\c`: `"a\"b\\c"`, "tab\there": `"tab\u0009here"`} {
		if got := quoteKey(in); got != want {
			t.Errorf("quoteKey(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestRunReadsFiles(t *testing.T) {
	dir := t.TempDir()
	oursPath := filepath.Join(dir, "ours.toml")
	os.WriteFile(oursPath, []byte(ours), 0o644)
	out, findings, err := run([]string{"drop-in", filepath.Join(dir, "missing.toml"), oursPath})
	if err != nil || findings || !strings.Contains(string(out), "BinaryName") {
		t.Errorf("drop-in with a missing main config: %s %v %v", out, findings, err)
	}
	if _, _, err := run([]string{"drop-in", oursPath}); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Errorf("a missing argument: %v", err)
	}
	if _, _, err := run([]string{"compare-dumps", oursPath, oursPath, filepath.Join(dir, "none")}); err == nil {
		t.Error("compare-dumps read a missing file as empty")
	}
}
