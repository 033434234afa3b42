// Command cdi-check judges CDI specs with the CDI project's own Go library
// (tags.cncf.io/container-device-interface), the one every CDI-aware runtime reads specs with:
//
//	cdi-check [--as NAME] FILE...
//	    reads each FILE (YAML or JSON) as runtimes do and prints every problem the library
//	    finds, one per line, as "NAME: FIELD: problem" (NAME: the file, or the name --as gives,
//	    for a spec judged before it is moved into place); exits 1 when it printed any
//
// Errors of use go to stderr with exit status 2. host/generate-cdi.sh runs it on the spec the
// vendor's tool wrote, before the spec is installed.
package main

import (
	"fmt"
	"os"
)

func main() {
	problems, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "cdi-check: %v\n", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
}

func run(args []string) ([]string, error) {
	name := ""
	if len(args) >= 2 && args[0] == "--as" {
		name, args = args[1], args[2:]
	}
	if len(args) == 0 || (name != "" && len(args) != 1) {
		return nil, fmt.Errorf("usage: cdi-check [--as NAME] FILE... (--as names one file)")
	}
	var problems []string
	for _, file := range args {
		shown := file
		if name != "" {
			shown = name
		}
		for _, p := range checkFile(file) {
			problems = append(problems, shown+": "+p)
		}
	}
	return problems, nil
}
