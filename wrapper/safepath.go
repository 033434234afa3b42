package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Root reaches the folders it writes in (the GPU job records, dcgm-exporter's mapping folder)
// one component at a time from /, never following a link, and only through folders nobody but
// root can change: else whoever can write a folder on the way (a task, in a writable dataset)
// could put a link or a folder of their own there and make root write elsewhere. The C front
// walks the same way at delete (release.c, open_dir), and the install script at remove.

const openDirFlags = syscall.O_RDONLY | syscall.O_DIRECTORY | syscall.O_NOFOLLOW | syscall.O_CLOEXEC

// openDirNoLinks opens the folder at path (absolute, in normal form). Each component must be a
// real folder, root's (the caller's, where that is not root) and writable by nobody else, but
// a folder above the last may be with the sticky bit (as /tmp): others can add names there,
// never move or remove root's. With a mode, missing components are made with it; made lists
// them, parents first.
func openDirNoLinks(path string, mode uint32) (fd int, made []string, err error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return -1, nil, fmt.Errorf("%s: expected an absolute path in normal form", path)
	}
	fd, err = syscall.Open("/", openDirFlags, 0)
	if err != nil {
		return -1, nil, fmt.Errorf("/: %v", err)
	}
	var names []string
	if path != "/" {
		names = strings.Split(path[1:], "/")
	}
	at := "/"
	for i := 0; ; i++ {
		last := i == len(names)
		if err := checkDir(fd, last); err != nil {
			syscall.Close(fd)
			return -1, made, fmt.Errorf("%s %v", at, err)
		}
		if last {
			return fd, made, nil
		}
		at = filepath.Join(at, names[i])
		next, err := syscall.Openat(fd, names[i], openDirFlags, 0)
		if err == syscall.ENOENT && mode != 0 {
			var madeIt bool
			if next, madeIt, err = makeDirAt(fd, names[i], mode); madeIt {
				made = append(made, at)
			}
		}
		syscall.Close(fd)
		if err == syscall.ELOOP || err == syscall.ENOTDIR {
			return -1, made, fmt.Errorf("%s is a link or no folder: never followed", at)
		}
		if err != nil {
			return -1, made, fmt.Errorf("%s: %v", at, err)
		}
		fd = next
	}
}

// checkDir is openDirNoLinks' rule for one folder (last: the one written in, which takes no sticky bit).
func checkDir(fd int, last bool) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Uid != 0 && st.Uid != uint32(os.Geteuid()) {
		return fmt.Errorf("must be owned by root (owner uid %d)", st.Uid)
	}
	if st.Mode&0o022 != 0 && (last || st.Mode&syscall.S_ISVTX == 0) {
		if last {
			return fmt.Errorf("must not be writable by group or others (mode %04o)", st.Mode&0o7777)
		}
		return fmt.Errorf("must not be writable by group or others without the sticky bit (mode %04o)", st.Mode&0o7777)
	}
	return nil
}

// makeDirAt makes the folder name in dir with exactly mode (whatever the umask) and opens it;
// madeIt is false where another call made it first.
func makeDirAt(dir int, name string, mode uint32) (fd int, madeIt bool, err error) {
	err = syscall.Mkdirat(dir, name, mode)
	if err != nil && err != syscall.EEXIST {
		return -1, false, err
	}
	madeIt = err == nil
	if fd, err = syscall.Openat(dir, name, openDirFlags, 0); err != nil {
		return -1, madeIt, err
	}
	if madeIt {
		if err = syscall.Fchmod(fd, mode); err != nil {
			syscall.Close(fd)
			return -1, madeIt, err
		}
	}
	return fd, madeIt, nil
}

// openStateFolder opens <stateDir>/name by openDirNoLinks' rule all the way, the folder itself
// included; with create, the state folder is made 0700 and name with mode where missing.
// what names the folder in errors.
func openStateFolder(what, name string, mode uint32, create bool) (int, error) {
	if stateDir == "" {
		return -1, fmt.Errorf("%s: no state folder", what)
	}
	var stateMode uint32
	if create {
		stateMode = 0o700
	}
	state, _, err := openDirNoLinks(stateDir, stateMode)
	if err != nil {
		return -1, fmt.Errorf("%s: %v", what, err)
	}
	defer syscall.Close(state)
	var fd int
	if create {
		fd, _, err = makeDirAt(state, name, mode)
	} else {
		fd, err = openDirAt(state, name)
	}
	path := filepath.Join(stateDir, name)
	if err != nil {
		return -1, fmt.Errorf("%s: open %s: %v", what, path, err)
	}
	if err := checkDir(fd, true); err != nil {
		syscall.Close(fd)
		return -1, fmt.Errorf("%s: %s %v", what, path, err)
	}
	return fd, nil
}
