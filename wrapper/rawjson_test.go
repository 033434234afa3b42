package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// Members pass through with their exact bytes (number forms, escapes, unknown members),
// written back in key order.
func TestObjectRoundTripKeepsBytes(t *testing.T) {
	doc := `{"z":[1,2.50,1e3],"a":{"x":"a<b\u00e9"},"m":null,"k":true}`
	o, err := parseSpec([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":{"x":"a<b\u00e9"},"k":true,"m":null,"z":[1,2.50,1e3]}`
	if got := string(appendObject(nil, o)); got != want {
		t.Errorf("appendObject = %s, want %s", got, want)
	}
}

func TestParseSpecRejectsNonObjects(t *testing.T) {
	for _, bad := range []string{``, `{`, `[]`, `null`, `"s"`, `1`} {
		if _, err := parseSpec([]byte(bad)); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
			t.Errorf("parseSpec(%q) = %v, want a not-a-JSON-object error", bad, err)
		}
	}
}

// An absent or null member reads as empty; a member of the wrong kind is an error naming it.
func TestGetObjectAndArray(t *testing.T) {
	o, _ := parseSpec([]byte(`{"n":null,"o":{"a":1},"l":[1,{}],"s":"x"}`))
	for _, key := range []string{"absent", "n"} {
		if got, err := getObject(o, key); err != nil || len(got) != 0 {
			t.Errorf("getObject(%q) = %v, %v, want an empty object", key, got, err)
		}
		if got, err := getArray(o, key); err != nil || got != nil {
			t.Errorf("getArray(%q) = %v, %v, want nil", key, got, err)
		}
	}
	if got, err := getObject(o, "o"); err != nil || string(got["a"]) != "1" {
		t.Errorf("getObject(o) = %v, %v", got, err)
	}
	if got, err := getArray(o, "l"); err != nil || len(got) != 2 || string(got[1]) != "{}" {
		t.Errorf("getArray(l) = %v, %v", got, err)
	}
	for _, key := range []string{"s", "l"} {
		if _, err := getObject(o, key); err == nil || !strings.Contains(err.Error(), key+" is not an object") {
			t.Errorf("getObject(%q) = %v, want an error naming it", key, err)
		}
	}
	if _, err := getArray(o, "o"); err == nil || !strings.Contains(err.Error(), "o is not an array") {
		t.Errorf("getArray(o) = %v, want an error naming it", err)
	}
}

// set marshals without HTML escaping and without the encoder's trailing newline.
func TestSetWritesCompactJSON(t *testing.T) {
	o := object{}
	if err := set(o, "env", []string{"A=<b>&c"}); err != nil {
		t.Fatal(err)
	}
	if got := string(o["env"]); got != `["A=<b>&c"]` {
		t.Errorf("set wrote %s", got)
	}
	var back []string
	if err := json.Unmarshal(o["env"], &back); err != nil || back[0] != "A=<b>&c" {
		t.Errorf("read back %q, %v", back, err)
	}
}

// appendString writes what encoding/json reads back as the same string, for every byte a
// UTF-8 folder name can hold.
func TestAppendStringRoundTrips(t *testing.T) {
	var all []byte
	for c := 1; c < 0x80; c++ {
		all = append(all, byte(c))
	}
	for _, s := range []string{"", string(all), "space name $(x)\n\t\r", `quote " back \ slash`, "café_rw 🎉", "\u2028\u2029", "\x7f"} {
		var back string
		if err := json.Unmarshal(appendString(nil, s), &back); err != nil || back != s {
			t.Errorf("appendString(%q) = %s, read back as %q (%v)", s, appendString(nil, s), back, err)
		}
	}
}
