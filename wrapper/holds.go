package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Which container holds which units: a record <stateDir>/gpu-holds/<container id> per holder,
// made at create and run under an exclusive flock on the folder and taken back by the stale
// rule below once runc has deleted the container (not by the C front before runc's delete: a
// delete runc refuses would free a live container's units). The folder is root's alone (0700), reached from /
// without following a link (safepath.go); /run is a tmpfs, so a reboot frees every unit.
//
// A record names the creating wrapper's pid and that process's start time: the wrapper execs
// the real runtime in the same process, so until runc has made the container's state folder
// the creator is alive. A hold is stale, and swept at the next create, only when both are
// gone: runc no longer knows the container AND its creator has exited. Either alone is a
// create under way (no state folder yet) or a live container (creator long gone). A record
// whose container has ended (holds_ended.go) stays, and counts for no unit.

// holdsDirName is the records' folder under stateDir; release.c names the same.
const holdsDirName = "gpu-holds"

type hold struct {
	Units    []string // unit ids, in the settings' order
	Pid      int
	Start    string // field 22 of /proc/<pid>/stat
	RuncRoot string
	// Execed: a process was started in the container with `runc exec`; ExecPid and ExecStart
	// name the last such call while it runs (holds_ended.go).
	Execed    bool
	ExecPid   int
	ExecStart string
}

func (h hold) format() []byte {
	text := fmt.Sprintf("units=%s\npid=%d\nstart=%s\nrunc_root=%s\n", strings.Join(h.Units, ","), h.Pid, h.Start, h.RuncRoot)
	if h.Execed {
		text += fmt.Sprintf("exec_pid=%d\nexec_start=%s\n", h.ExecPid, h.ExecStart)
	}
	return []byte(text)
}

func parseHold(data []byte) hold {
	var h hold
	for _, line := range strings.Split(string(data), "\n") {
		key, value, _ := strings.Cut(line, "=")
		switch key {
		case "units":
			if value != "" {
				h.Units = strings.Split(value, ",")
			}
		case "pid":
			h.Pid, _ = strconv.Atoi(value)
		case "start":
			h.Start = value
		case "runc_root":
			h.RuncRoot = value
		case "exec_pid":
			h.Execed = true
			h.ExecPid, _ = strconv.Atoi(value)
		case "exec_start":
			h.ExecStart = value
		}
	}
	return h
}

// procStat reads a process's state letter and start time (field 22 of /proc/<pid>/stat, clock
// ticks since boot: with the pid it names one process, whatever pid is later reused); ok is
// false when no process has the pid.
func procStat(pid int) (state, start string, ok bool) {
	if pid <= 0 {
		return "", "", false
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", "", false
	}
	// The name, in parentheses, may hold spaces: the fields count from the last ")".
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return "", "", false
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return "", "", false
	}
	return fields[0], fields[19], true // state is field 3, the first after ")"
}

// processStart is a running process's start time, "" once it has exited: a zombie has, as runc
// judges a container whose init is one stopped.
func processStart(pid int) string {
	state, start, ok := procStat(pid)
	if !ok || state == "Z" || state == "X" {
		return ""
	}
	return start
}

// notReaped: the process that pid and start name is still there, a zombie included. This is
// the rule for a wrapper's own process (a hold's creator, an exec call): a multithreaded
// program that execs from a thread other than its first shows as a zombie while the kernel
// gives that thread the first one's pid (de_thread in fs/exec.c); a hold must not be swept then.
// A wrapper that has really exited holds its units only until its parent reaps it.
func notReaped(pid int, start string) bool {
	state, now, ok := procStat(pid)
	return ok && start != "" && now == start && state != "X"
}

// stale: runc no longer knows the container and the process that made the hold is gone. A
// hold that does not say where runc keeps its containers is never stale (delete frees it).
func (h hold) stale(id string) bool {
	if h.RuncRoot == "" || !filepath.IsAbs(h.RuncRoot) {
		return false
	}
	if _, err := os.Lstat(filepath.Join(h.RuncRoot, id)); !os.IsNotExist(err) {
		return false
	}
	return !notReaped(h.Pid, h.Start)
}

// openHoldsDir opens <stateDir>/gpu-holds, root's alone; made when create is set.
func openHoldsDir(create bool) (int, error) {
	return openStateFolder("GPU holds", holdsDirName, 0o700, create)
}

func readAt(dir int, name string) ([]byte, error) {
	fd, err := syscall.Openat(dir, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	buf := make([]byte, 8192)
	n, err := f.Read(buf)
	if err != nil && n == 0 {
		return nil, err
	}
	return buf[:n], nil
}

// liveHolds reads every hold in the folder, removing the stale ones (the caller holds the lock).
func liveHolds(dir int) (map[string]hold, error) {
	dup, err := syscall.Dup(dir)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), holdsDirName)
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil, err
	}
	holds := make(map[string]hold, len(names))
	for _, id := range names {
		if strings.HasPrefix(id, ".") || !validContainerID(id) {
			continue
		}
		data, err := readAt(dir, id)
		if err != nil {
			continue
		}
		h := parseHold(data)
		if h.stale(id) {
			syscall.Unlinkat(dir, id)
			continue
		}
		holds[id] = h
	}
	return holds, nil
}

