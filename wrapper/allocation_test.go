package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

const goodAllocation = `{"mode":"exclusive","perTask":1,"replicas":1,"waitSeconds":60,"visibleEnv":"NVIDIA_VISIBLE_DEVICES",
"holderEnv":{"NVIDIA_DRIVER_CAPABILITIES":"compute,utility"},"holderDeviceNodes":[],
"units":[{"id":"0","gpu":"0","visible":"0","deviceNodes":[],"gpuNodes":["/dev/nvidia0"]},{"id":"1:0","gpu":"1","visible":"1:0","deviceNodes":[],"gpuNodes":["/dev/nvidia1"]}],
"healthFile":"/run/gpu-workers/health/gpus.tsv"}`

func TestAllocationSettings(t *testing.T) {
	s, err := loadSettings(writeSettings(t, `{"realRuntime":"/r","allocation":`+goodAllocation+`}`, 0o644))
	if err != nil {
		t.Fatal(err)
	}
	if a := s.Allocation; a == nil || len(a.Units) != 2 || a.Units[1].ID != "1:0" || a.WaitSeconds != 60 {
		t.Fatalf("allocation = %+v", s.Allocation)
	}
	if s, err := loadSettings(writeSettings(t, `{"realRuntime":"/r"}`, 0o644)); err != nil || s.Allocation != nil {
		t.Errorf("absent allocation: %+v %v", s, err)
	}
	bad := map[string]string{
		`"mode":"exclusive"`:          `"mode":"all"`,
		`"replicas":1`:                `"replicas":2`,
		`"waitSeconds":60`:            `"waitSeconds":241`,
		`"perTask":1`:                 `"perTask":3`,
		`"id":"1:0"`:                  `"id":"0"`,
		`"id":"0","gpu"`:              `"id":"x","gpu"`,
		`"gpu":"1"`:                   `"gpu":"one"`,
		`"visible":"1:0"`:             `"visible":"1,2"`,
		`"gpuNodes":["/dev/nvidia1"]`: `"gpuNodes":["dev/nvidia1"]`,
		`"healthFile":"/run`:          `"healthFile":"run`,
		`"holderDeviceNodes":[]`:      `"holderDeviceNodes":[],"typo":1`,
		`"deviceNodes":[],"gpuNodes":["/dev/nvidia0"]`: `"deviceNodes":[],"gpuNodes":["/dev/nvidia0"],"extra":1`,
	}
	wants := map[string]string{
		`"mode":"all"`: "allocation.mode", `"replicas":2`: "replicas must be 1", `"waitSeconds":241`: "waitSeconds must be 0 to 240",
		`"perTask":3`: "perTask", `"id":"0"`: "named twice", `"id":"x","gpu"`: "units[0].id", `"gpu":"one"`: "units[1].gpu",
		`"visible":"1,2"`: "units[1].visible", `"gpuNodes":["dev/nvidia1"]`: "units[1].gpuNodes", `"healthFile":"run`: "healthFile",
		`"holderDeviceNodes":[],"typo":1`: "unknown field", `"deviceNodes":[],"gpuNodes":["/dev/nvidia0"],"extra":1`: "unknown field",
	}
	for from, to := range bad {
		text := strings.Replace(goodAllocation, from, to, 1)
		if text == goodAllocation {
			t.Fatalf("%s is not in the good settings", from)
		}
		_, err := loadSettings(writeSettings(t, `{"realRuntime":"/r","allocation":`+text+`}`, 0o644))
		if err == nil || !strings.Contains(err.Error(), wants[to]) {
			t.Errorf("%s: error %v, want it to mention %q", to, err, wants[to])
		}
	}
	empty := `{"realRuntime":"/r","allocation":{"mode":"exclusive","replicas":1,"visibleEnv":"V","units":[]}}`
	if _, err := loadSettings(writeSettings(t, empty, 0o644)); err == nil || !strings.Contains(err.Error(), "at least one unit") {
		t.Errorf("no units: %v", err)
	}
}

