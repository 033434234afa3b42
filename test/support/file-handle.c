// A file by its handle, as a task with CAP_DAC_READ_SEARCH could reach any file of a
// filesystem that one of its mounts comes from (the worker's own keys included):
//   file-handle name PATH              prints PATH's handle: "TYPE HEX" (name_to_handle_at)
//   file-handle open DIR TYPE HEX      opens the file with that handle on DIR's filesystem
//                                      (open_by_handle_at) and copies it to stdout
// Built static, so it runs in any image. Exit 1 with the reason on stderr when refused.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_HANDLE 128

static int fail(const char *what) {
	fprintf(stderr, "%s: %s\n", what, strerror(errno));
	return 1;
}

static int name(const char *path) {
	struct file_handle *h = malloc(sizeof(*h) + MAX_HANDLE);
	int mount_id;
	h->handle_bytes = MAX_HANDLE;
	if (name_to_handle_at(AT_FDCWD, path, h, &mount_id, 0) != 0) return fail("name_to_handle_at");
	printf("%d ", h->handle_type);
	for (unsigned i = 0; i < h->handle_bytes; i++) printf("%02x", h->f_handle[i]);
	printf("\n");
	return 0;
}

static int open_handle(const char *dir, const char *type, const char *hex) {
	size_t n = strlen(hex) / 2;
	if (n == 0 || n > MAX_HANDLE) {
		fprintf(stderr, "bad handle %s\n", hex);
		return 2;
	}
	struct file_handle *h = malloc(sizeof(*h) + n);
	h->handle_bytes = n;
	h->handle_type = atoi(type);
	for (size_t i = 0; i < n; i++) sscanf(hex + 2 * i, "%2hhx", &h->f_handle[i]);
	int mount_fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (mount_fd < 0) return fail("open");
	int fd = open_by_handle_at(mount_fd, h, O_RDONLY);
	if (fd < 0) return fail("open_by_handle_at");
	char buf[4096];
	ssize_t got;
	while ((got = read(fd, buf, sizeof buf)) > 0) fwrite(buf, 1, got, stdout);
	return got < 0 ? fail("read") : 0;
}

int main(int argc, char **argv) {
	if (argc == 3 && strcmp(argv[1], "name") == 0) return name(argv[2]);
	if (argc == 5 && strcmp(argv[1], "open") == 0) return open_handle(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: %s name PATH | open DIR TYPE HEX\n", argv[0]);
	return 2;
}
