package main

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// execFromThreadEnv makes this test binary a helper: it execs `sleep` from a thread other than
// its first, as a Go program's exec may run when main is not locked to its thread.
const execFromThreadEnv = "GW_TEST_EXEC_FROM_OTHER_THREAD"

func init() {
	if os.Getenv(execFromThreadEnv) == "" {
		return
	}
	go func() {
		runtime.LockOSThread() // main holds the first thread (main.go's init), so this is another
		syscall.Exec("/bin/sleep", []string{"sleep", "0.05"}, nil)
		os.Exit(2)
	}()
	select {}
}

// A wrapper process that execs the real runtime stays the hold's creator all through the exec:
// the kernel shows it as a zombie for a moment when the exec comes from another thread, and a
// sweep in that moment would hand its units out twice.
func TestCreatorSeenThroughExecFromAnotherThread(t *testing.T) {
	zombies := 0
	for i := 0; i < 40; i++ {
		helper := exec.Command(os.Args[0], "-test.run=^$")
		helper.Env = append(os.Environ(), execFromThreadEnv+"=1")
		if err := helper.Start(); err != nil {
			t.Fatal(err)
		}
		pid := helper.Process.Pid
		_, start, _ := procStat(pid) // a child not yet waited for is there, a zombie at worst
		deadline := time.Now().Add(10 * time.Second)
		for {
			if time.Now().After(deadline) {
				t.Fatalf("helper %d did not exec sleep within 10 s", pid)
			}
			state, _, ok := procStat(pid)
			if !ok {
				t.Fatalf("pid %d vanished before sleep ran", pid)
			}
			if state == "Z" {
				zombies++
			}
			if !notReaped(pid, start) {
				t.Fatalf("the creator %d was judged gone in the middle of its exec (state %s)", pid, state)
			}
			if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); strings.TrimSpace(string(comm)) == "sleep" {
				break
			}
		}
		helper.Wait()
		if notReaped(pid, start) {
			t.Fatalf("reaped helper %d still counts", pid)
		}
	}
	t.Logf("zombie state seen %d times during 40 execs", zombies)
}
