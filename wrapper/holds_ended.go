package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A container's hold counts for its units only while something of it can still use them. It
// has ended, and its units are free for other containers, when:
//   - its init process has exited (runc calls the container stopped, and starts nothing more in it), or
//   - processes were started in it with `runc exec`, the last of those calls has returned, and
//     no process is left in its cgroup but its init. That is a Concourse container after its
//     step: Concourse's init (/tmp/gdn-init) only sleeps, the step ran as an exec, and the
//     container stays until Concourse's garbage collector deletes it (5 minutes after a one-off
//     build, and up to 120 hours for the latest failed build of a job; docs/gpu-allocation.md).
// Its record stays until runc deletes the container (the stale rule, holds.go): a later exec
// into it holds the same units again, or is refused while others hold them (holdForExec).
// Whatever cannot be read says the container is live: a unit is never handed out twice.

// runcState is what this reads of runc's state.json in <root>/<id>.
type runcState struct {
	InitPid   int    `json:"init_process_pid"`
	InitStart uint64 `json:"init_process_start"`
}

// ended: see above; `id` is the container's.
func (h hold) ended(id string) bool {
	if h.RuncRoot == "" || !filepath.IsAbs(h.RuncRoot) {
		return false
	}
	data, err := readNoLinks(filepath.Join(h.RuncRoot, id, "state.json"))
	if err != nil {
		return false // no state yet: a create under way
	}
	var st runcState
	if json.Unmarshal(data, &st) != nil || st.InitPid <= 0 {
		return false
	}
	if processStart(st.InitPid) != strconv.FormatUint(st.InitStart, 10) {
		return true
	}
	if !h.Execed || notReaped(h.ExecPid, h.ExecStart) {
		return false
	}
	procs, ok := cgroupProcesses(st.InitPid)
	if !ok {
		return false
	}
	for _, pid := range procs {
		if pid != st.InitPid {
			return false
		}
	}
	return true
}

// readNoLinks reads a file of at most 1 MiB whose last component is not a link.
func readNoLinks(path string) ([]byte, error) {
	dir, _, err := openDirNoLinks(filepath.Dir(path), 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(dir)
	return readAll(dir, filepath.Base(path))
}

// cgroupProcesses lists every process in the cgroup of `pid` and in the cgroups below it
// (cgroup v2, or v1's pids controller); false when they cannot be read.
func cgroupProcesses(pid int) ([]int, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return nil, false
	}
	folder := ""
	unified := isPlainFile("/sys/fs/cgroup/cgroup.controllers")
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if unified && parts[0] == "0" && parts[1] == "" {
			folder = filepath.Join("/sys/fs/cgroup", parts[2])
		} else if !unified && contains(strings.Split(parts[1], ","), "pids") {
			folder = filepath.Join("/sys/fs/cgroup/pids", parts[2])
		}
	}
	if folder == "" {
		return nil, false
	}
	var procs []int
	readable := true
	err = filepath.WalkDir(folder, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			readable = false
			return filepath.SkipAll
		}
		if !d.IsDir() {
			return nil
		}
		list, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
		if err != nil {
			readable = false
			return filepath.SkipAll
		}
		for _, field := range strings.Fields(string(list)) {
			if n, err := strconv.Atoi(field); err == nil {
				procs = append(procs, n)
			}
		}
		return nil
	})
	return procs, err == nil && readable
}

// isPlainFile: path is a plain file, not a link.
func isPlainFile(path string) bool {
	info, err := os.Lstat(path)
	return err == nil && info.Mode().IsRegular()
}
