package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// The spec as raw JSON: read as an object whose members keep their exact bytes, written
// back in key order without encoding again. The edits (spec.go) change a few members and
// everything else, known or not, passes through as it came.

// object is a JSON object whose members we do not know: each keeps its exact value.
type object map[string]json.RawMessage

// parseSpec reads an OCI spec (or a process) as an object whose members keep their exact values.
func parseSpec(data []byte) (object, error) {
	var spec object
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if spec == nil {
		return nil, fmt.Errorf("not a JSON object: null")
	}
	return spec, nil
}

// appendObject writes o with its members in key order. Every value is already JSON (kept
// from the input, or marshalled by us), so it is copied as it is, not encoded again.
func appendObject(buf []byte, o object) []byte {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	buf = append(buf, '{')
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendString(buf, k)
		buf = append(buf, ':')
		buf = append(buf, o[k]...)
	}
	return append(buf, '}')
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string. s is valid UTF-8 (scanDatasets and
// nestedReadOnly never give other names), so only quotes, backslashes and control
// characters need escaping.
func appendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf = append(buf, s[start:i]...)
		switch c {
		case '"', '\\':
			buf = append(buf, '\\', c)
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\t':
			buf = append(buf, '\\', 't')
		case '\r':
			buf = append(buf, '\\', 'r')
		default:
			buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

func marshal(v interface{}) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// getObject decodes member key of o as an object; absent or null gives an empty one.
func getObject(o object, key string) (object, error) {
	out := object{}
	raw, ok := o[key]
	if !ok || string(raw) == "null" {
		return out, nil
	}
	if err := json.Unmarshal(raw, &out); err != nil || out == nil {
		return nil, fmt.Errorf("%s is not an object", key)
	}
	return out, nil
}

func getArray(o object, key string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	raw, ok := o[key]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s is not an array", key)
	}
	return out, nil
}

func set(o object, key string, v interface{}) error {
	raw, err := marshal(v)
	if err != nil {
		return err
	}
	o[key] = raw
	return nil
}
