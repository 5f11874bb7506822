/* packer.c — the dataset builder's command line: usage, --help, --version and
 * dispatch to the subcommands (see packer.h for the map).
 *
 * Exit status: 0 success, 1 failure (or bad records found by verify),
 * 2 usage errors and bad input. */
#include "packer.h"

#include "pack_args.h"
#include "pack_msg.h"
#include "packer_push.h"
#include "packer_read.h"

#include "dsformat.h"

#include <malloc.h>
#include <stdio.h>
#include <string.h>

static const char usage_head[] =
	"usage: packer <command> [options] ...\n"
	"\n"
	"Build and check Feeder datasets (a folder holding one LMDB data.mdb, or shard\n"
	"files and their manifest: --shard-size).\n"
	"\n"
	"commands:\n"
	"  pack images SRC DEST          pack an ImageFolder tree (one folder per class)\n"
	"  pack images --list FILE [SRC] DEST\n"
	"                                pack the files listed in FILE (path<TAB>label[<TAB>name])\n";

static const char usage_tail[] =
	"  pack audio ...                pack audio features (see packer pack audio --help)\n"
	"  inspect DEST [--json]         header, counts, class histogram, size statistics\n"
	"  verify DEST [--decode]        check every CRC (and decode every JPEG)\n"
	"  cat DEST INDEX                write the payload of sample INDEX to stdout (a JPEG that\n"
	"                                decodes to the source's pixels; its bytes with --restart none)\n"
	"  reshard SRC DEST (--shard-size SIZE | --single) [--order shuffled|walk] [--order-seed N]\n"
	"                                copy a dataset into shard files of SIZE (its records\n"
	"                                shuffled by default), or one data.mdb\n"
	"  push DEST s3://BUCKET/PREFIX [--jobs N] [--part-size SIZE]\n"
	"                                upload the shards to object storage, the manifest last\n"
	"\n";

struct packer_args {
	int help, version;
};

#define PACKER_TABLE_ROWS 3

static void packer_table(struct packer_args *a, struct argtab tab[PACKER_TABLE_ROWS])
{
	const struct argtab t[PACKER_TABLE_ROWS] = {
		ARGTAB_FLAG("help", 'h', &a->help, "this text"),
		ARGTAB_FLAG("version", 0, &a->version, "the packer version"),
		ARGTAB_END,
	};
	memcpy(tab, t, sizeof t);
}

/* The whole --help: the commands, pack images' options from its table,
 * packer's own from this file's. */
static int usage(void)
{
	struct packer_args a;
	struct argtab tab[PACKER_TABLE_ROWS];
	packer_table(&a, tab);
	fputs(usage_head, stdout);
	pack_images_help(stdout);
	fputs(usage_tail, stdout);
	argtab_help(stdout, tab);
	return 0;
}

/* pack images | pack audio. */
static int pack_main(int nsub, char **sub)
{
	if (nsub < 2)
		return pack_usage_error(NULL, "pack: missing kind (images or audio)");
	const char *kind = sub[1];
	if (!strcmp(kind, "images"))
		return pack_images_main(nsub - 1, sub + 1);
	if (!strcmp(kind, "audio"))
		return pack_audio_main(nsub - 1, sub + 1);
	if (!strcmp(kind, "-h") || !strcmp(kind, "--help"))
		return usage();
	return pack_usage_error(NULL, "pack: unknown kind '%s' (images or audio)", kind);
}

int main(int argc, char **argv)
{
	/* LMDB allocates a buffer per large value during a write transaction
	 * and frees them all at commit. With glibc's defaults the heap is
	 * trimmed after every commit and regrown, so each page is faulted and
	 * zeroed again: packing 20,000 images into tmpfs took 4.5-5.3 s of
	 * mostly kernel time, 2.0-2.3 s with the heap kept. */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	mallopt(M_TOP_PAD, 64 << 20);

	/* Global options come before the command, the first word that is not
	 * one; what follows is the command's. */
	int cmd = 1;
	while (cmd < argc && argv[cmd][0] == '-')
		cmd++;
	struct packer_args a = { 0 };
	struct argtab tab[PACKER_TABLE_ROWS];
	char err[256], *none[1];
	int n;
	packer_table(&a, tab);
	if (argtab_parse(tab, cmd, argv, none, 0, &n, err, sizeof err))
		return pack_usage_error(NULL, "%s", err);
	if (a.help)
		return usage();
	if (a.version) {
		printf("packer %s (dataset format %d)\n", FEEDER_VERSION, DSFORMAT_VERSION);
		return 0;
	}
	if (cmd >= argc)
		return pack_usage_error(NULL, "missing command");
	char **sub = argv + cmd;
	int nsub = argc - cmd;
	if (!strcmp(sub[0], "help"))
		return usage();
	if (!strcmp(sub[0], "pack"))
		return pack_main(nsub, sub);
	if (!strcmp(sub[0], "inspect"))
		return packer_inspect_main(nsub, sub);
	if (!strcmp(sub[0], "verify"))
		return packer_verify_main(nsub, sub);
	if (!strcmp(sub[0], "cat"))
		return packer_cat_main(nsub, sub);
	if (!strcmp(sub[0], "reshard"))
		return packer_reshard_main(nsub, sub);
	if (!strcmp(sub[0], "push"))
		return packer_push_main(nsub, sub);
	return pack_usage_error(NULL, "unknown command '%s'", sub[0]);
}
