package main

import (
	"fmt"
	"strings"
)

// The wrapper reads argv exactly as runc does: urfave/cli v1 over Go's flag package. Global
// flags come before the subcommand (no reordering there). A subcommand's arguments are
// reordered first, flags moved before the rest, so that `run ID --bundle DIR` runs DIR's bundle;
// `exec` alone skips that. urfave reordered differently before v1.22.2 (runc 1.1) and since
// (runc 1.2 to 1.4): a call the two read differently is refused, as is one runc would refuse.

// flagSet names a command's flags, each with whether it takes a value (a bool flag does not),
// and the aliases that are one flag ("bundle" and "b").
type flagSet struct {
	takesValue map[string]bool
	alias      map[string]string
}

func newFlagSet(flags ...string) flagSet {
	s := flagSet{takesValue: map[string]bool{}, alias: map[string]string{}}
	for _, f := range flags {
		// "name, alias=" : a trailing "=" marks a flag that takes a value.
		value := strings.HasSuffix(f, "=")
		names := strings.Split(strings.TrimSuffix(f, "="), ",")
		for _, n := range names {
			n = strings.TrimSpace(n)
			s.takesValue[n] = value
			s.alias[n] = strings.TrimSpace(names[0])
		}
	}
	// urfave adds these to the app and to every command.
	s.takesValue["help"], s.alias["help"] = false, "help"
	s.takesValue["h"], s.alias["h"] = false, "help"
	return s
}

// runc 1.1 to 1.4: the union of each version's flags (a flag one version lacks makes that one
// fail the call, which the wrapper then cannot make worse).
var (
	globalFlags = newFlagSet("debug", "log=", "log-format=", "root=", "criu=", "systemd-cgroup", "rootless=", "version, v")
	createFlags = newFlagSet("bundle, b=", "console-socket=", "pidfd-socket=", "pid-file=", "no-pivot", "no-new-keyring", "preserve-fds=")
	runFlags    = newFlagSet("bundle, b=", "console-socket=", "pidfd-socket=", "detach, d", "keep", "pid-file=", "no-subreaper", "no-pivot",
		"no-new-keyring", "preserve-fds=")
	execFlags = newFlagSet("console-socket=", "pidfd-socket=", "cwd=", "env, e=", "tty, t", "user, u=", "additional-gids, g=", "process, p=",
		"detach, d", "pid-file=", "process-label=", "apparmor=", "no-new-privs", "cap, c=", "preserve-fds=", "cgroup=", "ignore-paused")
)

// invocation is what the wrapper needs to know about one call of the runtime.
type invocation struct {
	// Subcommand, e.g. "create", "state", "delete"; empty when there is none (runc --version).
	Subcommand string
	// Bundle directory given with --bundle/-b; empty means the current directory.
	Bundle string
	// `exec`: the process file given with --process/-p; empty when the process is on the command line.
	Process string
	// ID of the container (create, run, exec): the first argument after the subcommand's flags.
	ID string
}

// parsed is what Go's flag package makes of a list: each flag's last value, by its first name
// (bool flags as "true"), and the arguments after the flags.
type parsed struct {
	values map[string]string
	rest   []string
}

// goFlags parses args as Go's flag package does, then urfave's check that no flag is given by two
// of its names. It stops at the first argument that is not a flag ("-" is none), after "--".
func goFlags(s flagSet, args []string) (parsed, error) {
	p := parsed{values: map[string]string{}}
	seen := map[string]map[string]bool{}
	for len(args) > 0 {
		a := args[0]
		if len(a) < 2 || a[0] != '-' {
			break
		}
		dashes := 1
		if a[1] == '-' {
			dashes = 2
			if len(a) == 2 {
				args = args[1:]
				break
			}
		}
		name := a[dashes:]
		if name == "" || name[0] == '-' || name[0] == '=' {
			return p, fmt.Errorf("bad flag syntax: %s", a)
		}
		args = args[1:]
		value, inline := "", false
		if i := strings.IndexByte(name, '='); i >= 0 {
			name, value, inline = name[:i], name[i+1:], true
		}
		takesValue, known := s.takesValue[name]
		if !known {
			return p, fmt.Errorf("flag provided but not defined: -%s", name)
		}
		switch {
		case !takesValue && !inline:
			value = "true"
		case takesValue && !inline:
			if len(args) == 0 {
				return p, fmt.Errorf("flag needs an argument: -%s", name)
			}
			value, args = args[0], args[1:]
		}
		canonical := s.alias[name]
		if seen[canonical] == nil {
			seen[canonical] = map[string]bool{}
		}
		seen[canonical][name] = true
		if len(seen[canonical]) > 1 {
			return p, fmt.Errorf("cannot use two forms of the same flag: -%s", canonical)
		}
		p.values[canonical] = value
	}
	p.rest = args
	return p, nil
}

