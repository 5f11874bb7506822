/* replay_main.c — run a fuzz harness over saved inputs, without libFuzzer.
 *
 * meson links each harness with this main() in the ordinary (gcc) build, so
 * the seed corpus and every crash that fuzzing ever found (tests/fuzz/
 * regressions/<harness>/) are replayed by the normal test suite, with or
 * without sanitizers. Arguments are files or directories (every regular file
 * inside, not recursive). A broken property aborts the process, which fails
 * the test; replaying nothing at all also fails, because a test that checks
 * no input proves nothing. */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			uint8_t *nb = realloc(buf, ncap);
			if (!nb) {
				fprintf(stderr, "replay: %s: out of memory\n", path);
				free(buf);
				fclose(f);
				return -1;
			}
			buf = nb;
			cap = ncap;
		}
		size_t got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		fprintf(stderr, "replay: %s: read error\n", path);
		free(buf);
		return -1;
	}
	/* An exact-size copy, so that a sanitizer build sees overreads. */
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact) {
		free(buf);
		return -1;
	}
	memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

static int is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replay every regular file in dir, in name order; returns files replayed or -1. */
static long replay_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	char **names = NULL;
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char **nn = realloc(names, (n + 1) * sizeof(*names));
		if (!nn || !(nn[n] = strdup(e->d_name))) {
			names = nn ? nn : names;
			break;
		}
		names = nn;
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_names);
	long count = 0;
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (!is_dir(path)) {
			if (replay_file(path) != 0)
				count = -1;
			else if (count >= 0)
				count++;
		}
		free(names[i]);
	}
	free(names);
	return count;
}

int main(int argc, char **argv)
{
	long total = 0;
	for (int i = 1; i < argc; i++) {
		long n;
		if (is_dir(argv[i])) {
			n = replay_dir(argv[i]);
		} else if (access(argv[i], F_OK) != 0 && errno == ENOENT) {
			n = 0; /* a harness without regressions has no folder yet */
		} else {
			n = replay_file(argv[i]) == 0 ? 1 : -1;
		}
		if (n < 0)
			return 1;
		printf("replay: %s: %ld inputs\n", argv[i], n);
		total += n;
	}
	if (total == 0) {
		fprintf(stderr, "replay: no inputs replayed\n");
		return 1;
	}
	printf("replay: %ld inputs, no property broken\n", total);
	return 0;
}
