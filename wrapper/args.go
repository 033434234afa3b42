package main

import "strings"

// runc's global flags that take a value (urfave/cli: --flag value or --flag=value).
var globalValueFlags = map[string]bool{"log": true, "log-format": true, "root": true, "criu": true, "rootless": true}

// Flags of `create`/`run` that take a value; the bundle is one of them.
var createValueFlags = map[string]bool{"bundle": true, "b": true, "console-socket": true, "pidfd-socket": true, "pid-file": true, "preserve-fds": true, "console": true}

// Flags of `exec` that take a value; the process file is one of them.
var execValueFlags = map[string]bool{"console-socket": true, "pidfd-socket": true, "cwd": true, "env": true, "e": true, "user": true, "u": true,
	"additional-gids": true, "g": true, "process": true, "p": true, "apparmor": true, "process-label": true, "cap": true, "c": true,
	"preserve-fds": true, "pid-file": true, "cgroup": true}

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

// flagName splits "--name=value" / "-name" into its name and inline value.
func flagName(arg string) (name, value string, inline bool) {
	name = strings.TrimLeft(arg, "-")
	if i := strings.IndexByte(name, '='); i >= 0 {
		return name[:i], name[i+1:], true
	}
	return name, "", false
}

// parseArgs reads args (without argv[0]) the way runc does, far enough to find the
// subcommand after the global flags and, for create/run, the bundle directory.
func parseArgs(args []string) invocation {
	var inv invocation
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		name, _, inline := flagName(a)
		if !inline && globalValueFlags[name] {
			i++ // skip the value
		}
	}
	if i >= len(args) {
		return inv
	}
	inv.Subcommand = args[i]
	valueFlags := createValueFlags
	switch {
	case editsProcess(inv.Subcommand):
		valueFlags = execValueFlags
	case !editsBundle(inv.Subcommand):
		return inv
	}
	for i++; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				inv.ID = args[i+1]
			}
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			inv.ID = a // Go's flag parsing stops at the first positional argument: the container id
			break
		}
		name, value, inline := flagName(a)
		if !valueFlags[name] {
			continue
		}
		if !inline {
			if i+1 >= len(args) {
				break
			}
			i++
			value = args[i]
		}
		switch name {
		case "bundle", "b":
			inv.Bundle = value
		case "process", "p":
			inv.Process = value
		}
	}
	return inv
}

// editsProcess: the subcommand that starts another process in a running container.
func editsProcess(sub string) bool {
	return sub == "exec"
}

// editsBundle: the subcommands that start a new container from a bundle's config.json.
func editsBundle(sub string) bool {
	return sub == "create" || sub == "run"
}
