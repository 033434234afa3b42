//go:build gpuworkers_front

// The wrapper's front. It runs as a constructor, before the Go runtime starts: every call
// other than `create`, `run` and `exec` is exec'ed straight to the real runc from here (`delete`
// after removing the container's GPU job records, release.c), so those
// calls cost about what a small C program costs (starting the Go runtime costs several times
// that), and they never read the settings file: a damaged or wrongly owned settings file
// cannot stop a worker from killing and deleting its containers. `create`, `run` and `exec`
// return to Go, which edits the bundle or the process file (main.go).
//
// The paths are fixed when the wrapper is built (scripts/build-wrapper.sh passes -D for a test
// variant); Go reads them from here (front.go), so each is written once.

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "front.h"

#ifndef GW_CONFIG_PATH
#define GW_CONFIG_PATH "/etc/gpu-workers/runc-wrapper.json"
#endif
#ifndef GW_LOG_PATH
#define GW_LOG_PATH "/var/log/gpu-workers/runc-wrapper.log"
#endif
#ifndef GW_REAL_RUNC
#define GW_REAL_RUNC "/usr/local/lib/gpu-workers/runc.real"
#endif
#ifndef GW_STATE_DIR
#define GW_STATE_DIR "/run/gpu-workers"
#endif

const char *gw_config_path(void) { return GW_CONFIG_PATH; }
const char *gw_log_path(void) { return GW_LOG_PATH; }
const char *gw_real_runc(void) { return GW_REAL_RUNC; }
const char *gw_state_dir(void) { return GW_STATE_DIR; }

#define MARKER "GPU_WORKERS_WRAPPER_ACTIVE"
#define PREFIX "gpu-workers runc wrapper: "

// runc's global flags that take a value; the same as those of globalFlags in args.go.
static int takes_value(const char *name) {
	static const char *const flags[] = {"log", "log-format", "root", "criu", "rootless", NULL};
	for (int i = 0; flags[i]; i++) {
		if (strcmp(name, flags[i]) == 0) return 1;
	}
	return 0;
}

// The subcommand's index the way runc finds it behind the global flags, by the rules of
// parseArgs in args.go; argc when there is none (runc --version).
static int subcommand(int argc, char **argv) {
	int i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[0] != '-' || a[1] == '\0') break;
		while (*a == '-') a++;
		if (strchr(a, '=') == NULL && takes_value(a)) i++; // skip the value
	}
	return i < argc ? i : argc;
}

// Writes s, with each newline as \n, so one event stays one line whatever a name holds.
static void put_line(FILE *f, const char *s) {
	for (; *s; s++) {
		if (*s == '\n') fputs("\\n", f);
		else fputc(*s, f);
	}
}

// Best effort: the line is on stderr anyway.
static void append_log(const char *line) {
	int fd = open(GW_LOG_PATH, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0 && errno == ENOENT) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%s", GW_LOG_PATH);
		char *slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = '\0';
			mkdir(dir, 0755);
			fd = open(GW_LOG_PATH, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
		}
	}
	if (fd < 0) return;
	FILE *f = fdopen(fd, "a");
	if (!f) {
		close(fd);
		return;
	}
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	fprintf(f, "%s ", stamp);
	put_line(f, line);
	fputc('\n', f);
	fclose(f);
}

static void fail(const char *sub, const char *reason) {
	char line[8192];
	if (sub) snprintf(line, sizeof line, PREFIX "%s: %s", sub, reason);
	else snprintf(line, sizeof line, PREFIX "%s", reason);
	put_line(stderr, line);
	fputc('\n', stderr);
	append_log(line);
	exit(1);
}

// glibc calls constructors with main's arguments.
__attribute__((constructor)) static void gw_front(int argc, char **argv, char **envp) {
	(void)envp;
	int at = subcommand(argc, argv);
	const char *sub = at < argc ? argv[at] : NULL;
	if (sub && (strcmp(sub, "create") == 0 || strcmp(sub, "run") == 0 || strcmp(sub, "exec") == 0)) {
		// Go edits the bundle or the process file. Its threads allocate next to nothing in C: one malloc arena
		// will do, which spares each thread the Go runtime starts a reservation of its own.
		mallopt(M_ARENA_MAX, 1);
		return;
	}
	if (getenv(MARKER)) {
		fail(sub, "refusing to run: " MARKER " is set, so the real runtime called this wrapper again (a loop); the runtime it calls must be the real runc, never the wrapper");
	}
	// The container's GPU job records go before runc deletes it (release.c); a few system calls.
	if (sub && strcmp(sub, "delete") == 0) gw_release(GW_STATE_DIR, gw_delete_id(argc, argv, at));
	// Seen by anything the real runc starts: a runtime that calls the wrapper again stops at once.
	if (setenv(MARKER, "1", 1) != 0) fail(sub, "cannot set " MARKER);
	argv[0] = (char *)GW_REAL_RUNC;
	execv(GW_REAL_RUNC, argv);
	char reason[4352];
	snprintf(reason, sizeof reason, "cannot exec the real runc %s: %s", GW_REAL_RUNC, strerror(errno));
	fail(sub, reason);
}
