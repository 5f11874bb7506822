/* packer.h — packer's subcommands and the conventions they share.
 *
 * packer.c parses the global options and dispatches:
 *
 *   pack images           pack_images_main (pack_images.c)
 *   pack audio            pack_audio_main (pack_audio.c; pack_audio_none.c
 *                         when the build has no FFTW)
 *   inspect, verify, cat  packer_read.h (either layout, through layout.h)
 *   reshard               packer_reshard_main (pack_reshard.c)
 *
 * Every pack builds a dataset the same way, from modules with one job each:
 * the sources and their labels (pack_src.h), the order they are written in
 * (pack_order.h: shuffled when sharded), a temporary destination renamed
 * into place at the end (pack_dest.h), files read by io_uring in index
 * order (pack_reader.h), the dataset writer (pack_writer.h: one data.mdb, or
 * shard files and a manifest, over proto/dsstore.h), one-line
 * messages (pack_msg.h), a progress line (pack_progress.h) and the command
 * line's helpers (pack_args.h).
 *
 * Conventions: a subcommand exits 0 on success, 1 on a runtime failure, 2
 * (PACK_EXIT_USAGE) on bad usage or bad input (empty source, existing DEST
 * without --force, a bad list line); its messages go to stderr as one line
 * starting "packer: ". The modules below the subcommands return 0 or a
 * negative errno / FEEDER_E* code and fill err; none of them exits. */
#ifndef FEEDER_PACKER_H
#define FEEDER_PACKER_H

#include <stdio.h>

#define PACK_EXIT_OK 0
#define PACK_EXIT_FAIL 1
#define PACK_EXIT_USAGE 2

/* --max-file-size's default: a source file larger than this is skipped
 * (reported; fatal under --strict) without being read. The largest photos
 * cameras write (100 Mpx at high quality) are 30-60 MB and a training image
 * is far smaller, while the reader holds up to 64 files at once: the cap
 * keeps one stray disk image or video named .jpg from costing gigabytes.
 * WAV at 16 kHz, 16 bits: 35 minutes. */
#define PACK_MAX_FILE_DEFAULT ((unsigned long long)64 << 20)

/* --shard-size's upper bound (1 TiB): a shard is one file. */
#define PACK_MAX_SHARD_SIZE ((unsigned long long)1 << 40)

/* Subcommand entry points; argv[0] is the kind word ("images", "audio"),
 * options and operands follow. They return the process exit status. */
int pack_images_main(int argc, char **argv);
int pack_audio_main(int argc, char **argv);

/* The option list of pack images, for packer --help (the same table its
 * parser reads). */
void pack_images_help(FILE *f);

/* packer reshard SRC DEST (--shard-size SIZE | --single) [--order ...]
 * (pack_reshard.c). */
int packer_reshard_main(int argc, char **argv);

#endif
