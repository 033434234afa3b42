package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Recursive read-only ("rro" among a mount's options) makes every mount nested inside a
// read-only dataset read-only too. runc has it from 1.1, through mount_setattr(2), which
// Linux has from 5.12. Where either is missing, "rro" would fail the create (or, on a
// runtime that does not know it, be ignored), so the wrapper asks first and falls back to
// plain "ro" with a log line.

// mount_setattr(2): the same number on every architecture that has it.
const sysMountSetattr = 442

// featuresFile caches the answer, keyed by what it depends on; stateDir is under /run,
// so a reboot (perhaps into another kernel) starts afresh.
const featuresFile = "runtime-features"

type rroSupport struct {
	Supported bool
	// Why it is not supported, for the log.
	Why string
	// Probed: the answer was worked out by this call, not read from the cache; only then
	// is the fallback logged, so the log gets the line once, not once per container.
	Probed bool
}

// recursiveReadOnly tells whether the runtime `real` and this kernel make "rro" mounts.
func recursiveReadOnly(real string) rroSupport {
	key := featuresKey(real)
	cache := filepath.Join(stateDir, featuresFile)
	if key != "" {
		if s, ok := readFeaturesCache(cache, key); ok {
			return s
		}
	}
	s := probeRecursiveReadOnly(real)
	s.Probed = true
	if key != "" {
		writeFeaturesCache(cache, key, s)
	}
	return s
}

func probeRecursiveReadOnly(real string) rroSupport {
	// Too small a size is refused with EINVAL before anything else is looked at; a kernel
	// without the call says ENOSYS, a seccomp filter that forbids it usually EPERM.
	if _, _, errno := syscall.Syscall6(sysMountSetattr, ^uintptr(0), 0, 0, 0, 0, 0); errno != syscall.EINVAL {
		return rroSupport{Why: fmt.Sprintf("the kernel has no mount_setattr (Linux 5.12 or newer has it): %v", errno)}
	}
	options, err := runtimeMountOptions(real)
	if err != nil {
		return rroSupport{Why: err.Error()}
	}
	for _, o := range options {
		if o == "rro" {
			return rroSupport{Supported: true}
		}
	}
	return rroSupport{Why: fmt.Sprintf("the runtime %s does not list rro among its mount options (runc 1.1 or newer has it)", real)}
}

// runtimeMountOptions asks the runtime (`runc features`, runc 1.1 and later; through
// nvidia-container-runtime it reaches runc) which mount options it knows.
func runtimeMountOptions(real string) ([]string, error) {
	cmd := exec.Command(real, "features")
	cmd.Env = append(os.Environ(), markerEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot run %s features: %v", real, err)
	}
	timer := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	timer.Stop()
	if err != nil {
		return nil, fmt.Errorf("the runtime %s cannot say what it supports (%s features: %v; runc 1.1 or newer can)", real, real, err)
	}
	var f struct {
		MountOptions []string `json:"mountOptions"`
	}
	if err := json.Unmarshal(out.Bytes(), &f); err != nil {
		return nil, fmt.Errorf("the runtime %s answered %s features with something other than its features: %v", real, real, err)
	}
	return f.MountOptions, nil
}

// featuresKey names what the answer depends on: the runtime the wrapper execs, the runc
// behind it (nvidia-container-runtime asks it) and the kernel. "" when one cannot be read.
func featuresKey(real string) string {
	var parts []string
	for _, p := range []string{real, realRunc} {
		info, err := os.Stat(p)
		if err != nil {
			if p == realRunc && errors.Is(err, os.ErrNotExist) {
				parts = append(parts, "-")
				continue
			}
			return ""
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return ""
		}
		parts = append(parts, fmt.Sprintf("%s:%d:%d:%d:%d", p, st.Dev, st.Ino, info.Size(), info.ModTime().UnixNano()))
	}
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return ""
	}
	release := make([]byte, 0, len(u.Release))
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		release = append(release, byte(c))
	}
	return strings.Join(append(parts, string(release)), " ")
}

// The cache file: the key, then "yes", or "no" and the reason, one per line. It is trusted
// only when it is as safe as the settings (root's, writable by nobody else).
func readFeaturesCache(path, key string) (rroSupport, bool) {
	f, err := os.Open(path)
	if err != nil {
		return rroSupport{}, false
	}
	defer f.Close()
	if checkOwnership(f) != nil {
		return rroSupport{}, false
	}
	var buf [4096]byte
	n, _ := f.Read(buf[:])
	lines := strings.SplitN(string(buf[:n]), "\n", 3)
	if len(lines) < 2 || lines[0] != key {
		return rroSupport{}, false
	}
	switch {
	case lines[1] == "yes":
		return rroSupport{Supported: true}, true
	case lines[1] == "no" && len(lines) == 3:
		return rroSupport{Why: strings.TrimSuffix(lines[2], "\n")}, true
	}
	return rroSupport{}, false
}

// writeFeaturesCache is best effort: without it the next create asks again.
func writeFeaturesCache(path, key string, s rroSupport) {
	if strings.ContainsRune(key, '\n') {
		return
	}
	text := key + "\nyes\n"
	if !s.Supported {
		text = key + "\nno\n" + strings.ReplaceAll(s.Why, "\n", " ") + "\n"
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".runtime-features-*")
	if err != nil {
		return
	}
	_, werr := tmp.WriteString(text)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
		os.Remove(tmp.Name())
	}
}
