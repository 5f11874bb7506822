/* lmdb_check.h — check an LMDB file's page structure before LMDB walks it.
 *
 * LMDB trusts its own pages: a page number past the file, a node table
 * pointing outside its page, an overflow count running past the end or a
 * cycle between branch pages sends a reader through memory that is not the
 * file (SIGSEGV, SIGBUS) or round forever. Datasets come from disks and
 * machines feederd does not control, so dsstore_open runs this check first:
 * it reads the file with pread (nothing is mapped yet), picks the meta page
 * LMDB will pick, and walks every branch and leaf page of the main database
 * and of each named database in it, bounds-checking every field a reader
 * uses. Where a single record's value lies is left to dsstore, which checks
 * each value it hands out, so that one bad record costs only itself. The
 * cost is one read of the tree pages (not of the overflow pages that hold
 * large records): a few MB for a dataset of a million images.
 *
 * Written against the on-disk format of LMDB 0.9 (Debian's liblmdb), which
 * has not changed since 0.9.0; a file in another format fails the check. */
#ifndef FEEDER_LMDB_CHECK_H
#define FEEDER_LMDB_CHECK_H

#include <stddef.h>

/* Check the LMDB file `path` (a data.mdb). 0 if every page a read-only
 * reader can reach is well formed; FEEDER_ECORRUPT with a sentence naming
 * the page and the fault in err otherwise; -errno if the file cannot be
 * read. A file with databases of flags other than 0 (dupsort, integer keys)
 * is refused: Feeder's datasets have none. */
int lmdb_check_file(const char *path, char *err, size_t errlen);

#endif
