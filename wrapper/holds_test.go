package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func units4() []allocUnit {
	return []allocUnit{{ID: "0", Gpu: "0"}, {ID: "1", Gpu: "1"}, {ID: "2", Gpu: "2"}, {ID: "3", Gpu: "3"}}
}

func TestPickUnits(t *testing.T) {
	u := units4()
	if got := pickUnits(u, map[string]int{"0": 1, "2": 1}, 1, 2, nil); len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Errorf("exclusive: picked %v, want the free 1 and 3", got)
	}
	if got := pickUnits(u, map[string]int{"0": 1, "1": 1, "2": 1}, 1, 2, nil); got != nil {
		t.Errorf("one free, two asked: picked %v", got)
	}
	if got := pickUnits(u, map[string]int{"0": 2, "1": 1, "2": 1, "3": 1}, 2, 4, nil); got != nil {
		t.Errorf("replicas 2: unit 0 is full, four asked of three left: picked %v", got)
	}
	if got := pickUnits(u, map[string]int{"0": 2, "1": 1, "2": 1, "3": 1}, 2, 1, nil); len(got) != 1 || got[0] == 0 {
		t.Errorf("replicas 2: picked %v, a full unit", got)
	}
	if got := pickUnits(u, map[string]int{"0": 1}, 2, 1, nil); len(got) != 1 || got[0] != 1 {
		t.Errorf("least held first: picked %v", got)
	}
	if got := pickUnits(u, nil, 1, 4, map[string]string{"1": "GPU 1 unhealthy"}); got != nil {
		t.Errorf("an unhealthy GPU's unit was picked: %v", got)
	}
	if got := pickUnits(u, nil, 1, 3, map[string]string{"1": "GPU 1 unhealthy"}); len(got) != 3 || got[1] != 2 {
		t.Errorf("unhealthy GPU 1: picked %v", got)
	}
	// MIG: two instances on GPU 0, two on GPU 1: two units go to two GPUs.
	mig := []allocUnit{{ID: "0:0", Gpu: "0"}, {ID: "0:1", Gpu: "0"}, {ID: "1:0", Gpu: "1"}, {ID: "1:1", Gpu: "1"}}
	if got := pickUnits(mig, nil, 1, 2, nil); len(got) != 2 || mig[got[0]].Gpu == mig[got[1]].Gpu {
		t.Errorf("spread over GPUs: picked %v", got)
	}
	if got := pickUnits(mig, map[string]int{"0:0": 1}, 1, 1, nil); len(got) != 1 || mig[got[0]].Gpu != "1" {
		t.Errorf("the GPU with fewer holders first: picked %v", got)
	}
}

