package main

// Paths fixed when the wrapper is built, never taken from the image, the bundle or the
// caller's environment. front.go fills them from front.c (scripts/build-wrapper.sh builds with
// it); a test variant built with --config-path has every one of them of its own.
var (
	// configPath is the root-owned settings file.
	configPath string
	// defaultLogPath takes the failures that happen before the settings could name a log.
	defaultLogPath string
	// realRunc is where every call other than create and run goes (front.c execs it, and
	// main.go after editing an exec's process file).
	realRunc string
	// stateDir keeps what the wrapper learned about the real runtime (recursive.go) and the
	// dataset root's last listing (listing.go).
	stateDir string
)
