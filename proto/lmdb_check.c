/* lmdb_check.c — bounds-check an LMDB file's tree before LMDB reads it
 * (see lmdb_check.h).
 *
 * The layouts below are LMDB 0.9's (mdb.c: MDB_page, MDB_node, MDB_db,
 * MDB_meta), in the machine's byte order as LMDB writes them. Only what a
 * read-only reader follows is checked: the meta page it picks, then from the
 * main database's root every branch page (child page numbers, node table),
 * every leaf page (node table, keys and node headers inside the page) and
 * each named database's own tree. The free-page database is a writer's
 * business and is not walked; overflow pages are not read (LMDB does not
 * read their headers when it hands out a value; dsstore checks every value
 * it hands out lies in the file). */
#include "lmdb_check.h"

#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGEHDRSZ 16u
#define NODESIZE 8u
#define P_BRANCH 0x01u
#define P_LEAF 0x02u
#define P_META 0x08u
#define F_BIGDATA 0x01u
#define F_SUBDATA 0x02u
#define MDB_MAGIC 0xBEEFC0DEu
#define MDB_DATA_VERSION 1u
#define P_INVALID UINT64_MAX
#define DB_SIZE 48u    /* sizeof(MDB_db) */
#define META_SIZE 136u /* sizeof(MDB_meta) on a 64-bit machine */
#define MAX_DEPTH 32u  /* LMDB's cursor stack (CURSOR_STACK) */
#define MAX_KEY 511u   /* MDB_MAXKEYSIZE */

struct db {
	uint16_t flags, depth;
	uint64_t root;
};

struct check {
	int fd;
	const char *path;
	uint32_t psize;
	uint64_t last_pg; /* the highest page a reader may touch */
	uint64_t file_size;
	uint8_t *seen; /* one bit per page: a tree page reached twice is a cycle */
	char *err;
	size_t errlen;
};

static uint16_t ld16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}
static uint32_t ld32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}
static uint64_t ld64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static void db_load(const uint8_t *p, struct db *d)
{
	d->flags = ld16(p + 4);
	d->depth = ld16(p + 6);
	d->root = ld64(p + 40);
}

static int bad(struct check *c, uint64_t pg, const char *what)
{
	return status_fail(c->err, c->errlen, FEEDER_ECORRUPT, "%s: LMDB page %llu: %s", c->path,
			   (unsigned long long)pg, what);
}

static int read_at(struct check *c, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(c->fd, (char *)buf + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return status_fail(c->err, c->errlen, -errno, "%s: %s", c->path,
					   strerror(errno));
		if (n == 0)
			return status_fail(c->err, c->errlen, FEEDER_ECORRUPT,
					   "%s: ends at byte %llu, inside a page", c->path,
					   (unsigned long long)(off + got));
		got += (size_t)n;
	}
	return 0;
}

static int check_db_fields(struct check *c, uint64_t pg, const struct db *d)
{
	if (d->flags != 0)
		return bad(c, pg,
			   "a database has flags Feeder never writes (dupsort or integer keys)");
	if (d->root == P_INVALID)
		return d->depth == 0 ? 0 : bad(c, pg, "an empty database claims a depth");
	if (d->root < 2 || d->root > c->last_pg)
		return bad(c, pg, "a database root lies outside the file");
	if (d->depth == 0 || d->depth > MAX_DEPTH)
		return bad(c, pg, "a database's depth is out of range");
	return 0;
}

static int walk(struct check *c, uint64_t pg, unsigned level, unsigned depth, int is_main);

/* The nodes of leaf page pg (already read into p): keys and inline values
 * inside the page, overflow values inside the file, named databases (only
 * in the main database) walked in turn. */