func specWith(t *testing.T, mounts []string, env []string) object {
	t.Helper()
	var ms []map[string]string
	for _, m := range mounts {
		ms = append(ms, map[string]string{"destination": m, "type": "bind", "source": "/x"})
	}
	data, _ := json.Marshal(map[string]interface{}{"mounts": ms, "process": map[string]interface{}{"env": env}})
	spec, err := parseSpec(data)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func TestAsk(t *testing.T) {
	a := &allocation{PerTask: 1, Units: make([]allocUnit, 4)}
	cases := []struct {
		mounts []string
		env    []string
		want   int
		err    string
	}{
		{[]string{"/tmp/build/1a2b3c4d"}, nil, 1, ""},
		{[]string{"/tmp/build/1a2b3c4d/inputs/repo"}, []string{"GPU_WORKERS_GPUS=3"}, 3, ""},
		{[]string{"/tmp/build/1a2b3c4d"}, []string{"GPU_WORKERS_GPUS=9", "GPU_WORKERS_GPUS=0"}, 0, ""},
		{[]string{"/tmp/build/1a2b3c4d"}, []string{"GPU_WORKERS_GPUS=5"}, 0, "GPU_WORKERS_GPUS=5 asks more GPUs than this worker has (4)"},
		{[]string{"/tmp/build/1a2b3c4d"}, []string{"GPU_WORKERS_GPUS=99999999999999999999"}, 0, "asks more GPUs than this worker has (4)"},
		{[]string{"/tmp/build/1a2b3c4d"}, []string{"GPU_WORKERS_GPUS=two"}, 0, `GPU_WORKERS_GPUS="two" is not a whole number of GPUs (this worker has 4)`},
		{[]string{"/tmp/build/1a2b3c4d"}, []string{"GPU_WORKERS_GPUS=-1"}, 0, "not a whole number"},
		{[]string{"/tmp/build/1a2b3c4d"}, []string{"GPU_WORKERS_GPUS="}, 0, "not a whole number"},
		// Resource containers hold none when they ask nothing (Concourse never gives them the
		// param): get, put, check (no Dir), upper case, too short, a .. out.
		{[]string{"/tmp/build/get"}, nil, 0, ""},
		{[]string{"/tmp/build/put", "/tmp/build/put/repo"}, nil, 0, ""},
		{nil, nil, 0, ""},
		// An ask is an ask, in any container: it is bounded and read alike.
		{[]string{"/tmp/build/get"}, []string{"GPU_WORKERS_GPUS=2"}, 2, ""},
		{nil, []string{"GPU_WORKERS_GPUS=two"}, 0, "not a whole number"},
		{nil, []string{"GPU_WORKERS_GPUS=5"}, 0, "asks more GPUs than this worker has (4)"},
		{[]string{"/tmp/build/1A2B3C4D"}, nil, 0, ""},
		{[]string{"/tmp/build/1a2b3c4"}, nil, 0, ""},
		{[]string{"/tmp/build/1a2b3c4d0"}, nil, 0, ""},
		{[]string{"/tmp/build/1a2b3c4d/../get"}, nil, 0, ""},
		{[]string{"/tmp/build/1a2b3c4d/"}, nil, 1, ""},
	}
	for _, c := range cases {
		n, err := a.askOf(specWith(t, c.mounts, c.env))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v %v: error %v, want %q", c.mounts, c.env, err, c.err)
			}
			continue
		}
		if err != nil || n != c.want {
			t.Errorf("%v %v: ask %d %v, want %d", c.mounts, c.env, n, err, c.want)
		}
	}
}

