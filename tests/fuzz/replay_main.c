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
	struct stat st;
	if (!f || fstat(fileno(f), &st) != 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	/* Exactly the file's size, so that a sanitizer build sees overreads. */
	size_t len = (size_t)st.st_size;
	uint8_t *buf = malloc(len ? len : 1);
	int bad = !buf || fread(buf, 1, len, f) != len;
	fclose(f);
	if (bad) {
		fprintf(stderr, "replay: %s: %s\n", path, buf ? "read error" : "out of memory");
		free(buf);
		return -1;
	}
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

static int is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Replay every regular file in dir but hidden ones, in name order; returns
 * files replayed or -1. */
static long replay_dir(const char *dir)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	long count = 0;
	for (int i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (names[i]->d_name[0] != '.' && !is_dir(path)) {
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
		if (is_dir(argv[i]))
			n = replay_dir(argv[i]);
		else if (access(argv[i], F_OK) != 0 && errno == ENOENT)
			n = 0; /* a harness without regressions has no folder yet */
		else
			n = replay_file(argv[i]) == 0 ? 1 : -1;
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