// reorderBefore1222 is urfave/cli v1.22.1's reordering (runc 1.1): every argument that starts
// with "-" moves to the front, with the argument after one that holds no "=" when that does not
// start with "-" (a bool flag's too); "--" and all after it stay at the end.
func reorderBefore1222(args []string) []string {
	var flags, rest []string
	value := false
	for i, a := range args {
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		if value && !strings.HasPrefix(a, "-") {
			value = false
			flags = append(flags, a)
			continue
		}
		value = false
		if a != "-" && strings.HasPrefix(a, "-") {
			flags = append(flags, a)
			value = !strings.Contains(a, "=")
		} else {
			rest = append(rest, a)
		}
	}
	return append(flags, rest...)
}

// isFlagOf: whether arg names one of the command's flags (urfave/cli v1.22.14's argIsFlag).
func isFlagOf(s flagSet, arg string) bool {
	if arg == "-" || arg == "--" || !strings.HasPrefix(arg, "-") {
		return false
	}
	if strings.HasPrefix(arg, "--") {
		arg = strings.Replace(arg, "-", "", 2)
	}
	if strings.HasPrefix(arg, "-") {
		arg = strings.Replace(arg, "-", "", 1)
	}
	_, known := s.takesValue[strings.Split(arg, "=")[0]]
	return known
}

// reorderSince1222 is urfave/cli v1.22.14's reordering (runc 1.2 to 1.4): the command's own
// flags move to the front, each with the argument after it when that is no flag of the command
// and the flag holds no "="; after a "--" that is no flag's value, "--" and everything after it
// go behind the other arguments.
func reorderSince1222(s flagSet, args []string) []string {
	var flags, rest []string
	value := false
	for i, a := range args {
		switch {
		case value && !isFlagOf(s, a):
			value = false
			flags = append(flags, a)
		case a == "--":
			rest = append(append([]string{"--"}, rest...), args[i+1:]...)
			return append(flags, rest...)
		case isFlagOf(s, a):
			flags = append(flags, a)
			value = !strings.Contains(a, "=")
		default:
			rest = append(rest, a)
		}
	}
	return append(flags, rest...)
}

// commandReading is one urfave version's reading of a subcommand's arguments.
func commandReading(s flagSet, args []string, reorder func([]string) []string) (invocation, error) {
	if reorder != nil {
		args = reorder(args)
	}
	p, err := goFlags(s, args)
	if err != nil {
		return invocation{}, err
	}
	inv := invocation{Bundle: p.values["bundle"], Process: p.values["process"]}
	if len(p.rest) > 0 {
		inv.ID = p.rest[0]
	}
	return inv, nil
}

// parseArgs reads args (without argv[0]) as runc does: the subcommand after the global flags
// and, for create, run and exec, the bundle or process file and the container's id. An error
// says why the call cannot be read as runc would read it (runc would refuse it, or two
// versions of runc would read it differently); only the subcommand is set then.
func parseArgs(args []string) (invocation, error) {
	global, err := goFlags(globalFlags, args)
	if err != nil || len(global.rest) == 0 {
		// No subcommand (--version, --help, a bad global flag): runc prints or refuses, nothing runs.
		return invocation{}, nil
	}
	sub, rest := global.rest[0], global.rest[1:]
	var inv invocation
	switch sub {
	case "create", "run":
		flags := createFlags
		if sub == "run" {
			flags = runFlags
		}
		older, errOlder := commandReading(flags, rest, reorderBefore1222)
		newer, errNewer := commandReading(flags, rest, func(a []string) []string { return reorderSince1222(flags, a) })
		switch {
		case errOlder != nil:
			err = errOlder
		case errNewer != nil:
			err = errNewer
		case older != newer:
			err = fmt.Errorf("runc 1.1 reads these arguments as bundle %q and id %q, runc 1.2 and later as bundle %q and id %q", older.Bundle, older.ID, newer.Bundle, newer.ID)
		}
		inv = older
	case "exec":
		// exec reads its arguments as they come (runc's SkipArgReorder).
		inv, err = commandReading(execFlags, rest, nil)
	}
	inv.Subcommand = sub
	if err != nil {
		return invocation{Subcommand: sub}, fmt.Errorf("the arguments cannot be read as runc reads them: %v", err)
	}
	return inv, nil
}

// editsProcess: the subcommand that starts another process in a running container.
func editsProcess(sub string) bool {
	return sub == "exec"
}

// editsBundle: the subcommands that start a new container from a bundle's config.json.
func editsBundle(sub string) bool {
	return sub == "create" || sub == "run"
}
