/* test_pack_reader — the io_uring batch reader hands back every file whole
 * and in index order, whatever its size (0 bytes, one page, several MB),
 * while the caller holds several files at once; per-file failures (missing,
 * directory, FIFO, over the size limit) come back as that file's error and
 * do not disturb the others; a caller holding every slot gets -EDEADLK
 * instead of a hang; with a sniff, refused files come back as -EILSEQ with
 * the sniff's words, and accepted ones, also those longer than the sniffed
 * head, whole and intact. In direct mode (the packer's path for files
 * stored as they are) a file comes back with only its head read and
 * pack_reader_read_into delivers it whole into the caller's memory, or
 * -ENODATA when it shrank after being listed. */
#include "check.h"
#include "pack_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { N = 150, HOLD = 9 };

/* The error of file i: 20 and 99 are missing, 40 is a folder, 41 a FIFO. */
static int error_of(size_t i)
{
	return i == 20 || i == 99 ? -ENOENT : i == 40 ? -EISDIR : i == 41 ? -EINVAL : 0;
}

/* File 42 exceeds the 4000-byte limit of the second pass. */
static size_t size_of(size_t i)
{
	static const size_t special[] = { 0, 1, 4095, 4096, 4097, 3 << 20, 65536 };
	return i < 7 ? special[i] : i == 42 ? 5000 : (i * 7919) % 150000;
}

static uint8_t byte_at(size_t i, size_t k)
{
	return (uint8_t)(i * 31 + k * 7 + (k >> 9));
}

/* data holds file i whole. */
static void check_file(size_t i, const uint8_t *data, size_t len)
{
	CHECKF(len == size_of(i), "file %zu: %zu bytes, expected %zu", i, len, size_of(i));
	for (size_t k = 0; k < len; k++)
		CHECKF(data[k] == byte_at(i, k), "file %zu byte %zu", i, k);
}

/* Accepts files whose first byte is even: byte_at(i, 0) = 31 i, so file i
 * passes when i is even (and is not empty). */
static int sniffs;
static int even_head(const uint8_t *head, size_t len)
{
	sniffs++;
	return len > 0 && (head[0] & 1) == 0;
}

