package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteAtomicallyKeepsMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(path)
	if err := writeAtomically(path, []byte(`{"a":1}`), info); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(path)
	data, _ := os.ReadFile(path)
	if after.Mode().Perm() != 0o600 || string(data) != `{"a":1}` {
		t.Errorf("mode %v content %s", after.Mode(), data)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temp files left behind: %v", entries)
	}
}
