package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Leftover GPU job records: each record names runc's state folder, so a record whose container
// runc no longer has, and older than a create can take, is removed at the next create.

// globalRoot is runc's --root as the call gives it ("" when it does not).
func globalRoot(args []string) string {
	global, err := goFlags(globalFlags, args)
	if err != nil {
		return ""
	}
	return global.values["root"]
}

// runcRoot is where runc keeps its containers' state: --root, or runc's own default for root.
func runcRoot(flag string) string {
	if flag != "" {
		if abs, err := filepath.Abs(flag); err == nil {
			return abs
		}
		return ""
	}
	if os.Geteuid() == 0 {
		return "/run/runc"
	}
	return ""
}

// staleAfter: a record this old whose container runc no longer has is a leftover (a delete that
// never came: runc killed during create, say); younger ones may be a create still under way.
const staleAfter = 60 * time.Second

// sweepStale removes the records of gpu whose container runc no longer keeps (see staleAfter).
func sweepStale(gpu int, now time.Time) {
	dup, err := syscall.Dup(gpu)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(dup), "gpu")
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return
	}
	for _, id := range names {
		if strings.HasPrefix(id, ".") || !validContainerID(id) {
			continue
		}
		root, mtime := recordRoot(gpu, id)
		if root == "" || now.Sub(mtime) < staleAfter {
			continue
		}
		if _, err := os.Lstat(filepath.Join(root, id)); os.IsNotExist(err) {
			syscall.Unlinkat(gpu, id)
		}
	}
}

// recordRoot reads the runc_root line of a record ("" when it has none), and its change time.
func recordRoot(gpu int, id string) (string, time.Time) {
	fd, err := syscall.Openat(gpu, id, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", time.Time{}
	}
	f := os.NewFile(uintptr(fd), id)
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", time.Time{}
	}
	buf := make([]byte, 8192)
	n, _ := f.Read(buf)
	for _, line := range strings.Split(string(buf[:n]), "\n") {
		if strings.HasPrefix(line, "runc_root=/") {
			return strings.TrimPrefix(line, "runc_root="), info.ModTime()
		}
	}
	return "", time.Time{}
}
