package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/BurntSushi/toml"
)

// table is a TOML table as the parser gives it: tables are tables, every other value is
// a leaf (string, int64, float64, bool, time, or a list).
type table = map[string]interface{}

// readOptional reads a file that may be absent (a host without a main config).
func readOptional(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(data), nil
}

// readConfig parses a TOML file; optional: a missing file is an empty table.
func readConfig(path string, optional bool) (table, error) {
	var text string
	var err error
	if optional {
		text, err = readOptional(path)
	} else {
		var data []byte
		data, err = os.ReadFile(path)
		text = string(data)
	}
	if err != nil {
		return nil, err
	}
	return parse(text, path)
}

func parse(text, name string) (table, error) {
	t := table{}
	if _, err := toml.Decode(text, &t); err != nil {
		return nil, fmt.Errorf("%s is not valid TOML: %v", name, err)
	}
	return t, nil
}

// configVersion is the config's `version`; 1 when absent (containerd's own reading).
func configVersion(t table) (int64, error) {
	v, ok := t["version"]
	if !ok {
		return 1, nil
	}
	n, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("version must be a number, not %v", v)
	}
	return n, nil
}
