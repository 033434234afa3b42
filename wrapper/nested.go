package main

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"
	"unicode/utf8"
)

// Without recursive read-only (recursive.go: runc before 1.1, crun, a kernel before 5.12)
// the runtime makes only the root's own mount read-only: a host mount point inside it
// would keep its own mode, perhaps read-write. So that every read-only dataset stays
// read-only, each host mount point that lies inside a read-only dataset gets a read-only
// bind of its own. The cost depends on the host's mounts, not on the number of folders.
// Mount points inside a writable dataset keep their own mode, as they do with rro.

// nestedReadOnly lists the host mount points inside d's read-only datasets, relative to
// the root, parents first.
func nestedReadOnly(d *datasets) ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cannot read the host's mounts to keep the read-only datasets read-only: %v", err)
	}
	return mountPointsInReadOnly(data, d)
}

func mountPointsInReadOnly(mountinfo []byte, d *datasets) ([]string, error) {
	writable := make(map[string]bool, len(d.Writable))
	for _, name := range d.Writable {
		writable[name] = true
	}
	prefix := d.Source + "/"
	seen := map[string]bool{}
	var out []string
	for _, line := range bytes.Split(mountinfo, []byte{'\n'}) {
		// id parent major:minor root mount-point options ... - type source super-options
		fields := bytes.SplitN(line, []byte{' '}, 6)
		if len(fields) < 6 {
			continue
		}
		point := unescapeMountinfo(string(fields[4]))
		if !strings.HasPrefix(point, prefix) {
			continue
		}
		rel := point[len(prefix):]
		top := rel
		if i := strings.IndexByte(rel, '/'); i >= 0 {
			top = rel[:i]
		}
		if writable[top] || seen[rel] {
			continue
		}
		if !utf8.ValidString(rel) {
			return nil, fmt.Errorf("cannot keep the read-only dataset %q read-only: the host mount point %q inside it is not UTF-8, which the spec's JSON cannot carry (runc 1.1 or newer on Linux 5.12 or newer makes it read-only without naming it)", d.Root+"/"+top, point)
		}
		seen[rel] = true
		out = append(out, rel)
	}
	// A parent's path is a prefix of its children's: sorted, every parent comes first.
	sort.Strings(out)
	return out, nil
}

// unescapeMountinfo undoes the kernel's octal escapes (\040 space, \011 tab, \012 newline, \134 backslash).
func unescapeMountinfo(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }
