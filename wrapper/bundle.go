package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// writeAtomically replaces path with data: a temp file in the same folder, the original
// mode and owner, rename. A reader sees the old file or the new one, never half, and a
// failed write leaves the old one. No fsync: the files it edits (a bundle's config.json under
// /run, the process file of one `runc exec`) are read by runc within milliseconds and die with
// the machine, so making them outlive a crash buys nothing, while an fsync on a worker's busy
// disk waits for that disk.
func writeAtomically(path string, data []byte, info os.FileInfo) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config.json.gpu-workers-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	fail := func(err error) error {
		tmp.Close()
		os.Remove(name)
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		return fail(err)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && (int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid()) {
		if err := tmp.Chown(int(st.Uid), int(st.Gid)); err != nil {
			return fail(err)
		}
	}
	if err := tmp.Close(); err != nil {
		os.Remove(name)
		return err
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return fmt.Errorf("rename %s: %w", name, err)
	}
	return nil
}
