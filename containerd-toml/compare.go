package main

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// compareDumps: the host settings of before (containerd's view of the main config alone)
// that after (with the drop-in) lost or changed, except the keys ours sets on purpose and
// values that only say what an absent key means anyway (containerd decodes an absent key to
// its zero value); then every runtime binary of ours that after does not show.
func compareDumps(before, after, ours table) []string {
	b, a, o := flatten(before), flatten(after), flatten(ours)
	var lines []string
	for _, path := range sortedKeys(b) {
		if path == "imports" || path == "version" {
			continue
		}
		if _, set := o[path]; set {
			continue
		}
		now, present := a[path]
		if present && reflect.DeepEqual(now, b[path]) {
			continue
		}
		if !present && isZero(b[path]) {
			continue
		}
		was := fmt.Sprintf("%s = %s", path, show(b[path]))
		if present {
			lines = append(lines, fmt.Sprintf("lost: %s (now %s)", was, show(now)))
		} else {
			lines = append(lines, "lost: "+was)
		}
	}
	for _, path := range sortedKeys(o) {
		if !strings.HasSuffix(path, ".options.BinaryName") {
			continue
		}
		if now, present := a[path]; !present || !reflect.DeepEqual(now, o[path]) {
			lines = append(lines, fmt.Sprintf("missing: %s = %s", path, show(o[path])))
		}
	}
	return lines
}

// flatten lists every leaf of t by its dotted path (plugins."io.containerd.grpc.v1.cri".x).
func flatten(t table) map[string]interface{} {
	out := map[string]interface{}{}
	var walk func(prefix string, t table)
	walk = func(prefix string, t table) {
		for k, v := range t {
			path := quoteKey(k)
			if prefix != "" {
				path = prefix + "." + path
			}
			if sub, ok := v.(table); ok {
				walk(path, sub)
				continue
			}
			out[path] = v
		}
	}
	walk("", t)
	return out
}

func sortedKeys(m map[string]interface{}) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func isZero(v interface{}) bool {
	switch x := v.(type) {
	case string:
		return x == ""
	case int64:
		return x == 0
	case float64:
		return x == 0
	case bool:
		return !x
	case []interface{}:
		return len(x) == 0
	case []map[string]interface{}:
		return len(x) == 0
	}
	return false
}

// show writes a value the way TOML would.
func show(v interface{}) string {
	switch x := v.(type) {
	case string:
		return quoteString(x)
	case []interface{}:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = show(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// quoteKey leaves a bare key bare and quotes any other.
func quoteKey(k string) string {
	if k == "" {
		return `""`
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return quoteString(k)
		}
	}
	return k
}

// quoteString writes s as a TOML basic string.
func quoteString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\u%04x", c)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
