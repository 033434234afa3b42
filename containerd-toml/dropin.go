package main

import (
	"bytes"
	"fmt"

	"github.com/BurntSushi/toml"
)

const dropInHeader = "# Written by gpu-workers (apply-containerd-config.sh): the plugin tables gpu-workers sets,\n" +
	"# each the host's own from its main config with gpu-workers' keys merged in, since\n" +
	"# containerd 1.6 replaces a whole plugin table that an imported file names.\n"

// dropIn: version 2, and for each plugin table ours names, the main config's table of that
// plugin (the host's settings) with ours merged into it, ours winning key by key.
func dropIn(main, ours table) ([]byte, error) {
	if len(main) > 0 {
		v, err := configVersion(main)
		if err != nil {
			return nil, fmt.Errorf("the main config: %v", err)
		}
		if v != 2 {
			return nil, fmt.Errorf("the main config is version %d; gpu-workers only extends version 2 configs", v)
		}
	}
	if v, err := configVersion(ours); err != nil || v != 2 {
		return nil, fmt.Errorf("our settings must be a version 2 config")
	}
	ourPlugins, ok := ours["plugins"].(table)
	if !ok || len(ourPlugins) == 0 {
		return nil, fmt.Errorf("our settings name no plugin table")
	}
	hostPlugins, _ := main["plugins"].(table)
	if _, isTable := main["plugins"]; isTable && hostPlugins == nil {
		return nil, fmt.Errorf("the main config's plugins is not a table")
	}
	plugins := table{}
	for name, value := range ourPlugins {
		own, ok := value.(table)
		if !ok {
			return nil, fmt.Errorf("our plugins.%s is not a table", quoteKey(name))
		}
		host := table{}
		if h, present := hostPlugins[name]; present {
			if host, ok = h.(table); !ok {
				return nil, fmt.Errorf("the main config's plugins.%s is not a table", quoteKey(name))
			}
		}
		plugins[name] = merge(host, own)
	}
	var buf bytes.Buffer
	buf.WriteString(dropInHeader)
	if err := toml.NewEncoder(&buf).Encode(table{"version": int64(2), "plugins": plugins}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// merge returns base with over laid on it: tables merge key by key, any other value of
// over (lists included) replaces base's. Neither argument changes.
func merge(base, over table) table {
	out := make(table, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if sub, ok := v.(table); ok {
			if have, ok := out[k].(table); ok {
				out[k] = merge(have, sub)
				continue
			}
			out[k] = merge(table{}, sub)
			continue
		}
		out[k] = v
	}
	return out
}
