package main

import (
	"strings"
	"testing"
)

func TestSpecFeatures(t *testing.T) {
	const pid = `"linux":{"namespaces":[{"type":"pid"},{"type":"mount"}]}`
	s := &settings{GpuNodes: []string{"/dev/nvidia1", "/dev/dri/renderD129"}}
	refused := []struct{ spec, want string }{
		{`{"linux":{"namespaces":[{"type":"mount"},{"type":"network"}]}}`, "no pid namespace of its own (no-pid-namespace: "},
		{`{}`, "no pid namespace of its own (no-pid-namespace: "},
		{`{` + pid + `,"hooks":{"createRuntime":[{"path":"/usr/bin/x"}]}}`, "hook hooks.createRuntime /usr/bin/x (host-hooks: it runs on the host as root)"},
		{`{` + pid + `,"hooks":{"prestart":[{"path":"/bin/p"}]}}`, "hook hooks.prestart /bin/p (host-hooks"},
		{`{` + pid + `,"hooks":{"poststart":[{"path":"/bin/p"}]}}`, "hook hooks.poststart /bin/p (host-hooks"},
		{`{` + pid + `,"hooks":{"poststop":[{"path":"/bin/p"}]}}`, "hook hooks.poststop /bin/p (host-hooks"},
		{`{` + pid + `,"annotations":{"cdi.k8s.io/gpu":"nvidia.com/gpu=all"}}`, "annotation cdi.k8s.io/gpu (cdi-annotations: "},
		{`{"linux":{"namespaces":[{"type":"pid"}],"devices":[{"path":"/dev/nvidia0","type":"c"}]}}`, "device node /dev/nvidia0 in linux.devices (other-gpu-devices: "},
		{`{"linux":{"namespaces":[{"type":"pid"}],"devices":[{"path":"/dev/dri/card0","type":"c"}]}}`, "device node /dev/dri/card0 in linux.devices (other-gpu-devices: "},
		{`{"linux":{"namespaces":[{"type":"pid"}],"devices":[{"path":"/dev/dri/renderD128","type":"c"}]}}`, "device node /dev/dri/renderD128 in linux.devices (other-gpu-devices: "},
	}
	for _, c := range refused {
		spec, err := parseSpec([]byte(c.spec))
		if err != nil {
			t.Fatal(err)
		}
		found, err := specFeatures(spec, s, s.GpuNodes)
		if err != nil || len(found) != 1 || !strings.HasPrefix(found[0], c.want) {
			t.Errorf("%s: got %q, %v; want one finding starting %q", c.spec, found, err, c.want)
		}
	}
	fine := []string{
		`{` + pid + `}`,
		`{` + pid + `,"hooks":{"createContainer":[{"path":"/usr/bin/nvidia-ctk"}],"startContainer":[{"path":"/bin/x"}]}}`,
		`{` + pid + `,"annotations":{"io.kubernetes.cri.container-type":"container","cdi.k8s.io":"no slash"}}`,
		`{"linux":{"namespaces":[{"type":"pid"}],"devices":[{"path":"/dev/nvidia1"},{"path":"/dev/dri/renderD129"},{"path":"/dev/nvidiactl"},{"path":"/dev/nvidia-uvm"},{"path":"/dev/kfd"},{"path":"/dev/fuse"}]}}`,
	}
	for _, f := range fine {
		spec, _ := parseSpec([]byte(f))
		if found, err := specFeatures(spec, s, s.GpuNodes); err != nil || len(found) != 0 {
			t.Errorf("%s: got %q, %v; want nothing", f, found, err)
		}
	}
	// Each feature allowed alone lets through its own finding only.
	all := `{"hooks":{"createRuntime":[{"path":"/x"}]},"annotations":{"cdi.k8s.io/a":"b"},"linux":{"devices":[{"path":"/dev/nvidia7"}]}}`
	spec, _ := parseSpec([]byte(all))
	for _, allow := range []string{"no-pid-namespace", "host-hooks", "cdi-annotations", "other-gpu-devices"} {
		found, err := specFeatures(spec, &settings{AllowSpec: []string{allow}}, nil)
		if err != nil || len(found) != 3 {
			t.Errorf("allowing %s: got %q, %v; want the other three", allow, found, err)
		}
		for _, f := range found {
			if strings.Contains(f, "("+allow+":") {
				t.Errorf("allowing %s still refuses it: %q", allow, f)
			}
		}
	}
}
