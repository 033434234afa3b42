package main

import "testing"

func TestParseArgs(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want invocation
	}{
		{"containerd shim create", []string{"--root", "/run/containerd/runc/default", "--log", "/b/log.json", "--log-format", "json", "create", "--bundle", "/b", "--pid-file", "/b/init.pid", "id1"}, invocation{Subcommand: "create", Bundle: "/b", ID: "id1"}},
		{"systemd cgroup flag", []string{"--systemd-cgroup", "--root=/r", "create", "-b", "/b", "id"}, invocation{Subcommand: "create", Bundle: "/b", ID: "id"}},
		{"bundle with equals", []string{"create", "--bundle=/x y", "id"}, invocation{Subcommand: "create", Bundle: "/x y", ID: "id"}},
		{"single dash bundle", []string{"run", "-bundle", "/b", "-d", "id"}, invocation{Subcommand: "run", Bundle: "/b", ID: "id"}},
		{"pidfd socket before the bundle", []string{"create", "--pidfd-socket", "/s", "--bundle", "/b", "id"}, invocation{Subcommand: "create", Bundle: "/b", ID: "id"}},
		{"no bundle means cwd", []string{"create", "--pid-file", "p", "id"}, invocation{Subcommand: "create", Bundle: "", ID: "id"}},
		{"value that looks like a flag", []string{"create", "--console-socket", "--bundle", "id"}, invocation{Subcommand: "create", Bundle: "", ID: "id"}},
		{"flags after the id are not flags", []string{"create", "id", "--bundle", "/evil"}, invocation{Subcommand: "create", Bundle: "", ID: "id"}},
		{"state passes through", []string{"--root", "/r", "state", "id"}, invocation{Subcommand: "state", Bundle: ""}},
		{"delete with force", []string{"--log", "l", "delete", "--force", "id"}, invocation{Subcommand: "delete", Bundle: ""}},
		{"global value equal to a subcommand name", []string{"--root", "create", "kill", "id"}, invocation{Subcommand: "kill", Bundle: ""}},
		{"version flag only", []string{"--version"}, invocation{Subcommand: "", Bundle: ""}},
		{"nothing", nil, invocation{Subcommand: "", Bundle: ""}},
		{"id after --", []string{"create", "--bundle", "/b", "--", "-odd-id"}, invocation{Subcommand: "create", Bundle: "/b", ID: "-odd-id"}},
		{"shim exec with a process file", []string{"--root", "/r", "--log", "l", "exec", "--process", "/t/p.json", "--detach", "--pid-file", "/t/pid", "id"}, invocation{Subcommand: "exec", Process: "/t/p.json", ID: "id"}},
		{"exec, short process flag with equals", []string{"exec", "-p=/p", "id"}, invocation{Subcommand: "exec", Process: "/p", ID: "id"}},
		{"exec, env values are not the process", []string{"exec", "--env", "--process", "-e", "A=1", "id", "sh"}, invocation{Subcommand: "exec", ID: "id"}},
		{"exec on the command line", []string{"exec", "-t", "id", "sh", "--process", "/evil"}, invocation{Subcommand: "exec", ID: "id"}},
	}
	for _, c := range cases {
		if got := parseArgs(c.args); got != c.want {
			t.Errorf("%s: parseArgs(%q) = %+v, want %+v", c.name, c.args, got, c.want)
		}
	}
}
