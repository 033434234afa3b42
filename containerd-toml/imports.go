package main

import (
	"fmt"
	"strings"
)

// mainWithImport: the main config with glob in its imports. Adding a top-level key as the
// first line is valid TOML whatever follows, so the rest stays exactly as the host wrote it.
// Refused: a config that is not version 2, and one with an imports list of its own without
// glob (that list is the host's to edit).
func mainWithImport(text, name, glob string) ([]byte, error) {
	line := "imports = [ " + quoteString(glob) + " ]\n"
	if strings.TrimSpace(text) == "" {
		return []byte("version = 2\n" + line), nil
	}
	doc, err := parse(text, name)
	if err != nil {
		return nil, err
	}
	if imports, present := doc["imports"]; present {
		list, ok := imports.([]interface{})
		if !ok {
			return nil, fmt.Errorf("%s: imports must be a list of paths", name)
		}
		for _, i := range list {
			if i == glob {
				return []byte(text), nil
			}
		}
		return nil, fmt.Errorf("%s already has an imports list without %s; add %s to it and run again", name, quoteString(glob), quoteString(glob))
	}
	v, err := configVersion(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if v != 2 {
		return nil, fmt.Errorf("%s is not a version 2 config (version %d); gpu-workers only extends version 2 configs", name, v)
	}
	return []byte(line + text), nil
}
