package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"unicode/utf8"
)

// datasets is what a container gets of the dataset root: the root once, read-only all the
// way down, and a read-write mount for each writable folder. The number of mounts does
// not depend on the number of folders, and nothing a task can change is resolved on the
// host: a symlink under the root is never followed here, it is inside the read-only root
// mount and resolves inside the container, so it has exactly the mode of what it leads to.
type datasets struct {
	// Root is where containers see the root: the configured path, cleaned.
	Root string
	// Source is the root resolved on the host, once (the operator's path, not a task's).
	Source string
	// Writable holds the names of the root's direct children that are real folders (not
	// followed) with a writable suffix, sorted.
	Writable []string
	// NestedReadOnly: host mount points inside read-only datasets, relative to the root,
	// parents first. Only where the runtime cannot make the root read-only all the way down
	// (nested.go); empty otherwise.
	NestedReadOnly []string
}

// scanDatasets resolves root once, makes sure no one but root can change its entries
// (rootIsSafe), and lists the writable folders (or takes the last listing, while the root
// has not changed since: listing.go). A missing root means no datasets; a root
// that exists but cannot be listed is an error, so no container starts silently without
// its datasets. notes gets a line for each writable name left read-only, for the log (when
// the root is listed, so once per change of the root).
func scanDatasets(root string, writableSuffixes []string) (d *datasets, notes []string, err error) {
	if root == "" {
		return nil, nil, nil
	}
	source, err := filepath.EvalSymlinks(root)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("dataset root %s cannot be resolved: %v", root, err)
	}
	if source == "/" {
		return nil, nil, fmt.Errorf("dataset root %s is the host's / (every container would get the whole host); name the folder that holds the datasets", root)
	}
	if !utf8.ValidString(source) {
		return nil, nil, fmt.Errorf("dataset root %s resolves to %q, which is not UTF-8 and cannot be carried by the spec's JSON", root, source)
	}
	fd, err := syscall.Open(source, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("dataset root %s cannot be listed: open %s: %v", root, source, err)
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, nil, fmt.Errorf("dataset root %s cannot be listed: %v", root, err)
	}
	if err := rootIsSafe(fd, &st); err != nil {
		name := root
		if filepath.Clean(root) != source {
			name += " (" + source + ")"
		}
		return nil, nil, fmt.Errorf("dataset root %s %v: whoever can write the root could swap a writable folder for a link between this listing and the runtime's mount", name, err)
	}
	d = &datasets{Root: filepath.Clean(root), Source: source}
	key := listingKey(source, &st, writableSuffixes)
	if names, ok := readListing(key); ok {
		d.Writable = names
		return d, nil, nil
	}
	err = eachWritableChild(fd, source, writableSuffixes, func(name string) {
		if !utf8.ValidString(name) {
			notes = append(notes, fmt.Sprintf("dataset %q stays read-only although its name ends with a writable suffix: the name is not UTF-8, which the spec's JSON cannot carry", filepath.Join(d.Root, name)))
			return
		}
		d.Writable = append(d.Writable, name)
	})
	if err != nil {
		return nil, notes, fmt.Errorf("dataset root %s cannot be listed: %v", root, err)
	}
	sort.Strings(d.Writable)
	if settled(&st) {
		writeListing(key, d.Writable)
	}
	return d, notes, nil
}

// rootIsSafe: the root's entries can be changed only by root. A root on a read-only mount
// cannot be changed from here at all (an LXD instance's read-only disk, owned by an id
// the instance does not map, is one).
func rootIsSafe(fd int, st *syscall.Stat_t) error {
	var fs syscall.Statfs_t
	if syscall.Fstatfs(fd, &fs) == nil && fs.Flags&stRdonly != 0 {
		return nil
	}
	if owner := uint32(os.Geteuid()); st.Uid != 0 && st.Uid != owner {
		return fmt.Errorf("must be owned by root (owner uid %d)", st.Uid)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("must not be writable by group or others (mode %04o)", st.Mode&0o7777)
	}
	return nil
}

// ST_RDONLY of statfs(2)'s f_flags.
const stRdonly = 0x1

// eachWritableChild calls f with the name of each entry of the folder fd (at dir) that is a real
// folder (its type from the listing, or lstat where the file system does not say; a link
// is never followed) and whose name ends with a writable suffix. Names are compared as
// bytes before anything else, so a root of thousands of folders costs one pass over the
// listing and no allocation per entry.
func eachWritableChild(fd int, dir string, suffixes []string, f func(name string)) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := syscall.ReadDirent(fd, buf)
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		for off := 0; off < n; {
			// struct linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name.
			rec := buf[off:]
			reclen := int(rec[16]) | int(rec[17])<<8
			typ := rec[18]
			name := rec[19:reclen]
			if i := indexNUL(name); i >= 0 {
				name = name[:i]
			}
			off += reclen
			if !hasWritableSuffix(name, suffixes) || isDotName(name) {
				continue
			}
			switch typ {
			case syscall.DT_DIR:
				f(string(name))
			case syscall.DT_UNKNOWN:
				var st syscall.Stat_t
				if syscall.Lstat(dir+"/"+string(name), &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
					f(string(name))
				}
			}
			// Links, files, fifos, sockets and device nodes are not mounted of their own:
			// they are in the read-only root, as they are.
		}
	}
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

func isDotName(b []byte) bool {
	return (len(b) == 1 && b[0] == '.') || (len(b) == 2 && b[0] == '.' && b[1] == '.')
}

// hasWritableSuffix: the name ends with one of the suffixes, compared byte for byte ("_RW" is not "_rw").
func hasWritableSuffix(name []byte, suffixes []string) bool {
	for _, s := range suffixes {
		if len(name) >= len(s) && string(name[len(name)-len(s):]) == s {
			return true
		}
	}
	return false
}
