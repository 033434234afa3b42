package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"tags.cncf.io/container-device-interface/pkg/cdi"
)

const corpus = "../test/fixtures/cdi-corpus"

// specFiles: the corpus's specs, sorted by name, and the specs the vendor tools wrote.
func specFiles(t *testing.T) (own []string, vendors []string) {
	t.Helper()
	for _, dir := range []string{corpus, "../test/fixtures/discovery/cdi"} {
		var names []string
		for _, ext := range []string{"*.yaml", "*.json"} {
			m, err := filepath.Glob(filepath.Join(dir, ext))
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, m...)
		}
		sort.Strings(names)
		if len(names) == 0 {
			t.Fatalf("no specs in %s", dir)
		}
		if dir == corpus {
			own = names
		} else {
			vendors = names
		}
	}
	return own, vendors
}

// The checker refuses exactly what runtimes refuse: its verdict on every spec is the one
// cdi.ReadSpec (what runtimes load specs with) gives, though it names more problems.
func TestVerdictIsTheLibrarys(t *testing.T) {
	own, vendors := specFiles(t)
	for _, f := range append(own, vendors...) {
		problems := checkFile(f)
		_, err := cdi.ReadSpec(f, 0)
		if (len(problems) > 0) != (err != nil) {
			t.Errorf("%s: the checker says %q, cdi.ReadSpec says %v", f, problems, err)
		}
		base := filepath.Base(f)
		switch {
		case strings.HasPrefix(base, "refused-") && len(problems) == 0:
			t.Errorf("%s: no problem found", f)
		case !strings.HasPrefix(base, "refused-") && len(problems) > 0:
			t.Errorf("%s: refused: %q", f, problems)
		}
	}
}

// Every problem of every spec, one per line, naming the file and the field.
func TestEveryProblemNamed(t *testing.T) {
	own, _ := specFiles(t)
	want, err := os.ReadFile(filepath.Join(corpus, "expected-problems.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range own {
		names = append(names, filepath.Base(f))
	}
	wd, _ := os.Getwd()
	if err := os.Chdir(corpus); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	got, err := run(names)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "\n")+"\n" != string(want) {
		t.Errorf("problems:\n%s\nwant (expected-problems.txt):\n%s", strings.Join(got, "\n"), want)
	}
	// One refusal names every problem, where cdi.ReadSpec stops at the first.
	several := 0
	for _, p := range got {
		if strings.HasPrefix(p, "refused-several.json: ") {
			several++
		}
	}
	if several != 4 {
		t.Errorf("refused-several.json: %d problems, want 4", several)
	}
}

func TestAsNamesTheFile(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "new.yaml")
	if err := os.WriteFile(spec, []byte("cdiVersion: 0.5.0\nkind: vendor.com/gpu\ndevices:\n- name: a\n  containerEdits: {env: [X]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := run([]string{"--as", "/etc/cdi/vendor.yaml", spec})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`/etc/cdi/vendor.yaml: devices[0].containerEdits.env[0]: invalid environment variable "X"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestMissingFile(t *testing.T) {
	got, err := run([]string{"/nonexistent/spec.yaml"})
	if err != nil || len(got) != 1 || !strings.HasPrefix(got[0], "/nonexistent/spec.yaml: cannot read the spec: ") {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"--as", "x"}, {"--as", "x", "a", "b"}} {
		if _, err := run(args); err == nil || !strings.Contains(err.Error(), "usage: cdi-check") {
			t.Errorf("%q: got %v, want the usage", args, err)
		}
	}
}
