package main

import (
	"strings"
	"testing"
)

func TestSpecKeysAsRuncReadsThem(t *testing.T) {
	refused := []struct{ spec, want string }{
		{`{"PROCESS":{"capabilities":{"bounding":["CAP_SYS_ADMIN"]}}}`, `the key "PROCESS" at the spec's top level: runc reads it as "process"`},
		{`{"process":{"Capabilities":{"bounding":["CAP_SYS_ADMIN"]}}}`, `the key "Capabilities" in process: runc reads it as "capabilities"`},
		{`{"process":{"capabilities":{"Bounding":["CAP_SYS_ADMIN"]}}}`, `the key "Bounding" in process.capabilities: runc reads it as "bounding"`},
		{`{"procesſ":{}}`, `the key "procesſ" at the spec's top level: runc reads it as "process"`},
		{`{"proce\u017f\u017f":{}}`, `the key "proceſſ" at the spec's top level: runc reads it as "process"`},
		{`{"Linux":{"resources":{"devices":[{"allow":true}]}}}`, `the key "Linux" at the spec's top level: runc reads it as "linux"`},
		{`{"linux":{"resources":{"devices":[{"allow":false},{"Allow":true}]}}}`, `the key "Allow" in linux.resources.devices[1]: runc reads it as "allow"`},
		{`{"linux":{"namespaces":[{"TYPE":"pid"}]}}`, `the key "TYPE" in linux.namespaces[0]: runc reads it as "type"`},
		{`{"hooks":{"CreateRuntime":[{"path":"/bin/sh"}]}}`, `the key "CreateRuntime" in hooks: runc reads it as "createRuntime"`},
		{`{"mounts":[{"destination":"/srv","Options":["rw"]}]}`, `the key "Options" in mounts[0]: runc reads it as "options"`},
		{`{"process":{"user":{"UID":0}}}`, `the key "UID" in process.user: runc reads it as "uid"`},
		{`{"process":{},"Process":{}}`, `runc reads it as "process"`},
	}
	for _, c := range refused {
		err := specKeysProblem([]byte(c.spec), specRoot, "")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.spec, err, c.want)
		}
	}
	fine := []string{
		`{"ociVersion":"1.0.2","process":{"args":["sh"],"capabilities":{"bounding":["CAP_CHOWN"]},"user":{"uid":0,"gid":0}},"linux":{"namespaces":[{"type":"pid"}]}}`,
		`{"annotations":{"PROCESS":"a value","Io.Kubernetes":"x"},"linux":{"sysctl":{"Net.Core.X":"1"},"resources":{"unified":{"Memory.Max":"1"}}}}`,
		`{"somethingElse":{"PROCESS":1},"process":null,"mounts":null}`,
	}
	for _, spec := range fine {
		if err := specKeysProblem([]byte(spec), specRoot, ""); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
	if err := specKeysProblem([]byte(`{"Env":["A=1"]}`), processLevel, "process"); err == nil || !strings.Contains(err.Error(), `the key "Env" in process: runc reads it as "env"`) {
		t.Errorf("a process file: %v", err)
	}
}
