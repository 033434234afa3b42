// Command containerd-toml does the TOML work of host/apply-containerd-config.sh on a host,
// with a TOML parser rather than text splicing:
//
//	containerd-toml drop-in MAIN OURS
//	    prints the drop-in: each plugin table OURS names, taken whole from the host's main
//	    config MAIN with OURS merged into it (containerd 1.6 replaces a plugin table an
//	    imported file names as a whole, so the host's own keys must come along)
//	containerd-toml main-with-import MAIN GLOB
//	    prints MAIN with GLOB in its imports: unchanged when it has it, else with one line
//	    added at the top (every other line, comments included, kept as written)
//	containerd-toml compare-dumps BEFORE AFTER OURS
//	    compares two `containerd config dump` outputs: prints each host setting of BEFORE
//	    that AFTER lost (other than the keys OURS sets on purpose) and each runtime of OURS
//	    that AFTER does not show; exits 1 when it printed anything
//
// A missing or empty MAIN is an empty config. Errors go to stderr with exit status 2.
package main

import (
	"fmt"
	"os"
)

func main() {
	out, findings, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "containerd-toml: %v\n", err)
		os.Exit(2)
	}
	os.Stdout.Write(out)
	if findings {
		os.Exit(1)
	}
}

func run(args []string) (out []byte, findings bool, err error) {
	want := map[string]int{"drop-in": 3, "main-with-import": 3, "compare-dumps": 4}
	if len(args) == 0 || want[args[0]] != len(args) {
		return nil, false, fmt.Errorf("usage: containerd-toml drop-in MAIN OURS | main-with-import MAIN GLOB | compare-dumps BEFORE AFTER OURS")
	}
	switch args[0] {
	case "drop-in":
		main, err := readConfig(args[1], true)
		if err != nil {
			return nil, false, err
		}
		ours, err := readConfig(args[2], false)
		if err != nil {
			return nil, false, err
		}
		out, err = dropIn(main, ours)
		return out, false, err
	case "main-with-import":
		text, err := readOptional(args[1])
		if err != nil {
			return nil, false, err
		}
		out, err = mainWithImport(text, args[1], args[2])
		return out, false, err
	case "compare-dumps":
		var docs [3]table
		for i, p := range args[1:] {
			if docs[i], err = readConfig(p, false); err != nil {
				return nil, false, err
			}
		}
		lines := compareDumps(docs[0], docs[1], docs[2])
		for _, l := range lines {
			out = append(out, l...)
			out = append(out, '\n')
		}
		return out, len(lines) > 0, nil
	}
	return nil, false, fmt.Errorf("unknown action %q", args[0]) // not reached: want lists every action
}