static int check_leaf(struct check *c, uint64_t pg, const uint8_t *p, unsigned n, int is_main)
{
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *node = p + ld16(p + PAGEHDRSZ + 2 * i);
		uint32_t dsize = ld16(node) | (uint32_t)ld16(node + 2) << 16;
		unsigned flags = ld16(node + 4), ksize = ld16(node + 6);
		size_t room = c->psize - (size_t)(node - p) - NODESIZE;
		if (ksize > MAX_KEY || ksize > room)
			return bad(c, pg, "a key runs past its page");
		room -= ksize;
		if (flags & ~(F_BIGDATA | F_SUBDATA) || (flags & F_BIGDATA && flags & F_SUBDATA))
			return bad(c, pg, "a leaf node has unknown flags");
		/* Where a value lies is one record's fault, not the file's: LMDB
		 * answers an overflow page past the end with MDB_PAGE_NOTFOUND and
		 * dsstore refuses a value outside the file, so that record alone
		 * is replaced. Only the reference itself must fit its page. */
		if (flags & F_BIGDATA) {
			if (room < 8)
				return bad(c, pg, "an overflow reference runs past its page");
			continue;
		}
		if (flags & F_SUBDATA) {
			if (!is_main || dsize != DB_SIZE || dsize > room)
				return bad(c, pg, "a named database record is malformed");
			struct db d;
			db_load(node + NODESIZE + ksize, &d);
			int rc = check_db_fields(c, pg, &d);
			if (rc == 0 && d.root != P_INVALID)
				rc = walk(c, d.root, 1, d.depth, 0);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* Page pg at `level` (the root is 1) of a tree `depth` levels deep. */
static int walk(struct check *c, uint64_t pg, unsigned level, unsigned depth, int is_main)
{
	if (pg < 2 || pg > c->last_pg)
		return bad(c, pg, "a page number lies outside the file");
	if (c->seen[pg / 8] & (1u << (pg % 8)))
		return bad(c, pg, "page reached twice (a cycle or shared subtree)");
	c->seen[pg / 8] |= (uint8_t)(1u << (pg % 8));
	uint8_t *p = malloc(c->psize);
	if (!p)
		return status_fail(c->err, c->errlen, -ENOMEM, "out of memory");
	int rc = read_at(c, p, c->psize, pg * c->psize);
	if (rc)
		goto out;
	unsigned flags = ld16(p + 10), lower = ld16(p + 12), upper = ld16(p + 14);
	if (ld64(p) != pg) {
		rc = bad(c, pg, "its header names another page");
		goto out;
	}
	int leaf = level == depth;
	if (flags != (leaf ? P_LEAF : P_BRANCH)) {
		rc = bad(c, pg, leaf ? "expected a leaf page" : "expected a branch page");
		goto out;
	}
	if (lower < PAGEHDRSZ || (lower - PAGEHDRSZ) % 2 || upper < lower || upper > c->psize) {
		rc = bad(c, pg, "its node table bounds are inconsistent");
		goto out;
	}
	unsigned n = (lower - PAGEHDRSZ) / 2;
	if (!leaf && n == 0) {
		rc = bad(c, pg, "a branch page has no children");
		goto out;
	}
	for (unsigned i = 0; i < n; i++) {
		unsigned off = ld16(p + PAGEHDRSZ + 2 * i);
		if (off < upper || off > c->psize - NODESIZE) {
			rc = bad(c, pg, "a node lies outside its page's node area");
			goto out;
		}
	}
	if (leaf) {
		rc = check_leaf(c, pg, p, n, is_main);
		goto out;
	}
	for (unsigned i = 0; i < n && rc == 0; i++) {
		const uint8_t *node = p + ld16(p + PAGEHDRSZ + 2 * i);
		unsigned ksize = ld16(node + 6);
		if (ksize > MAX_KEY || ksize > c->psize - (size_t)(node - p) - NODESIZE) {
			rc = bad(c, pg, "a key runs past its page");
			break;
		}
		uint64_t child = ld16(node) | (uint64_t)ld16(node + 2) << 16 |
				 (uint64_t)ld16(node + 4) << 32;
		rc = walk(c, child, level + 1, depth, is_main);
	}
out:
	free(p);
	return rc;
}

/* Meta page i (at offset off): 0 and its fields, or FEEDER_ECORRUPT. */
static int read_meta(struct check *c, unsigned i, uint64_t off, uint32_t *psize, uint64_t *txnid,
		     uint64_t *last_pg, struct db *main)
{
	uint8_t m[PAGEHDRSZ + META_SIZE];
	int rc = read_at(c, m, sizeof(m), off);
	if (rc)
		return rc;
	const uint8_t *meta = m + PAGEHDRSZ;
	if (!(ld16(m + 10) & P_META) || ld32(meta) != MDB_MAGIC)
		return status_fail(c->err, c->errlen, FEEDER_ECORRUPT,
				   "%s: meta page %u is not an LMDB meta page", c->path, i);
	if (ld32(meta + 4) != MDB_DATA_VERSION)
		return status_fail(
			c->err, c->errlen, FEEDER_ECORRUPT,
			"%s: meta page %u has LMDB data version %u (this reader knows %u)", c->path,
			i, ld32(meta + 4), MDB_DATA_VERSION);
	*psize = ld32(meta + 24);
	db_load(meta + 24 + DB_SIZE, main);
	*last_pg = ld64(meta + 120);
	*txnid = ld64(meta + 128);
	return 0;
}

int lmdb_check_file(const char *path, char *err, size_t errlen)
{
	struct check c = { .path = path, .err = err, .errlen = errlen };
	c.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (c.fd < 0)
		return status_fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
	struct stat st;
	int rc = 0;
	if (fstat(c.fd, &st) != 0) {
		rc = status_fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	c.file_size = (uint64_t)st.st_size;
	uint32_t ps[2];
	uint64_t txn[2], last[2];
	struct db main[2];
	if ((rc = read_meta(&c, 0, 0, &ps[0], &txn[0], &last[0], &main[0])))
		goto out;
	if (ps[0] < 512 || ps[0] > 32768 || (ps[0] & (ps[0] - 1))) {
		rc = status_fail(err, errlen, FEEDER_ECORRUPT, "%s: LMDB page size %u is invalid",
				 path, ps[0]);
		goto out;
	}
	if ((rc = read_meta(&c, 1, ps[0], &ps[1], &txn[1], &last[1], &main[1])))
		goto out;
	if (ps[1] != ps[0]) {
		rc = status_fail(err, errlen, FEEDER_ECORRUPT,
				 "%s: the two meta pages disagree on the page size", path);
		goto out;
	}
	/* LMDB reads through the meta page of the newer transaction, the first
	 * one on a tie (mdb_env_pick_meta). */
	unsigned m = txn[0] < txn[1];
	c.psize = ps[0];
	c.last_pg = last[m];
	if (c.last_pg < 1 || c.last_pg >= c.file_size / c.psize) {
		rc = status_fail(err, errlen, FEEDER_ECORRUPT,
				 "%s: data.mdb is truncated: %llu bytes, its pages need %llu", path,
				 (unsigned long long)c.file_size,
				 (unsigned long long)((c.last_pg + 1) * c.psize));
		goto out;
	}
	if ((rc = check_db_fields(&c, m, &main[m])) || main[m].root == P_INVALID)
		goto out;
	c.seen = calloc(c.last_pg / 8 + 1, 1);
	if (!c.seen) {
		rc = status_fail(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	rc = walk(&c, main[m].root, 1, main[m].depth, 1);
out:
	free(c.seen);
	close(c.fd);
	return rc;
}
