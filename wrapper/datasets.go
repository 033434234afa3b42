package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// datasetMount is one bind mount of a folder under the dataset root.
type datasetMount struct {
	Source      string
	Destination string
	Writable    bool
}

// scanDatasets lists the direct subfolders of root as mounts at the same path. A name
// is used as it is (no shell, no parsing), so any UTF-8 name is fine; a name that is not
// UTF-8 cannot be written into the JSON spec (it would turn into U+FFFD and name a folder
// that does not exist), so it is skipped. Symlinks are followed only when they end at a
// folder inside root, and a link never opens more than its target: it is read-write only
// when its own name and the dataset its target lies in both say so (a link scratch_rw ->
// models mounts models read-only). notes gets one line per entry that was left out or
// narrowed, for the log. A missing root means no datasets; a root that exists but cannot
// be listed is an error, so that no container starts silently without its datasets.
func scanDatasets(root string, writableSuffixes []string) (mounts []datasetMount, notes []string, err error) {
	if root == "" {
		return nil, nil, nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("dataset root %s cannot be listed: %v", root, err)
	}
	var realRoot string // resolved lazily: only symlinks need it
	base := filepath.Clean(root)
	if base != "/" {
		base += "/"
	}
	mounts = make([]datasetMount, 0, len(entries))
	for _, e := range entries {
		name := e.Name()
		path := base + name // a name holds no slash: nothing to clean
		if !utf8.ValidString(name) {
			notes = append(notes, fmt.Sprintf("dataset %q skipped: its name is not UTF-8, which the spec's JSON cannot carry", path))
			continue
		}
		m := datasetMount{Source: path, Destination: path, Writable: isWritable(name, writableSuffixes)}
		switch t := e.Type(); {
		case t.IsDir():
			mounts = append(mounts, m)
		case t&fs.ModeSymlink != 0:
			if realRoot == "" {
				if realRoot, err = filepath.EvalSymlinks(root); err != nil {
					notes = append(notes, fmt.Sprintf("dataset %q skipped: cannot resolve the dataset root: %v", path, err))
					continue
				}
			}
			target, err := filepath.EvalSymlinks(path)
			if err != nil {
				notes = append(notes, fmt.Sprintf("dataset %q skipped: symlink cannot be resolved: %v", path, err))
				continue
			}
			if !below(realRoot, target) {
				notes = append(notes, fmt.Sprintf("dataset %q skipped: symlink leads outside %s (to %s)", path, root, target))
				continue
			}
			if !utf8.ValidString(target) {
				notes = append(notes, fmt.Sprintf("dataset %q skipped: its target %q is not UTF-8, which the spec's JSON cannot carry", path, target))
				continue
			}
			info, err := os.Stat(target)
			if err != nil || !info.IsDir() {
				continue // a link to a file: files are not datasets
			}
			m.Source = target
			if owner := topFolder(realRoot, target); m.Writable && !isWritable(owner, writableSuffixes) {
				m.Writable = false
				notes = append(notes, fmt.Sprintf("dataset %q mounted read-only although its name ends with a writable suffix: it is a symlink to %s, which lies in the read-only dataset %q", path, target, owner))
			}
			mounts = append(mounts, m)
		}
		// Files, fifos, sockets and device nodes are not datasets.
	}
	if len(mounts) == 0 {
		mounts = nil
	}
	return mounts, notes, nil
}

// isWritable: the name ends with one of the suffixes, compared byte for byte ("_RW" is not "_rw").
func isWritable(name string, suffixes []string) bool {
	for _, s := range suffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// topFolder is the name of the direct child of root that path lies in (both resolved,
// path strictly inside root): the dataset whose mode path has.
func topFolder(root, path string) string {
	rel := strings.TrimPrefix(path, root)
	rel = strings.TrimPrefix(rel, "/")
	if i := strings.IndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return rel
}

// below reports whether path lies strictly inside dir (both already resolved). The root
// itself does not count: a link to it would mount every dataset under one name.
func below(dir, path string) bool {
	if dir == "/" {
		return path != "/" && strings.HasPrefix(path, "/")
	}
	return strings.HasPrefix(path, dir+"/")
}
