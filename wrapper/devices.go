package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// deviceLink is a host node the container gets at another path too: udev's
// /dev/dri/by-path/pci-<address>-card|render links, which Level Zero reads. Where the host has
// the link, and it resolves to the node, the container gets the node at the link's path: made
// there by runc, or in a user namespace bound from the host's path, which is why the host's
// link must be there. A host without the link (an LXD instance, whose GPU nodes LXD makes, may
// have none) gives none.
type deviceLink struct {
	Path string `json:"path"`
	Node string `json:"node"`
}

func validDeviceLinks(at string, links []deviceLink) error {
	for i, l := range links {
		if !normalAbsolute(l.Path) || !strings.HasPrefix(l.Path, "/dev/") || !normalAbsolute(l.Node) {
			return fmt.Errorf("%s[%d]: path (under /dev) and node must be absolute paths in normal form (got %q, %q)", at, i, l.Path, l.Node)
		}
	}
	return nil
}

// containerDevices: the host nodes, then the links the host has, as the container gets them. A
// link that resolves to another node is refused: the container would get another GPU.
func containerDevices(nodes []string, links []deviceLink) ([]hostDevice, error) {
	var devices []hostDevice
	for _, p := range nodes {
		d, err := statDevice(p)
		if err != nil {
			return nil, err
		}
		devices = append(devices, d)
	}
	for _, l := range links {
		target, err := filepath.EvalSymlinks(l.Path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("device link %s on the host: %v", l.Path, err)
		}
		if target != l.Node {
			return nil, fmt.Errorf("device link %s on the host leads to %s, not to %s: refused, as the container would get another node there", l.Path, target, l.Node)
		}
		d, err := statDevice(l.Node)
		if err != nil {
			return nil, fmt.Errorf("%v (for %s)", err, l.Path)
		}
		d.Path = l.Path
		devices = append(devices, d)
	}
	return devices, nil
}
