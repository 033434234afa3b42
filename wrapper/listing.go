package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Listing a root of thousands of folders costs the kernel about a quarter of a microsecond
// per entry on every create (1.4 ms at 5000 on ext4), for an answer that changes when the
// operator adds, removes or renames a folder, and each of those changes the root's own
// modification and change times. So the last listing is kept in stateDir, keyed by the
// root's path, identity and times and the suffixes, and used while they stay the same.
//
// A root changed twice within one tick of the file system's clock keeps the same times, so
// a listing is kept only when the root's times are old enough that any later change gets
// newer ones (as git does with its index). The file is trusted only when it is as safe as
// the settings (root's, writable by nobody else), and each name in it is checked again.

const listingFile = "datasets-listing"

// settleTime: a listing made of a root changed more recently than this is not kept.
const settleTime = 2 * time.Second

func listingKey(source string, st *syscall.Stat_t, suffixes []string) string {
	return strings.Join([]string{
		strconv.Quote(source),
		strconv.FormatUint(uint64(st.Dev), 10), strconv.FormatUint(st.Ino, 10),
		strconv.FormatInt(int64(st.Mtim.Sec), 10) + "." + strconv.FormatInt(int64(st.Mtim.Nsec), 10),
		strconv.FormatInt(int64(st.Ctim.Sec), 10) + "." + strconv.FormatInt(int64(st.Ctim.Nsec), 10),
		strconv.Quote(strings.Join(suffixes, "/")), // a suffix holds no slash
	}, " ")
}

// settled: the root's last change is older than settleTime.
func settled(st *syscall.Stat_t) bool {
	now := time.Now()
	return now.Sub(time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec))) > settleTime &&
		now.Sub(time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec))) > settleTime
}

// The file: the key, a newline, then the writable names, each ended by a NUL (a name holds
// neither a slash nor a NUL, and may hold a newline).
func readListing(key string) ([]string, bool) {
	if stateDir == "" {
		return nil, false
	}
	f, err := os.Open(filepath.Join(stateDir, listingFile))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if checkOwnership(f) != nil {
		return nil, false
	}
	info, err := f.Stat()
	if err != nil || info.Size() > 16<<20 {
		return nil, false
	}
	buf := make([]byte, info.Size()+1)
	n, _ := f.Read(buf)
	text := string(buf[:n])
	nl := strings.IndexByte(text, '\n')
	if nl < 0 || text[:nl] != key || !strings.HasSuffix(text[nl+1:], "\x00") && len(text) > nl+1 {
		return nil, false
	}
	var names []string
	for _, name := range strings.Split(text[nl+1:], "\x00") {
		if name == "" {
			continue
		}
		if name == "." || name == ".." || strings.ContainsRune(name, '/') || !utf8.ValidString(name) {
			return nil, false
		}
		names = append(names, name)
	}
	return names, true
}

// writeListing is best effort: without it the next create lists the root again.
func writeListing(key string, names []string) {
	if stateDir == "" {
		return
	}
	var b strings.Builder
	b.WriteString(key)
	b.WriteByte('\n')
	for _, name := range names {
		b.WriteString(name)
		b.WriteByte(0)
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(stateDir, "."+listingFile+"-*")
	if err != nil {
		return
	}
	_, werr := tmp.WriteString(b.String())
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), filepath.Join(stateDir, listingFile)) != nil {
		os.Remove(tmp.Name())
	}
}
