//go:build gpuworkers_front

// At `delete`, before the real runc: the container's GPU job records go (gpujobs.go wrote them
// at create), and dcgm-exporter's mapping file of each GPU it held is written again from the
// records left, all without starting Go, so a delete costs a few system calls more. Best
// effort: nothing here can stop a delete. Under the same flock as gpujobs.go, on the records'
// folder, so two containers sharing a GPU never lose each other's line.

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "front.h"

#define MAX_IDS 4096

// runc's rule for an id, as validContainerID in gpujobs.go.
static int valid_id(const char *id) {
	size_t n = strlen(id);
	if (n == 0 || n > 1024 || id[0] == '.') return 0;
	for (const char *c = id; *c; c++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '+' || *c == '-' || *c == '.')) return 0;
	}
	return 1;
}

// Digits only, as isGpuIndex in gpujobs.go.
static int gpu_index(const char *name) {
	size_t n = strlen(name);
	if (n == 0 || n > 8) return 0;
	for (const char *c = name; *c; c++) {
		if (*c < '0' || *c > '9') return 0;
	}
	return 1;
}

// A folder root may walk through or write in, as checkDir in safepath.go: root's, writable by
// nobody else, but for one above the last with the sticky bit.
static int safe_dir(int fd, int last) {
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
	if (st.st_uid != 0 && st.st_uid != geteuid()) return 0;
	return (st.st_mode & 022) == 0 || (!last && (st.st_mode & S_ISVTX));
}

// Opens the folder at path from / one component at a time, never following a link, each one
// as safe_dir wants (openDirNoLinks in safepath.go); -1 otherwise.
static int open_dir(const char *path) {
	char buf[4096];
	if (path[0] != '/' || snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return -1;
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char *rest = buf + 1;
	while (fd >= 0) {
		if (!safe_dir(fd, *rest == '\0')) break;
		if (*rest == '\0') return fd;
		char *name = rest, *slash = strchr(rest, '/');
		rest = slash ? slash + 1 : rest + strlen(rest);
		if (slash) *slash = '\0';
		if (*name == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) break;
		int next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = next;
	}
	if (fd >= 0) close(fd);
	return -1;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

// The mapping folder named in the records' folder, opened as open_dir does; -1: none.
static int open_mapping(int dir) {
	int fd = openat(dir, ".mapping-dir", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) return -1;
	char path[4097];
	ssize_t n = read(fd, path, sizeof path - 1);
	close(fd);
	if (n < 2 || path[0] != '/' || path[n - 1] != '\n') return -1;
	path[n - 1] = '\0';
	return open_dir(path);
}

// Writes dcgm-exporter's file for one GPU from the ids with a record left there (gpu: its folder).
static void write_mapping(int mapping, const char *index, int gpu) {
	int fd = dup(gpu);
	if (fd < 0) return;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	static char *ids[MAX_IDS];
	int count = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL && count < MAX_IDS) {
		if (e->d_name[0] == '.') continue;
		ids[count] = strdup(e->d_name);
		if (ids[count]) count++;
	}
	closedir(d);
	if (count == 0) {
		unlinkat(mapping, index, 0);
		return;
	}
	qsort(ids, count, sizeof ids[0], by_name);
	char tmp[64];
	snprintf(tmp, sizeof tmp, ".tmp-%s", index);
	unlinkat(mapping, tmp, 0);
	int out = openat(mapping, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	FILE *f = out >= 0 ? fdopen(out, "w") : NULL;
	int ok = f != NULL;
	for (int i = 0; i < count; i++) {
		if (ok && fprintf(f, "%s\n", ids[i]) < 0) ok = 0;
		free(ids[i]);
	}
	if (f && fclose(f) != 0) ok = 0;
	if (!f && out >= 0) close(out);
	if (ok && renameat(mapping, tmp, mapping, index) == 0) return;
	unlinkat(mapping, tmp, 0);
}

void gw_release(const char *state_dir, const char *id) {
	if (!id || !valid_id(id)) return;
	char path[4096];
	if (snprintf(path, sizeof path, "%s/gpu-jobs", state_dir) >= (int)sizeof path) return;
	int dir = open_dir(path);
	if (dir < 0) return; // no records kept on this worker (or none root can trust)
	if (flock(dir, LOCK_EX) != 0) {
		close(dir);
		return;
	}
	int mapping = open_mapping(dir);
	int fd = dup(dir);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d && fd >= 0) close(fd);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		if (!gpu_index(e->d_name)) continue;
		int gpu = openat(dir, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (gpu < 0) continue;
		if (unlinkat(gpu, id, 0) == 0 && mapping >= 0) write_mapping(mapping, e->d_name, gpu);
		close(gpu);
	}
	if (d) closedir(d);
	if (mapping >= 0) close(mapping);
	close(dir); // and with it the lock
}

// The container id of `delete [--force] ID`: the first argument after the subcommand that is
// not a flag (runc's delete takes no flag with a value).
const char *gw_delete_id(int argc, char **argv, int sub) {
	for (int i = sub + 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) return i + 1 < argc ? argv[i + 1] : NULL;
		if (argv[i][0] != '-') return argv[i];
	}
	return NULL;
}
