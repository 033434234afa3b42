package main

import (
	"fmt"
	"os"
	"syscall"
)

// hostDevice is a device node as it is on the host, to be created in the container.
type hostDevice struct {
	Path     string
	Type     string // "c" or "b"
	Major    int64
	Minor    int64
	FileMode uint32
	UID      uint32
	GID      uint32
}

// statDevice reads a host device node (following symlinks, as /dev/dri/by-path links are).
// Nothing is changed on the host: access comes from the node's own owner and group.
func statDevice(path string) (hostDevice, error) {
	info, err := os.Stat(path)
	if err != nil {
		return hostDevice{}, fmt.Errorf("device node %s: %w", path, err)
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return hostDevice{}, fmt.Errorf("device node %s: no stat data", path)
	}
	d := hostDevice{Path: path, FileMode: uint32(info.Mode().Perm()), UID: st.Uid, GID: st.Gid}
	switch {
	case info.Mode()&os.ModeCharDevice != 0:
		d.Type = "c"
	case info.Mode()&os.ModeDevice != 0:
		d.Type = "b"
	default:
		return hostDevice{}, fmt.Errorf("device node %s is not a character or block device (%s)", path, info.Mode().Type())
	}
	rdev := uint64(st.Rdev)
	d.Major = int64(((rdev >> 8) & 0xfff) | ((rdev >> 32) &^ 0xfff))
	d.Minor = int64((rdev & 0xff) | ((rdev >> 12) &^ 0xff))
	return d, nil
}
