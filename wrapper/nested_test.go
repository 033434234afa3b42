package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestMountPointsInReadOnly(t *testing.T) {
	d := &datasets{Root: "/srv", Source: "/data/srv", Writable: []string{"results_rw"}}
	mountinfo := strings.Join([]string{
		"22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw",
		"30 22 0:40 / /data/srv rw shared:5 - ext4 /dev/vdb rw",         // the root itself: its own mount covers it
		"31 30 0:41 / /data/srv/models/nested/deeper rw - tmpfs t rw",   // listed before its parent: sorted
		"32 30 0:42 / /data/srv/models/nested rw - tmpfs t rw",          // inside a read-only dataset
		"33 30 0:43 / /data/srv/models/nested rw - tmpfs t rw",          // stacked on the same point: once
		"34 30 0:44 / /data/srv/results_rw/cache rw - tmpfs t rw",       // inside a writable dataset: keeps its mode
		"35 30 0:45 / /data/srv/with\\040space\\012_rw rw - tmpfs t rw", // a read-only name (not in Writable)
		"36 30 0:46 / /data/srvx rw - tmpfs t rw",                       // beside the root, not in it
		"37 22 0:47 / /other rw - tmpfs t rw",
		"",
	}, "\n")
	got, err := mountPointsInReadOnly([]byte(mountinfo), d)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"models/nested", "models/nested/deeper", "with space\n_rw"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	_, err = mountPointsInReadOnly([]byte("40 30 0:48 / /data/srv/models/caf\xe9 rw - tmpfs t rw\n"), d)
	if err == nil || !strings.Contains(err.Error(), `cannot keep the read-only dataset "/srv/models" read-only`) {
		t.Errorf("a mount point that is not UTF-8: %v", err)
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/t\011x\012y\134z`: "/t\tx\ny\\z", `/plain`: "/plain", `/end\04`: `/end\04`} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
}