int main(void)
{
	char dir[] = "/tmp/feeder-test-reader-XXXXXX", err[256];
	CHECK(mkdtemp(dir));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(dfd >= 0);
	static char names[N][32];
	const char *paths[N];
	uint8_t *buf = malloc(3 << 20);
	CHECK(buf);
	for (size_t i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "f%03zu", i);
		paths[i] = names[i];
		if (error_of(i) == -ENOENT)
			continue;
		if (error_of(i)) {
			CHECK((i == 40 ? mkdirat(dfd, names[i], 0755)
				       : mkfifoat(dfd, names[i], 0644)) == 0);
			continue;
		}
		size_t n = size_of(i);
		for (size_t k = 0; k < n; k++)
			buf[k] = byte_at(i, k);
		int fd = openat(dfd, names[i], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		CHECK(fd >= 0);
		CHECK(write(fd, buf, n) == (ssize_t)n);
		close(fd);
	}

	struct pack_reader *r;
	struct pack_reader_opts o = { .depth = 32, .max_file = 4 << 20 };
	CHECKF(pack_reader_open(dfd, paths, N, &o, &r, err, sizeof(err)) == 0, "%s", err);
	CHECK(pack_reader_depth(r) >= 32);
	struct pack_read held[HOLD];
	size_t nheld = 0, next = 0;
	for (;;) {
		struct pack_read f;
		int rc = pack_reader_next(r, &f, err, sizeof(err));
		CHECKF(rc >= 0, "%s", err);
		if (rc == 0)
			break;
		CHECKF(f.index == next, "got %zu, expected %zu", f.index, next);
		CHECK(f.path == paths[next]);
		next++;
		CHECKF(f.error == error_of(f.index), "file %zu error %d", f.index, f.error);
		if (f.index == 41)
			CHECK(!strcmp(pack_reader_strerror(r, f.error), "not a regular file"));
		if (!f.error)
			check_file(f.index, f.data, f.len);
		/* Hold up to HOLD files, releasing the oldest first. */
		if (nheld == HOLD) {
			pack_reader_release(r, &held[0]);
			memmove(held, held + 1, sizeof(held[0]) * (HOLD - 1));
			nheld--;
		}
		held[nheld++] = f;
		/* Held data must stay intact while later reads land. */
		if (held[0].data && held[0].len)
			CHECK(held[0].data[0] == byte_at(held[0].index, 0));
	}
	CHECK(next == N);
	for (size_t i = 0; i < nheld; i++)
		pack_reader_release(r, &held[i]);
	pack_reader_close(r);

	/* Size limit and holding every slot. */
	o.max_file = 4000;
	CHECK(pack_reader_open(dfd, paths, N, &o, &r, err, sizeof(err)) == 0);
	unsigned depth = pack_reader_depth(r);
	struct pack_read all[4096];
	CHECK(depth <= 4096);
	for (unsigned i = 0; i < depth; i++) {
		CHECK(pack_reader_next(r, &all[i], err, sizeof(err)) == 1);
		if (!error_of(i) && size_of(i) > 4000) {
			CHECKF(all[i].error == -EFBIG, "file %u error %d", i, all[i].error);
			CHECKF(!strcmp(pack_reader_strerror(r, all[i].error),
				       "larger than the 4000 bytes limit (--max-file-size)"),
			       "%s", pack_reader_strerror(r, all[i].error));
		}
	}
	struct pack_read f;
	CHECK(pack_reader_next(r, &f, err, sizeof(err)) == -EDEADLK);
	pack_reader_release(r, &all[0]);
	CHECK(pack_reader_next(r, &f, err, sizeof(err)) == 1 && f.index == depth);
	pack_reader_close(r); /* with slots still held: must not leak or crash */

	/* A sniff; then in direct mode (with the sniff) the head only, and the
	 * whole file into memory of our own: file 44 is cut short after its
	 * head is read, as a file rewritten during a pack would be. */
	struct pack_reader_opts so = { .sniff = even_head, .sniff_fail = "odd" };
	for (so.direct = 0; so.direct < 2; so.direct++) {
		sniffs = 0;
		CHECK(pack_reader_open(dfd, paths, N, &so, &r, err, sizeof(err)) == 0);
		size_t head = so.direct ? PACK_READER_DIRECT_HEAD : PACK_READER_HEAD, longer = 0;
		for (size_t i = 0; i < N; i++) {
			CHECK(pack_reader_next(r, &f, err, sizeof(err)) == 1 && f.index == i);
			size_t n = size_of(i);
			if (error_of(i)) {
				CHECKF(f.error != 0 && f.error != -EILSEQ, "file %zu error %d", i,
				       f.error);
			} else if (i % 2 || i == 0) {
				CHECKF(f.error == -EILSEQ && !f.data, "file %zu error %d", i,
				       f.error);
				CHECK(!strcmp(pack_reader_strerror(r, f.error), "odd"));
			} else if (!so.direct) {
				CHECKF(f.error == 0, "file %zu: error %d", i, f.error);
				check_file(i, f.data, f.len);
				longer += n > head;
			} else {
				CHECKF(f.error == 0 && f.len == n, "file %zu: error %d, %zu bytes",
				       i, f.error, f.len);
				CHECKF(f.got == (n < head ? n : head),
				       "file %zu: %zu bytes read ahead of %zu", i, f.got, n);
				if (i == 44) {
					CHECK(n > head + 10);
					char path[64];
					snprintf(path, sizeof(path), "%s/f%03zu", dir, i);
					CHECK(truncate(path, (off_t)n - 10) == 0);
					CHECK(pack_reader_read_into(r, &f, buf) == -ENODATA);
					CHECK(strstr(pack_reader_strerror(r, -ENODATA),
						     "changed while being packed"));
				} else {
					memset(buf, 0xEE, n);
					CHECKF(pack_reader_read_into(r, &f, buf) == 0, "file %zu",
					       i);
					check_file(i, buf, n);
					longer += n > head;
				}
			}
			if (f.error && so.direct)
				CHECK(pack_reader_read_into(r, &f, buf) == -EINVAL);
			pack_reader_release(r, &f);
		}
		CHECK(pack_reader_next(r, &f, err, sizeof(err)) == 0);
		CHECKF(longer >= (so.direct ? 30u : 5u), "only %zu files were read past their head",
		       longer);
		CHECKF(sniffs == N - 4, "%d sniffs for %d files", sniffs, N - 4);
		pack_reader_close(r);
	}

	for (size_t i = 0; i < N; i++)
		unlinkat(dfd, names[i], i == 40 ? AT_REMOVEDIR : 0);
	close(dfd);
	rmdir(dir);
	free(buf);
	return 0;
}
