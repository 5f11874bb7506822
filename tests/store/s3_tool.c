/* s3_tool.c — the S3 client (store/s3.h) as a command, for the store
 * tests: each command is one or a few calls of the API, its result on
 * stdout, its error as one line "s3_tool: <err>" on stderr (exit 1; 2 for
 * usage). After every command it prints "retries N" on stderr, so tests
 * see the client's retry count.
 *
 *   s3_tool config                            the loaded configuration (no secret)
 *   s3_tool url URL                           bucket and prefix of an s3:// URL
 *   s3_tool put BUCKET KEY FILE               s3_put_fd of the whole file
 *   s3_tool put-mem BUCKET KEY FILE           s3_put of the file read into memory
 *   s3_tool get BUCKET KEY OUT                s3_get into OUT
 *   s3_tool get-range BUCKET KEY OFF LEN OUT  s3_get_range_fd into OUT at 0
 *                                            ("crc32c X" on stderr: as taken)
 *   s3_tool head BUCKET KEY                   the size
 *   s3_tool delete BUCKET KEY
 *   s3_tool multipart BUCKET KEY FILE PARTSIZE   begin, every part, complete
 *   s3_tool multipart-abort BUCKET KEY FILE PARTSIZE   begin, first part, abort */
#include "s3.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int usage(void)
{
	fprintf(stderr, "usage: s3_tool config|url|put|put-mem|get|get-range|head|delete|"
			"multipart|multipart-abort ARGS...\n");
	return 2;
}

static int open_in(const char *path, uint64_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		perror(path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

static int multipart(struct s3_client *cl, char **a, int abort_it, char *err, size_t errlen)
{
	uint64_t size, part = strtoull(a[3], NULL, 10);
	int fd = open_in(a[2], &size);
	if (fd < 0)
		return -1;
	int n = part ? (int)((size + part - 1) / part) : 0;
	if (n < 1)
		n = 1;
	char id[1024], **etags = calloc((size_t)n, sizeof(char *));
	int rc = s3_multipart_begin(cl, a[0], a[1], id, sizeof(id), err, errlen);
	for (int i = 0; rc == 0 && i < n; i++) {
		uint64_t off = (uint64_t)i * part, len = size - off < part ? size - off : part;
		etags[i] = calloc(1, 256);
		rc = s3_multipart_put(cl, a[0], a[1], id, i + 1, fd, off, len, etags[i], 256, err,
				      errlen);
		if (abort_it)
			break;
	}
	if (rc == 0 && abort_it)
		rc = s3_multipart_abort(cl, a[0], a[1], id, err, errlen);
	else if (rc == 0)
		rc = s3_multipart_complete(cl, a[0], a[1], id, n, etags, err, errlen);
	if (rc == 0)
		printf("%d parts\n", abort_it ? 1 : n);
	for (int i = 0; i < n; i++)
		free(etags[i]);
	free(etags);
	close(fd);
	return rc;
}

static int command(struct s3_client *cl, const char *cmd, int n, char **a, char *err, size_t errlen)
{
	uint64_t size;
	int fd, rc;
	if (!strcmp(cmd, "put") && n == 3) {
		if ((fd = open_in(a[2], &size)) < 0)
			return -1;
		rc = s3_put_fd(cl, a[0], a[1], fd, 0, size, err, errlen);
		close(fd);
		return rc;
	}
	if (!strcmp(cmd, "put-mem") && n == 3) {
		if ((fd = open_in(a[2], &size)) < 0)
			return -1;
		char *b = malloc(size + 1);
		rc = b && read(fd, b, size) == (ssize_t)size ? 0 : -1;
		close(fd);
		if (rc == 0)
			rc = s3_put(cl, a[0], a[1], b, size, err, errlen);
		free(b);
		return rc;
	}
	if (!strcmp(cmd, "get") && n == 3) {
		void *d;
		size_t len;
		rc = s3_get(cl, a[0], a[1], (size_t)1 << 30, &d, &len, err, errlen);
		if (rc)
			return rc;
		FILE *f = fopen(a[2], "wb");
		rc = f && fwrite(d, 1, len, f) == len ? 0 : -1;
		if (f)
			fclose(f);
		free(d);
		return rc;
	}
	if (!strcmp(cmd, "get-range") && n == 5) {
		fd = open(a[4], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			perror(a[4]);
			return -1;
		}
		uint32_t crc;
		rc = s3_get_range_fd(cl, a[0], a[1], strtoull(a[2], NULL, 10),
				     strtoull(a[3], NULL, 10), fd, 0, &crc, err, errlen);
		close(fd);
		if (rc == 0)
			fprintf(stderr, "crc32c %08x\n", crc);
		return rc;
	}
	if (!strcmp(cmd, "head") && n == 2) {
		rc = s3_head(cl, a[0], a[1], &size, err, errlen);
		if (rc == 0)
			printf("%llu\n", (unsigned long long)size);
		return rc;
	}
	if (!strcmp(cmd, "delete") && n == 2)
		return s3_delete(cl, a[0], a[1], err, errlen);
	if (!strcmp(cmd, "multipart") && n == 4)
		return multipart(cl, a, 0, err, errlen);
	if (!strcmp(cmd, "multipart-abort") && n == 4)
		return multipart(cl, a, 1, err, errlen);
	return 1;
}

int main(int argc, char **argv)
{
	char err[512];
	if (argc < 2)
		return usage();
	const char *cmd = argv[1];
	if (!strcmp(cmd, "url") && argc == 3) {
		char bucket[S3_MAX_BUCKET], prefix[S3_MAX_KEY];
		if (s3_url_parse(argv[2], bucket, prefix, err, sizeof(err))) {
			fprintf(stderr, "s3_tool: %s\n", err);
			return 1;
		}
		printf("bucket=%s prefix=%s\n", bucket, prefix);
		return 0;
	}
	struct s3_config c;
	if (s3_config_load(&c, err, sizeof(err))) {
		fprintf(stderr, "s3_tool: %s\n", err);
		return 1;
	}
	if (!strcmp(cmd, "config")) {
		printf("endpoint=%s region=%s path_style=%d access_key=%s session_token=%s "
		       "tries=%d\n",
		       c.endpoint, c.region, c.path_style, c.access_key,
		       c.session_token[0] ? "yes" : "no", c.tries);
		return 0;
	}
	struct s3_client *cl;
	if (s3_client_new(&c, &cl, err, sizeof(err))) {
		fprintf(stderr, "s3_tool: %s\n", err);
		return 1;
	}
	err[0] = '\0';
	int rc = command(cl, cmd, argc - 2, argv + 2, err, sizeof(err));
	fprintf(stderr, "retries %llu\n", (unsigned long long)s3_client_retries(cl));
	s3_client_free(cl);
	if (rc == 1)
		return usage();
	if (rc) {
		if (err[0])
			fprintf(stderr, "s3_tool: %s\n", err);
		return 1;
	}
	return 0;
}
