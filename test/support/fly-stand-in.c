// A stand-in for fly (which needs a real Concourse web to do anything else): as the real one,
// `fly --version` prints its version, the web's release it came from, on a line of its own and
// exits 0. Any other call is refused. Every call appends its arguments, one line, to RECORD.
// Built with -DVERSION='"8.2.5"' -DRECORD='"/path/calls"'.
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
	FILE *record = fopen(RECORD, "a");
	if (record != NULL) {
		for (int i = 1; i < argc; i++) fprintf(record, "%s%s", i > 1 ? " " : "", argv[i]);
		fputc('\n', record);
		fclose(record);
	}
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		puts(VERSION);
		return 0;
	}
	fprintf(stderr, "stand-in fly: only --version is known here\n");
	return 1;
}
