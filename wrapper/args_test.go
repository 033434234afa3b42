package main

import (
	"strings"
	"testing"
)

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
		{"flags after the id are flags: runc reorders them", []string{"create", "id", "--bundle", "/evil"}, invocation{Subcommand: "create", Bundle: "/evil", ID: "id"}},
		{"run, the bundle after the id", []string{"run", "cid", "--bundle", "evil"}, invocation{Subcommand: "run", Bundle: "evil", ID: "cid"}},
		{"run, a bool flag takes the next word along when reordering", []string{"run", "--detach", "cid", "--bundle", "x"}, invocation{Subcommand: "run", Bundle: "", ID: "cid"}},
		{"the last bundle wins", []string{"create", "--bundle", "/a", "id", "--bundle", "/b"}, invocation{Subcommand: "create", Bundle: "/b", ID: "id"}},
		{"a flag's value that looks like a flag", []string{"create", "--pid-file", "-b", "/evil", "id"}, invocation{Subcommand: "create", Bundle: "", ID: "/evil"}},
		{"state passes through", []string{"--root", "/r", "state", "id"}, invocation{Subcommand: "state", Bundle: ""}},
		{"delete with force", []string{"--log", "l", "delete", "--force", "id"}, invocation{Subcommand: "delete", Bundle: ""}},
		{"global value equal to a subcommand name", []string{"--root", "create", "kill", "id"}, invocation{Subcommand: "kill", Bundle: ""}},
		{"version flag only", []string{"--version"}, invocation{Subcommand: "", Bundle: ""}},
		{"nothing", nil, invocation{Subcommand: "", Bundle: ""}},
		{"id after --", []string{"create", "--bundle", "/b", "--", "-odd-id"}, invocation{Subcommand: "create", Bundle: "/b", ID: "-odd-id"}},
		{"after --, a bundle flag is an argument", []string{"create", "id", "--", "--bundle", "/x"}, invocation{Subcommand: "create", Bundle: "", ID: "id"}},
		{"shim exec with a process file", []string{"--root", "/r", "--log", "l", "exec", "--process", "/t/p.json", "--detach", "--pid-file", "/t/pid", "id"}, invocation{Subcommand: "exec", Process: "/t/p.json", ID: "id"}},
		{"exec, short process flag with equals", []string{"exec", "-p=/p", "id"}, invocation{Subcommand: "exec", Process: "/p", ID: "id"}},
		{"exec, env values are not the process", []string{"exec", "--env", "--process", "id", "sh"}, invocation{Subcommand: "exec", ID: "id"}},
		{"a value flag takes the id when nothing follows: runc then has no id", []string{"create", "id", "--pid-file"}, invocation{Subcommand: "create", Bundle: "", ID: ""}},
		{"exec is not reordered: flags after the id are the command's", []string{"exec", "-t", "id", "sh", "--process", "/evil"}, invocation{Subcommand: "exec", ID: "id"}},
	}
	for _, c := range cases {
		got, err := parseArgs(c.args)
		if err != nil || got != c.want {
			t.Errorf("%s: parseArgs(%q) = %+v, %v; want %+v", c.name, c.args, got, err, c.want)
		}
	}
}

func TestParseArgsRefuses(t *testing.T) {
	cases := []struct {
		name, want string
		args       []string
	}{
		{"a flag runc does not know, after the id: runc 1.1 refuses it, 1.2 takes it for an argument", "flag provided but not defined: -unknown", []string{"run", "cid", "--unknown"}},
		{"the bundle under both its names", "cannot use two forms of the same flag: -bundle", []string{"create", "--bundle", "/a", "-b", "/b", "id"}},
		{"a value flag at the end", "flag needs an argument: -pid-file", []string{"create", "--pid-file"}},
		{"exec, the env under both its names", "cannot use two forms of the same flag: -env", []string{"exec", "--env", "A=1", "-e", "B=2", "id", "sh"}},
		{"bad flag syntax", "bad flag syntax: ---bundle", []string{"create", "---bundle", "/b", "id"}},
		{"exec, a flag runc does not know", "flag provided but not defined: -z", []string{"exec", "-z", "id"}},
		// Both readings succeed but disagree, so only the check that compares them refuses these.
		{"a bundle of -: runc 1.1 takes the id for the bundle", `runc 1.1 reads these arguments as bundle "id" and id "-", runc 1.2 and later as bundle "-" and id "id"`, []string{"create", "id", "--bundle", "-"}},
		{"run, -b -", `runc 1.1 reads these arguments as bundle "cid" and id "-"`, []string{"run", "cid", "-b", "-"}},
	}
	for _, c := range cases {
		got, err := parseArgs(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: parseArgs(%q) = %+v, %v; want an error naming %q", c.name, c.args, got, err, c.want)
		}
		if got.Subcommand != c.args[0] || got.Bundle != "" || got.ID != "" || got.Process != "" {
			t.Errorf("%s: a refused call keeps only its subcommand, got %+v", c.name, got)
		}
	}
}