// pickUnits chooses n of the units that are in the pool and held by fewer than replicas, the least
// held first and spread over GPUs (fewest holders on the unit's GPU), then in the settings'
// order; nil when fewer than n are free. The result is in the settings' order.
func pickUnits(units []allocUnit, holders map[string]int, replicas, n int, out map[string]string) []int {
	perGpu := map[string]int{}
	for _, u := range units {
		perGpu[u.Gpu] += holders[u.ID]
	}
	taken := make([]bool, len(units))
	var picked []int
	for len(picked) < n {
		best := -1
		for i, u := range units {
			if taken[i] || out[u.ID] != "" || holders[u.ID] >= replicas {
				continue
			}
			if best < 0 || holders[u.ID] < holders[units[best].ID] ||
				holders[u.ID] == holders[units[best].ID] && perGpu[u.Gpu] < perGpu[units[best].Gpu] {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		taken[best] = true
		perGpu[units[best].Gpu]++
		picked = append(picked, best)
	}
	sort.Ints(picked)
	return picked
}

// unhealthyGpus reads the health watcher's status (host/gpu-health-watch.sh: index, bus id,
// healthy 1|0, ...; tab-separated): the GPUs whose row says 0. No file: all healthy.
func unhealthyGpus(path string) map[string]bool {
	out := map[string]bool{}
	if path == "" {
		return out
	}
	dir, _, err := openDirNoLinks(filepath.Dir(path), 0)
	if err != nil {
		return out
	}
	data, err := readAll(dir, filepath.Base(path))
	syscall.Close(dir)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Split(line, "\t")
		if len(fields) >= 3 && isGpuIndex(fields[0]) && fields[2] == "0" {
			out[fields[0]] = true
		}
	}
	return out
}

// outOfPool: each unit handed to no new container, and why: its GPU is sick, or a folder it
// brings is missing (mps: its GPU's daemon is not running, which removes its pipe folder).
func (a *allocation) outOfPool() map[string]string {
	sick := unhealthyGpus(a.HealthFile)
	out := map[string]string{}
	for _, u := range a.Units {
		if sick[u.Gpu] {
			out[u.ID] = fmt.Sprintf("GPU %s unhealthy", u.Gpu)
			continue
		}
		for _, m := range u.Mounts {
			if !isFolder(m.Source) {
				out[u.ID] = fmt.Sprintf("%s is not a folder: its GPU's daemon is not running", m.Source)
				break
			}
		}
	}
	return out
}

// isFolder: path itself is a folder, not a link to one. (Its folder, root's, is where the
// daemon's start makes it; what a task may write is inside it, never it.)
func isFolder(path string) bool {
	info, err := os.Lstat(path)
	return err == nil && info.IsDir()
}

func readAll(dir int, name string) ([]byte, error) {
	fd, err := syscall.Openat(dir, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for b.Len() < 1<<20 {
		n, err := f.Read(buf)
		b.Write(buf[:n])
		if err != nil || n == 0 {
			break
		}
	}
	return []byte(b.String()), nil
}

// errBusy: too few free units now; the holders say who has them.
type errBusy struct{ holders map[string][]string }

// tryHold: under the lock, sweep, pick n units and write the container's hold.
func tryHold(a *allocation, id, root string, n int, self hold) ([]allocUnit, error) {
	dir, err := openHoldsDir(true)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(dir) // and with it the lock
	if err := syscall.Flock(dir, syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("GPU holds: lock: %v", err)
	}
	holds, err := liveHolds(dir)
	if err != nil {
		return nil, fmt.Errorf("GPU holds: %v", err)
	}
	if other, ok := holds[id]; ok {
		return nil, fmt.Errorf("container %q already holds GPU units %s (a container of that id is still known)", id, strings.Join(other.Units, ","))
	}
	count, byUnit := unitHolders(holds, "")
	picked := pickUnits(a.Units, count, a.Replicas, n, a.outOfPool())
	if picked == nil {
		return nil, &errBusy{holders: byUnit}
	}
	units := make([]allocUnit, len(picked))
	self.Units = make([]string, len(picked))
	for i, p := range picked {
		units[i] = a.Units[p]
		self.Units[i] = a.Units[p].ID
	}
	self.RuncRoot = root
	if err := replaceAt(dir, id, self.format()); err != nil {
		return nil, fmt.Errorf("GPU holds: write %s: %v", id, err)
	}
	return units, nil
}

func (e *errBusy) Error() string { return "busy" }

// unitHolders counts, for each unit, the holds that have not ended (holds_ended.go), but for `except`'s, and names them.
func unitHolders(holds map[string]hold, except string) (map[string]int, map[string][]string) {
	count := map[string]int{}
	byUnit := map[string][]string{}
	for holder, h := range holds {
		if holder == except || h.ended(holder) {
			continue
		}
		for _, u := range h.Units {
			count[u]++
			byUnit[u] = append(byUnit[u], holder)
		}
	}
	return count, byUnit
}

// acquire holds n units for the container, waiting up to waitSeconds for them.
func acquire(a *allocation, id, root string, n int) ([]allocUnit, error) {
	if !validContainerID(id) {
		return nil, fmt.Errorf("container id %q is not a plain file name; no GPU units held", id)
	}
	self := hold{Pid: os.Getpid(), Start: processStart(os.Getpid())}
	if self.Start == "" {
		return nil, fmt.Errorf("GPU holds: cannot read this process's start time from /proc/self/stat")
	}
	deadline := time.Now().Add(time.Duration(a.WaitSeconds) * time.Second)
	for {
		units, err := tryHold(a, id, root, n, self)
		busy, isBusy := err.(*errBusy)
		if !isBusy {
			return units, err
		}
		if !time.Now().Before(deadline) {
			return nil, busyError(a, n, busy.holders)
		}
		// 200-500 ms, jittered so that waiting creates do not retry in step.
		pause := 200*time.Millisecond + time.Duration(time.Now().UnixNano()%300)*time.Millisecond
		if left := time.Until(deadline); pause > left {
			pause = left
		}
		time.Sleep(pause)
	}
}

// busyError names the ask, the wait, and each unit's holders.
func busyError(a *allocation, n int, holders map[string][]string) error {
	out := a.outOfPool()
	var parts []string
	for _, u := range a.Units {
		switch {
		case out[u.ID] != "":
			parts = append(parts, fmt.Sprintf("unit %s: out of the pool (%s)", u.ID, out[u.ID]))
		case len(holders[u.ID]) > 0:
			ids := append([]string(nil), holders[u.ID]...)
			sort.Strings(ids)
			parts = append(parts, fmt.Sprintf("unit %s: held by %s", u.ID, strings.Join(ids, ", ")))
		default:
			parts = append(parts, fmt.Sprintf("unit %s: free", u.ID))
		}
	}
	return fmt.Errorf("%s=%d: too few free GPU units after waiting %ds (%d units, at most %d holders each); %s",
		askEnv, n, a.WaitSeconds, len(a.Units), a.Replicas, strings.Join(parts, "; "))
}

// releaseHold removes the container's hold, under the lock: a create that fails before the real runtime.
func releaseHold(id string) {
	dir, err := openHoldsDir(false)
	if err != nil {
		return
	}
	defer syscall.Close(dir)
	if syscall.Flock(dir, syscall.LOCK_EX) == nil {
		syscall.Unlinkat(dir, id)
	}
}

// holdForExec: the units of the container's hold (none: no hold), for `runc exec`, under the
// lock. The hold is marked as exec'ed by this process (the same pid runs runc exec), so that it
// counts while the call runs; a hold that had ended counts again, unless others hold its
// units meanwhile: then the process is refused, since the container still has those GPUs.
func holdForExec(a *allocation, id string) ([]allocUnit, error) {
	if !validContainerID(id) {
		return nil, nil
	}
	dir, err := openHoldsDir(false)
	if err != nil {
		return nil, nil // no folder: nothing is held
	}
	defer syscall.Close(dir)
	if err := syscall.Flock(dir, syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("GPU holds: lock: %v", err)
	}
	data, err := readAt(dir, id)
	if err != nil {
		return nil, nil
	}
	h := parseHold(data)
	if h.ended(id) {
		holds, err := liveHolds(dir)
		if err != nil {
			return nil, fmt.Errorf("GPU holds: %v", err)
		}
		count, byUnit := unitHolders(holds, id)
		for _, u := range h.Units {
			if count[u] >= a.Replicas {
				sort.Strings(byUnit[u])
				return nil, fmt.Errorf("container %q: its GPU unit %s went to %s after its processes had ended, so no process may start in it again", id, u, strings.Join(byUnit[u], ", "))
			}
		}
	}
	h.Execed, h.ExecPid, h.ExecStart = true, os.Getpid(), processStart(os.Getpid())
	if err := replaceAt(dir, id, h.format()); err != nil {
		return nil, fmt.Errorf("GPU holds: write %s: %v", id, err)
	}
	var units []allocUnit
	for _, u := range a.Units {
		if contains(h.Units, u.ID) {
			units = append(units, u)
		}
	}
	return units, nil
}
