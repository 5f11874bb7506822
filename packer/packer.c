/* packer.c — the dataset builder's command line: usage, --help, --version and
 * dispatch to the subcommands (see packer.h for the map).
 *
 * Exit status: 0 success, 1 failure (or bad records found by verify),
 * 2 usage errors and bad input. */
#include "packer.h"

#include "pack_msg.h"
#include "packer_read.h"

#include "dsformat.h"

#include <getopt.h>
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
	"      --restart auto|none|MCUS  tile each JPEG by restart intervals, losslessly, so feederd\n"
	"                                decodes only a crop's intervals (default auto: ~256 coded\n"
	"                                bytes an interval; MCUS: that many MCUs; none: as is)\n"
	"      --resize-shorter N        pre-resize so the shorter side is N pixels\n"
	"      --quality Q               JPEG quality of resized images (1-100, default 90)\n"
	"      --threads N               transcode/resize worker threads (default: online CPUs)\n"
	"      --follow-links            follow symbolic links to folders (each folder once)\n"
	"      --max-file-size SIZE      skip larger files unread (default 64M; K, M, G)\n"
	"      --confine                 every file must resolve inside SRC (symbolic links and ..\n"
	"                                included; absolute list paths are refused): else fatal\n"
	"      --strict                  a bad or unreadable file is fatal, not skipped\n"
	"      --force                   replace DEST if it exists\n"
	"      -v, --verbose             progress lines even when stderr is not a terminal\n"
	"  pack audio ...                pack audio features (see packer pack audio --help)\n"
	"  inspect DEST [--json]         header, counts, class histogram, size statistics\n"
	"  verify DEST [--decode]        check every CRC (and decode every JPEG)\n"
	"  cat DEST INDEX                write the payload of sample INDEX to stdout (a JPEG that\n"
	"                                decodes to the source's pixels; its bytes with --restart none)\n"
	"\n"
	"  -h, --help                    this text\n"
	"  --version                     the packer version\n";

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

	/* Global options come before the command ('+': stop at the first
	 * operand, which is the command; its options are its own). */
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case 'V':
			printf("packer %s (dataset format %d)\n", FEEDER_VERSION, DSFORMAT_VERSION);
			return 0;
		default:
			if (optopt && strncmp(argv[optind - 1], "--", 2) != 0)
				return pack_usage_error(NULL, "unknown option '-%c'", optopt);
			return pack_usage_error(NULL, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return pack_usage_error(NULL, "missing command");
	char **sub = argv + optind;
	int nsub = argc - optind;
	const char *cmd = sub[0];
	if (!strcmp(cmd, "help")) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (!strcmp(cmd, "pack")) {
		if (nsub < 2)
			return pack_usage_error(NULL, "pack: missing kind (images or audio)");
		const char *kind = sub[1];
		if (!strcmp(kind, "images"))
			return pack_images_main(nsub - 1, sub + 1);
		if (!strcmp(kind, "audio"))
			return pack_audio_main(nsub - 1, sub + 1);
		if (!strcmp(kind, "-h") || !strcmp(kind, "--help")) {
			fputs(usage_text, stdout);
			return 0;
		}
		return pack_usage_error(NULL, "pack: unknown kind '%s' (images or audio)", kind);
	}
	if (!strcmp(cmd, "inspect"))
		return packer_inspect_main(nsub, sub);
	if (!strcmp(cmd, "verify"))
		return packer_verify_main(nsub, sub);
	if (!strcmp(cmd, "cat"))
		return packer_cat_main(nsub, sub);
	return pack_usage_error(NULL, "unknown command '%s'", cmd);
}