func TestHolderEdits(t *testing.T) {
	a := &allocation{VisibleEnv: "NVIDIA_VISIBLE_DEVICES", HolderEnv: map[string]string{"NVIDIA_DRIVER_CAPABILITIES": "compute"},
		HolderDeviceNodes: []string{"/dev/kfd"},
		Units:             []allocUnit{{ID: "0", Gpu: "0", Visible: "g0", DeviceNodes: []string{"/dev/dri/renderD128"}}, {ID: "1", Gpu: "1", Visible: "g1"}}}
	s := &settings{Env: map[string]string{"X": "1"}, UnsetEnv: []string{"NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "AMD_VISIBLE_DEVICES"}}
	env, unset := a.holderEdits(s, a.Units)
	if env["NVIDIA_VISIBLE_DEVICES"] != "g0,g1" || env["NVIDIA_DRIVER_CAPABILITIES"] != "compute" || env["X"] != "1" || strings.Join(unset, " ") != "AMD_VISIBLE_DEVICES" {
		t.Errorf("holder: %v unset %v", env, unset)
	}
	env, unset = a.holderEdits(&settings{Env: map[string]string{"X": "1"}}, nil)
	if len(env) != 1 || strings.Join(unset, " ") != "NVIDIA_DRIVER_CAPABILITIES NVIDIA_VISIBLE_DEVICES" {
		t.Errorf("no units: %v unset %v (every GPU variable unset)", env, unset)
	}
	if got := strings.Join(a.heldDeviceNodes(a.Units[:1]), " "); got != "/dev/kfd /dev/dri/renderD128" {
		t.Errorf("device nodes %s", got)
	}
	if a.heldDeviceNodes(nil) != nil {
		t.Errorf("a container holding nothing got device nodes")
	}
}

const mpsAllocation = `{"mode":"mps","perTask":1,"replicas":2,"waitSeconds":0,"visibleEnv":"NVIDIA_VISIBLE_DEVICES",
"holderEnv":{"NVIDIA_DRIVER_CAPABILITIES":"compute,utility"},"holderDeviceNodes":[],
"units":[{"id":"0","gpu":"0","visible":"0","deviceNodes":[],"gpuNodes":["/dev/nvidia0"],
"env":{"CUDA_MPS_PIPE_DIRECTORY":"/run/gpu-workers/mps/0/pipe"},
"mounts":[{"source":"/run/gpu-workers/mps/0/pipe","destination":"/run/gpu-workers/mps/0/pipe"},{"source":"/run/gpu-workers/mps/0/shm","destination":"/dev/shm"}]}]}`

func TestMpsSettings(t *testing.T) {
	s, err := loadSettings(writeSettings(t, `{"realRuntime":"/r","allocation":`+mpsAllocation+`}`, 0o644))
	if err != nil {
		t.Fatal(err)
	}
	if u := s.Allocation.Units[0]; len(u.Mounts) != 2 || u.Mounts[1].Destination != "/dev/shm" || u.Env["CUDA_MPS_PIPE_DIRECTORY"] == "" {
		t.Fatalf("unit = %+v", u)
	}
	bad := map[string]string{
		`"perTask":1`:                           "perTask must be 0 or 1 in mode mps",
		`"destination":"/dev/shm"`:              "units[0].mounts[1]",
		`"source":"/run/gpu-workers/mps/0/shm"`: "units[0].mounts[1]",
		`"CUDA_MPS_PIPE_DIRECTORY"`:             "units[0].env",
		`"holderDeviceNodes":[]`:                "units[0].env",
	}
	to := map[string]string{
		`"perTask":1`:                           `"perTask":2`,
		`"destination":"/dev/shm"`:              `"destination":"/"`,
		`"source":"/run/gpu-workers/mps/0/shm"`: `"source":"/run/gpu-workers/mps/0/../0/shm"`,
		`"CUDA_MPS_PIPE_DIRECTORY"`:             `"NVIDIA_DRIVER_CAPABILITIES"`,
		// A holders' variable named with an empty value is still the holders'.
		`"holderDeviceNodes":[]`: `"holderDeviceNodes":[],"holderEnv":{"CUDA_MPS_PIPE_DIRECTORY":""}`,
	}
	for from, want := range bad {
		text := strings.Replace(mpsAllocation, from, to[from], 1)
		if _, err := loadSettings(writeSettings(t, `{"realRuntime":"/r","allocation":`+text+`}`, 0o644)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to mention %q", to[from], err, want)
		}
	}
}

func TestMpsAskAndEdits(t *testing.T) {
	a := &allocation{Mode: "mps", PerTask: 1, VisibleEnv: "NVIDIA_VISIBLE_DEVICES",
		Units: []allocUnit{{ID: "0", Gpu: "0", Visible: "0", Env: map[string]string{"CUDA_MPS_PIPE_DIRECTORY": "/p0"}, Mounts: []unitMount{{"/p0", "/p0"}}},
			{ID: "1", Gpu: "1", Visible: "1", Env: map[string]string{"CUDA_MPS_PIPE_DIRECTORY": "/p1"}}}}
	if _, err := a.askOf(specWith(t, nil, []string{"GPU_WORKERS_GPUS=2"})); err == nil || !strings.Contains(err.Error(), "GPU_WORKERS_GPUS=2: in mode mps a container holds one GPU at most") {
		t.Errorf("an ask of 2 in mps: %v", err)
	}
	if n, err := a.askOf(specWith(t, nil, []string{"GPU_WORKERS_GPUS=1"})); n != 1 || err != nil {
		t.Errorf("an ask of 1 in mps: %d %v", n, err)
	}
	env, _ := a.holderEdits(&settings{}, a.Units[1:])
	if env["CUDA_MPS_PIPE_DIRECTORY"] != "/p1" || env["NVIDIA_VISIBLE_DEVICES"] != "1" {
		t.Errorf("holder of unit 1: %v", env)
	}
	if env, _ := a.holderEdits(&settings{}, nil); env["CUDA_MPS_PIPE_DIRECTORY"] != "" {
		t.Errorf("a holder of nothing got a pipe folder: %v", env)
	}
	if m := heldMounts(a.Units); len(m) != 1 || m[0].Source != "/p0" {
		t.Errorf("mounts %v", m)
	}
}

func TestOutOfPoolWithoutItsFolder(t *testing.T) {
	dir := t.TempDir()
	pipe := dir + "/pipe"
	a := &allocation{Units: []allocUnit{{ID: "0", Gpu: "0", Mounts: []unitMount{{pipe, pipe}}}, {ID: "1", Gpu: "1"}}}
	if out := a.outOfPool(); !strings.Contains(out["0"], pipe+" is not a folder: its GPU's daemon is not running") || out["1"] != "" {
		t.Errorf("missing folder: %v", out)
	}
	if err := os.Symlink(dir, pipe); err != nil {
		t.Fatal(err)
	}
	if out := a.outOfPool(); out["0"] == "" {
		t.Errorf("a link to a folder counted as the folder: %v", out)
	}
	os.Remove(pipe)
	os.Mkdir(pipe, 0o1777)
	if out := a.outOfPool(); len(out) != 0 {
		t.Errorf("with its folder: %v", out)
	}
}

func TestUnitMountsComeLast(t *testing.T) {
	spec, err := parseSpec([]byte(`{"mounts":[{"destination":"/dev/shm","type":"tmpfs","source":"shm"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := editSpec(spec, edits{UnitMounts: []unitMount{{"/run/s", "/dev/shm"}}})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Mounts []struct {
			Destination, Source string
			Options             []string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Mounts) != 2 || got.Mounts[1].Source != "/run/s" || strings.Join(got.Mounts[1].Options, ",") != "rbind,rw,nosuid,nodev,noexec,rprivate" {
		t.Errorf("mounts %+v", got.Mounts)
	}
}

// Intel's units: no variable names them (visibleEnv and each visible empty, both or neither), and a holder gets its nodes only.
func TestUnitsNamedByNoVariable(t *testing.T) {
	intel := `{"mode":"exclusive","perTask":1,"replicas":1,"waitSeconds":0,"visibleEnv":"","holderEnv":{},"holderDeviceNodes":[],
"units":[{"id":"0","gpu":"0","visible":"","deviceNodes":["/dev/dri/card0","/dev/dri/renderD128"],"gpuNodes":["/dev/dri/card0","/dev/dri/renderD128"]}]}`
	s, err := loadSettings(writeSettings(t, `{"realRuntime":"/r","allocation":`+intel+`}`, 0o644))
	if err != nil {
		t.Fatal(err)
	}
	env, unset := s.Allocation.holderEdits(&settings{UnsetEnv: []string{"NVIDIA_VISIBLE_DEVICES"}}, s.Allocation.Units)
	if len(env) != 0 || strings.Join(unset, " ") != "NVIDIA_VISIBLE_DEVICES" {
		t.Errorf("holder: %v unset %v (no variable set)", env, unset)
	}
	if got := strings.Join(s.Allocation.heldDeviceNodes(s.Allocation.Units), " "); got != "/dev/dri/card0 /dev/dri/renderD128" {
		t.Errorf("device nodes %s", got)
	}
	for _, bad := range []string{
		strings.Replace(intel, `"visible":""`, `"visible":"0"`, 1),
		strings.Replace(intel, `"visibleEnv":""`, `"visibleEnv":"NVIDIA_VISIBLE_DEVICES"`, 1),
	} {
		if _, err := loadSettings(writeSettings(t, `{"realRuntime":"/r","allocation":`+bad+`}`, 0o644)); err == nil || !strings.Contains(err.Error(), "empty exactly when visibleEnv is") {
			t.Errorf("visible and visibleEnv disagree: %v", err)
		}
	}
}
