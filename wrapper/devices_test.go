package main

import (
	"strings"
	"testing"
)

func TestStatDevice(t *testing.T) {
	d, err := statDevice("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	if d.Type != "c" || d.Major != 1 || d.Minor != 3 {
		t.Errorf("/dev/null = %+v, want c 1:3", d)
	}
	if _, err := statDevice("/etc/hostname"); err == nil || !strings.Contains(err.Error(), "not a character or block device") {
		t.Errorf("a plain file was taken as a device: %v", err)
	}
}
