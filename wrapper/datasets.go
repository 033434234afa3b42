package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// datasetMount is one bind mount of a folder under the dataset root.
type datasetMount struct {
	Source      string
	Destination string
	Writable    bool
}

// scanDatasets lists the direct subfolders of root as mounts at the same path. A name
// is used as it is (no shell, no parsing), so any byte sequence is fine. Symlinks are
// followed only when they end at a folder inside root. notes gets one line per entry
// that was left out for a reason worth logging.
func scanDatasets(root string, writableSuffixes []string) (mounts []datasetMount, notes []string) {
	if root == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			notes = append(notes, fmt.Sprintf("dataset root %s cannot be listed, no datasets mounted: %v", root, err))
		}
		return nil, notes
	}
	var realRoot string // resolved lazily: only symlinks need it
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(root, name)
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
			info, err := os.Stat(target)
			if err != nil || !info.IsDir() {
				continue // a link to a file: files are not datasets
			}
			m.Source = target
			mounts = append(mounts, m)
		}
		// Files, fifos, sockets and device nodes are not datasets.
	}
	return mounts, notes
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

// below reports whether path lies strictly inside dir (both already resolved). The root
// itself does not count: a link to it would mount every dataset under one name.
func below(dir, path string) bool {
	if dir == "/" {
		return path != "/" && strings.HasPrefix(path, "/")
	}
	return strings.HasPrefix(path, dir+"/")
}
