package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// What a create costs inside the wrapper, step by step, for 0 to 5000 dataset folders
// (four of them writable):
//
//	cd wrapper && go test -run - -bench CreateSteps -benchmem
//
// (Starting the program and exec'ing the runtime are measured from outside, by
// npm run bench:wrapper.)
func BenchmarkCreateSteps(b *testing.B) {
	base := b.TempDir()
	tmp := base
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		// Bundles live on a tmpfs (containerd's are under /run).
		if d, err := os.MkdirTemp("/dev/shm", "gw-cost-"); err == nil {
			tmp = d
			defer os.RemoveAll(d)
		}
	}
	for _, n := range []int{0, 50, 200, 2000, 5000} {
		root := filepath.Join(base, fmt.Sprint("srv", n))
		os.MkdirAll(root, 0o755)
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("set-%d", i)
			if i < 4 {
				name += "_rw"
			}
			os.Mkdir(filepath.Join(root, name), 0o755)
		}
		settingsPath := filepath.Join(base, fmt.Sprint("settings", n, ".json"))
		os.WriteFile(settingsPath, []byte(fmt.Sprintf(`{"realRuntime":"/usr/sbin/runc","datasetRoot":%q,"writableSuffixes":["_writable","_rw"],"env":{"NVIDIA_DRIVER_CAPABILITIES":"compute,utility","NVIDIA_VISIBLE_DEVICES":"0"},"unsetEnv":["AMD_VISIBLE_DEVICES","HSA_OVERRIDE_GFX_VERSION"],"deviceNodes":[]}`, root)), 0o644)
		s, err := loadSettings(settingsPath)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%d/read-settings", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				loadSettings(settingsPath)
			}
		})
		b.Run(fmt.Sprintf("%d/walk-root", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				scanDatasets(s.DatasetRoot, s.WritableSuffixes)
			}
		})
		d, _, err := scanDatasets(s.DatasetRoot, s.WritableSuffixes)
		if err != nil {
			b.Fatal(err)
		}
		e := edits{Env: s.Env, UnsetEnv: s.UnsetEnv, Datasets: d, RecursiveReadOnly: true}
		b.Run(fmt.Sprintf("%d/edit-json", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				spec, _ := parseSpec([]byte(runcSpec))
				containerPrivileges(spec)
				editSpec(spec, e)
			}
		})
		spec, _ := parseSpec([]byte(runcSpec))
		out, _, _ := editSpec(spec, e)
		path := filepath.Join(tmp, "config.json")
		os.WriteFile(path, []byte(runcSpec), 0o644)
		info, _ := os.Stat(path)
		b.Run(fmt.Sprintf("%d/write-bundle", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				writeAtomically(path, out, info)
			}
		})
	}
}

// What `runc spec` writes (runc 1.1), with a busybox process: the spec a create edits.
const runcSpec = `{"ociVersion":"1.0.2-dev","process":{"terminal":false,"user":{"uid":0,"gid":0},"args":["/bin/true"],"env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","NVIDIA_VISIBLE_DEVICES=all"],"cwd":"/","capabilities":{"bounding":["CAP_AUDIT_WRITE","CAP_KILL","CAP_NET_BIND_SERVICE"],"effective":["CAP_AUDIT_WRITE","CAP_KILL","CAP_NET_BIND_SERVICE"],"permitted":["CAP_AUDIT_WRITE","CAP_KILL","CAP_NET_BIND_SERVICE"],"ambient":["CAP_AUDIT_WRITE","CAP_KILL","CAP_NET_BIND_SERVICE"]},"rlimits":[{"type":"RLIMIT_NOFILE","hard":1024,"soft":1024}],"noNewPrivileges":true},"root":{"path":"rootfs","readonly":true},"hostname":"runc","mounts":[{"destination":"/proc","type":"proc","source":"proc"},{"destination":"/dev","type":"tmpfs","source":"tmpfs","options":["nosuid","strictatime","mode=755","size=65536k"]},{"destination":"/dev/pts","type":"devpts","source":"devpts","options":["nosuid","noexec","newinstance","ptmxmode=0666","mode=0620","gid=5"]},{"destination":"/dev/shm","type":"tmpfs","source":"shm","options":["nosuid","noexec","nodev","mode=1777","size=65536k"]},{"destination":"/dev/mqueue","type":"mqueue","source":"mqueue","options":["nosuid","noexec","nodev"]},{"destination":"/sys","type":"sysfs","source":"sysfs","options":["nosuid","noexec","nodev","ro"]},{"destination":"/sys/fs/cgroup","type":"cgroup","source":"cgroup","options":["nosuid","noexec","nodev","relatime","ro"]}],"linux":{"resources":{"devices":[{"allow":false,"access":"rwm"}]},"namespaces":[{"type":"pid"},{"type":"network"},{"type":"ipc"},{"type":"uts"},{"type":"mount"}],"maskedPaths":["/proc/acpi","/proc/asound","/proc/kcore","/proc/keys","/proc/latency_stats","/proc/timer_list","/proc/timer_stats","/proc/sched_debug","/sys/firmware","/proc/scsi"],"readonlyPaths":["/proc/bus","/proc/fs","/proc/irq","/proc/sys","/proc/sysrq-trigger"]}}`

// The listing does not allocate per folder: a root of thousands of read-only folders costs
// one pass over its entries, whatever their number.
func TestScanAllocationsAreFlat(t *testing.T) {
	allocs := func(n int) float64 {
		root := t.TempDir()
		os.Chmod(root, 0o755)
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("set-%d", i)
			if i < 4 {
				name += "_rw"
			}
			if err := os.Mkdir(filepath.Join(root, name), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return testing.AllocsPerRun(20, func() {
			if _, _, err := scanDatasets(root, []string{"_writable", "_rw"}); err != nil {
				t.Fatal(err)
			}
		})
	}
	few, many := allocs(50), allocs(5000)
	if many-few > 5 {
		t.Errorf("scanDatasets: %.0f allocations for 50 folders, %.0f for 5000: it grows with the folders", few, many)
	}
}