func TestStaleRule(t *testing.T) {
	root := t.TempDir()
	self := hold{Pid: os.Getpid(), Start: processStart(os.Getpid()), RuncRoot: root}
	if self.Start == "" {
		t.Fatal("no start time for this process")
	}
	if self.stale("c1") {
		t.Error("a hold whose creator is alive (a create under way, no state folder yet) was stale")
	}
	// A creator that has exited but is not yet reaped (as an exec from another thread shows it
	// for a moment, holds_exec_test.go) is still the creator; once reaped, it is gone.
	zombie := exec.Command("sleep", "60")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	zombieHold := hold{Pid: zombie.Process.Pid, Start: processStart(zombie.Process.Pid), RuncRoot: root}
	zombie.Process.Kill()
	for i := 0; i < 200; i++ {
		if state, _, _ := procStat(zombie.Process.Pid); state == "Z" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if state, _, _ := procStat(zombie.Process.Pid); state != "Z" {
		t.Fatalf("the killed sleep is %q, not a zombie", state)
	}
	if zombieHold.stale("c1") {
		t.Error("a hold whose creator is a zombie not yet reaped was stale")
	}
	zombie.Wait()
	if !zombieHold.stale("c1") {
		t.Error("a hold whose creator has been reaped was not stale")
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	gone := hold{Pid: dead.Process.Pid, Start: "1", RuncRoot: root}
	if !gone.stale("c1") {
		t.Error("a hold whose creator is gone and whose container runc does not know was not stale")
	}
	reused := hold{Pid: os.Getpid(), Start: self.Start + "1", RuncRoot: root}
	if !reused.stale("c1") {
		t.Error("a hold whose pid now names another process (another start time) was not stale")
	}
	if err := os.Mkdir(filepath.Join(root, "c1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if gone.stale("c1") {
		t.Error("a hold of a container runc knows was stale")
	}
	if (hold{Pid: dead.Process.Pid, Start: "1"}).stale("c2") {
		t.Error("a hold without runc's root was stale")
	}
	h := parseHold(self.format())
	if h.Pid != self.Pid || h.Start != self.Start || h.RuncRoot != root || h.Units != nil {
		t.Errorf("round trip: %+v", h)
	}
}

func TestTryHold(t *testing.T) {
	withStateDir(t)
	root := t.TempDir()
	dir := t.TempDir()
	health := filepath.Join(dir, "gpus.tsv")
	a := &allocation{Mode: "exclusive", Replicas: 1, Units: units4(), HealthFile: health}
	if err := os.WriteFile(health, []byte("0\t0000:01:00.0\t1\t0\t\t\n1\t0000:02:00.0\t0\t1\t79\tXid 79\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	self := hold{Pid: os.Getpid(), Start: processStart(os.Getpid())}
	var got []string
	for _, id := range []string{"a", "b", "c"} {
		units, err := tryHold(a, id, root, 1, self)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		got = append(got, units[0].ID)
	}
	if strings.Join(got, " ") != "0 2 3" {
		t.Errorf("held %v: unit 1's GPU is unhealthy", got)
	}
	if _, err := tryHold(a, "a", root, 1, self); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Errorf("a second hold for a live container: %v", err)
	}
	_, err := tryHold(a, "d", root, 1, self)
	busy, ok := err.(*errBusy)
	if !ok || strings.Join(busy.holders["2"], ",") != "b" {
		t.Fatalf("no unit left: %v", err)
	}
	msg := busyError(a, 1, busy.holders).Error()
	for _, want := range []string{"GPU_WORKERS_GPUS=1", "unit 0: held by a", "unit 1: out of the pool (GPU 1 unhealthy)", "unit 3: held by c"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not say %q", msg, want)
		}
	}
	data, err := os.ReadFile(filepath.Join(stateDir, holdsDirName, "b"))
	if err != nil || !strings.HasPrefix(string(data), "units=2\npid=") {
		t.Errorf("record b: %q %v", data, err)
	}
	if units, err := holdForExec(a, "b"); err != nil || len(units) != 1 || units[0].ID != "2" {
		t.Errorf("holdForExec(b) = %v %v", units, err)
	}
	if data, _ := os.ReadFile(filepath.Join(stateDir, holdsDirName, "b")); !strings.Contains(string(data), fmt.Sprintf("exec_pid=%d\n", os.Getpid())) {
		t.Errorf("record b after exec names no exec: %q", data)
	}
	releaseHold("b")
	if units, _ := holdForExec(a, "b"); units != nil {
		t.Errorf("released, still held: %v", units)
	}
	if units, err := tryHold(a, "d", root, 1, self); err != nil || units[0].ID != "2" {
		t.Errorf("after release: %v %v", units, err)
	}
	info, err := os.Stat(filepath.Join(stateDir, holdsDirName))
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("holds folder: %v %v (root's alone)", info, err)
	}
}

// ended: a hold counts while its container's init lives and no exec'ed-and-finished state says otherwise.
func TestHoldEnded(t *testing.T) {
	root := t.TempDir()
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	pid := sleeper.Process.Pid
	start := processStart(pid)
	if err := os.MkdirAll(filepath.Join(root, "c"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeState := func(pid int, start string) {
		state := fmt.Sprintf(`{"id":"c","init_process_pid":%d,"init_process_start":%s,"created":"2026-12-02T00:00:00Z"}`, pid, start)
		if err := os.WriteFile(filepath.Join(root, "c", "state.json"), []byte(state), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h := hold{Units: []string{"0"}, RuncRoot: root}
	if h.ended("c") {
		t.Error("no state.json yet (a create under way): ended")
	}
	writeState(pid, start)
	if h.ended("c") {
		t.Error("init alive, never exec'ed: ended")
	}
	// Exec'ed, the call gone: the init's cgroup here is this test's, with more in it than the init.
	gone := hold{Units: h.Units, RuncRoot: root, Execed: true, ExecPid: 1 << 30, ExecStart: "1"}
	if gone.ended("c") {
		t.Error("exec'ed, but other processes share the init's cgroup: ended")
	}
	running := hold{Units: h.Units, RuncRoot: root, Execed: true, ExecPid: os.Getpid(), ExecStart: processStart(os.Getpid())}
	if running.ended("c") {
		t.Error("the exec call still runs: ended")
	}
	writeState(pid, "1") // another process now has that pid
	if !h.ended("c") {
		t.Error("the init's pid names another process: not ended")
	}
	writeState(pid, start)
	sleeper.Process.Kill()
	for i := 0; i < 100 && processStart(pid) != ""; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !h.ended("c") {
		t.Error("the init has exited, a zombie not yet reaped: not ended")
	}
	sleeper.Wait()
	if !h.ended("c") {
		t.Error("the init has exited: not ended")
	}
	writeState(pid, start)
	if err := os.WriteFile(filepath.Join(root, "c", "state.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if h.ended("c") {
		t.Error("an unreadable state: ended")
	}
	if (hold{Units: h.Units}).ended("c") {
		t.Error("a hold with no runc root: ended")
	}
}
