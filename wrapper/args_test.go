package main

import "testing"

func TestParseArgs(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want invocation
	}{
		{"containerd shim create", []string{"--root", "/run/containerd/runc/default", "--log", "/b/log.json", "--log-format", "json", "create", "--bundle", "/b", "--pid-file", "/b/init.pid", "id1"}, invocation{"create", "/b"}},
		{"systemd cgroup flag", []string{"--systemd-cgroup", "--root=/r", "create", "-b", "/b", "id"}, invocation{"create", "/b"}},
		{"bundle with equals", []string{"create", "--bundle=/x y", "id"}, invocation{"create", "/x y"}},
		{"single dash bundle", []string{"run", "-bundle", "/b", "-d", "id"}, invocation{"run", "/b"}},
		{"pidfd socket before the bundle", []string{"create", "--pidfd-socket", "/s", "--bundle", "/b", "id"}, invocation{"create", "/b"}},
		{"no bundle means cwd", []string{"create", "--pid-file", "p", "id"}, invocation{"create", ""}},
		{"value that looks like a flag", []string{"create", "--console-socket", "--bundle", "id"}, invocation{"create", ""}},
		{"flags after the id are not flags", []string{"create", "id", "--bundle", "/evil"}, invocation{"create", ""}},
		{"state passes through", []string{"--root", "/r", "state", "id"}, invocation{"state", ""}},
		{"delete with force", []string{"--log", "l", "delete", "--force", "id"}, invocation{"delete", ""}},
		{"global value equal to a subcommand name", []string{"--root", "create", "kill", "id"}, invocation{"kill", ""}},
		{"version flag only", []string{"--version"}, invocation{"", ""}},
		{"nothing", nil, invocation{"", ""}},
	}
	for _, c := range cases {
		if got := parseArgs(c.args); got != c.want {
			t.Errorf("%s: parseArgs(%q) = %+v, want %+v", c.name, c.args, got, c.want)
		}
	}
}
