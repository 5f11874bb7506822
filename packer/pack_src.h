/* pack_src.h — what a pack reads: the source files, their labels and the
 * label table.
 *
 * `pack images` and `pack audio` take their sources from one of:
 *
 *   a class-folder tree (pack_src_scan_tree): SRC/<class>/.../<file>, the
 *     layout of torchvision's ImageFolder and of VoxCeleb (speaker/video/
 *     utterance.wav). The classes are SRC's sub-folders sorted by name
 *     (strcmp), ids 0..K-1 in that order, their names the label table; the
 *     files anywhere below a class folder, walked depth first in sorted order
 *     at each level, are its samples, so packing is deterministic. Names
 *     starting with '.' are ignored.
 *   a list file (pack_src_read_list): one sample per line,
 *     "path<TAB>label[<TAB>name]", in list order.
 *
 * Symbolic links in a tree: a link to a file is that file (it is read, or
 * reported by the reader if dangling). A link to a folder is not followed
 * unless the rules say so (packer's --follow-links), with a warning naming
 * it; when links are followed, every folder is recognised by (device,
 * inode) and walked at most once, so a loop (b/loop -> .), two links to one
 * folder, or a link into another class's folder never packs a file twice:
 * the folder met again is reported and passed over.
 *
 * Functions return 0 or a negative errno / FEEDER_EINVAL with err filled;
 * warnings about what is passed over go through pack_msg. On error the
 * pack_src may hold a partial result: pack_src_free it either way. */
#ifndef FEEDER_PACK_SRC_H
#define FEEDER_PACK_SRC_H

#include <stddef.h>
#include <stdint.h>

struct pack_src {
	char **paths;         /* sample i's path, relative to SRC */
	uint32_t *labels;     /* sample i's class id */
	unsigned long *lines; /* list: sample i's line in the list file; tree: 0 */
	size_t n, cap;
	char **classes; /* label table: class id -> name */
	uint32_t nclasses;
};

/* Largest number of classes a list may declare (labels 0 .. 2^24 - 1). */
#define PACK_SRC_MAX_CLASSES (1u << 24)

/* How a kind reads a tree. */
struct pack_tree_rules {
	const char *class_noun;  /* "class", "speaker": for messages */
	const char *sample_noun; /* "files", ".wav files": for messages */
	/* Which file names are samples (audio: *.wav); NULL: every file. Files
	 * that are not samples are passed over silently, inside class folders
	 * and beside them. */
	int (*is_sample)(const char *name);
	/* 1: a class folder without samples is still a class (images: the ids
	 * follow the folder names, as in ImageFolder); 0: it is reported and
	 * is no class (audio: a speaker is a folder of utterances). */
	int keep_empty;
	int follow_links; /* follow symbolic links to folders */
};

/* Read the tree at directory fd srcfd (named src in messages) into *s, which
 * must be zeroed. Samples directly in SRC belong to no class: each is
 * reported and ignored. Fails with FEEDER_EINVAL when SRC has no class
 * folder ("no <class> folders") or one whose name is not UTF-8 (the label
 * table is, pack_utf8.h), -ELOOP for folders nested deeper than 64,
 * or the errno of a folder that cannot be listed. A tree whose classes hold
 * no sample is not an error here (s->n is 0). */
int pack_src_scan_tree(int srcfd, const char *src, const struct pack_tree_rules *r,
		       struct pack_src *s, char *err, size_t errlen);

/* Read list file `file` into *s (zeroed): lines "path<TAB>label[<TAB>name]",
 * paths relative to SRC, labels integers below PACK_SRC_MAX_CLASSES; classes
 * = max label + 1, a class's name is the optional third column (the same on
 * every line that gives one) or else its decimal id. Blank lines and lines
 * starting with '#' are skipped; CRLF is accepted. FEEDER_EINVAL names the
 * line of a malformed entry (a class name that is not UTF-8 among them), or
 * an empty list. s->lines[i] is sample i's line. */
int pack_src_read_list(const char *file, struct pack_src *s, char *err, size_t errlen);

/* Free everything s holds and zero it. */
void pack_src_free(struct pack_src *s);

#endif
