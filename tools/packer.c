/* packer.c — the dataset builder's command line: usage, --help, --version and
 * dispatch to the subcommands.
 *
 *   pack images  -> pack_images_main (pack_images.c)
 *   pack audio   -> pack_audio_main  (pack_audio.c, built when present)
 *   inspect, verify, cat -> packer_read.c
 *
 * Exit status: 0 success, 1 failure (or bad records found by verify),
 * 2 usage errors and bad input. */
#include "pack_common.h"
#include "packer_read.h"

#include "dsformat.h"

#include <malloc.h>
#include <stdio.h>
#include <string.h>

static const char usage_text[] =
	"usage: packer <command> [options] ...\n"
	"\n"
	"Build and check Feeder datasets (one LMDB environment per directory).\n"
	"\n"
	"commands:\n"
	"  pack images SRC DEST          pack an ImageFolder tree (one folder per class)\n"
	"  pack images --list FILE [SRC] DEST\n"
	"                                pack the files listed in FILE (path<TAB>label[<TAB>name])\n"
	"      --resize-shorter N        pre-resize so the shorter side is N pixels\n"
	"      --quality Q               JPEG quality of resized images (1-100, default 90)\n"
	"      --threads N               resize worker threads (default: online CPUs)\n"
	"      --strict                  a bad or unreadable file is fatal, not skipped\n"
	"      --force                   replace DEST if it exists\n"
	"      -v, --verbose             progress lines even when stderr is not a terminal\n"
	"  pack audio ...                pack audio features (see packer pack audio --help)\n"
	"  inspect DEST [--json]         header, counts, class histogram, size statistics\n"
	"  verify DEST [--decode]        check every CRC (and decode every JPEG)\n"
	"  cat DEST INDEX                write the payload of sample INDEX to stdout\n"
	"\n"
	"  -h, --help                    this text\n"
	"  --version                     the packer version\n";

static int usage_error(const char *fmt, const char *arg)
{
	fputs("packer: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs(" (try 'packer --help')\n", stderr);
	return PACK_EXIT_USAGE;
}

#ifndef FEEDER_HAVE_PACK_AUDIO
int pack_audio_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	pack_error("pack audio: this packer was built without audio support (tools/pack_audio.c)");
	return PACK_EXIT_USAGE;
}
#endif

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
	if (argc < 2)
		return usage_error("%s", "missing command");
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
		printf("packer %s (dataset format %d)\n", FEEDER_VERSION, DSFORMAT_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "pack")) {
		if (argc < 3)
			return usage_error("%s", "pack: missing kind (images or audio)");
		const char *kind = argv[2];
		if (!strcmp(kind, "images"))
			return pack_images_main(argc - 2, argv + 2);
		if (!strcmp(kind, "audio"))
			return pack_audio_main(argc - 2, argv + 2);
		if (!strcmp(kind, "-h") || !strcmp(kind, "--help")) {
			fputs(usage_text, stdout);
			return 0;
		}
		return usage_error("pack: unknown kind '%s' (images or audio)", kind);
	}
	if (!strcmp(cmd, "inspect"))
		return packer_inspect_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "verify"))
		return packer_verify_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "cat"))
		return packer_cat_main(argc - 1, argv + 1);
	if (cmd[0] == '-')
		return usage_error("unknown option '%s'", cmd);
	return usage_error("unknown command '%s'", cmd);
}
