/* fuzz_config.c — arbitrary bytes as feederd's configuration file.
 *
 * An administrator's typo must become a one-line error, never a crash or a
 * half-applied setting. Each input is parsed by config_parse_text (the
 * messages must name the file and line, on one line) and then loaded as
 * feederd loads its file (config_load --config). A file that loads must print
 * (config_print, what --check-config shows) as a file that loads again to the
 * same configuration: printing it a second time gives the same text. */
#include "fuzz.h"

#include "config.h"
#include "status.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* config_print's text of cfg in a malloc'd string, or NULL. */
static char *print(const struct config *cfg)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	config_print(cfg, f);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* The file config_load reads: a memfd named through /proc, so that each
 * input costs no disk I/O. */
static int conf_fd = -1;
static char conf_path[64];

static int set_file(const char *text, size_t len)
{
	if (conf_fd < 0) {
		conf_fd = memfd_create("fuzz.conf", MFD_CLOEXEC);
		if (conf_fd < 0)
			return -1;
		snprintf(conf_path, sizeof(conf_path), "/proc/self/fd/%d", conf_fd);
	}
	if (ftruncate(conf_fd, 0) != 0 || pwrite(conf_fd, text, len, 0) != (ssize_t)len)
		return -1;
	return 0;
}

/* config_load as feederd's main() calls it, with only --config. */
static int load(struct config *cfg, char *err, size_t errlen)
{
	char *argv[] = { "feederd", "--config", conf_path, NULL };
	return config_load(3, argv, cfg, err, errlen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A file is read into a NUL-terminated buffer; do the same. */
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	struct config cfg;
	char err[512] = "";
	config_defaults(&cfg);
	int rc = config_parse_text(&cfg, "fuzz.conf", text, err, sizeof(err));
	if (rc != 0) {
		FUZZ_CHECK(rc == FEEDER_EINVAL, "code %d", rc);
		FUZZ_CHECK_ERR(err, sizeof(err));
		FUZZ_CHECK(strncmp(err, "config fuzz.conf:", 17) == 0, "message '%s'", err);
		FUZZ_CHECK(strchr(err, '\n') == NULL, "message of more than one line: '%s'", err);
		/* config_load would stop at the same line; a load costs a 1 MiB
		 * read buffer and a file, so only texts that parse go on. */
		free(text);
		return 0;
	}

	/* The whole load (defaults resolved, cross-key checks) from a file. */
	int file_ok = set_file(text, size) == 0;
	free(text);
	if (!file_ok)
		return 0;
	err[0] = '\0';
	rc = load(&cfg, err, sizeof(err));
	if (rc != 0) {
		FUZZ_CHECK(rc < 0, "config_load returned %d for a file", rc);
		FUZZ_CHECK_ERR(err, sizeof(err));
		FUZZ_CHECK(strchr(err, '\n') == NULL, "message of more than one line: '%s'", err);
		return 0;
	}
	char *first = print(&cfg);
	if (!first)
		return 0;
	struct config again;
	if (set_file(first, strlen(first)) != 0) {
		free(first);
		return 0;
	}
	rc = load(&again, err, sizeof(err));
	FUZZ_CHECK(rc == 0, "printed configuration does not load: %s\n%s", err, first);
	char *second = print(&again);
	if (second)
		FUZZ_CHECK(strcmp(first, second) == 0, "printing is not stable:\n%s---\n%s", first,
			   second);
	free(first);
	free(second);
	return 0;
}
