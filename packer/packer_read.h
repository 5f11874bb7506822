/* packer_read.h — the read-side subcommands of packer: inspect, verify, cat.
 *
 * They open a finished dataset through dsstore (read-only, no lock file) and
 * never modify it. Each takes argv with argv[0] the subcommand word and
 * returns the process exit status (0 ok, 1 failure or bad records, 2 usage). */
#ifndef FEEDER_PACKER_READ_H
#define FEEDER_PACKER_READ_H

/* packer inspect DEST [--json]: header, sample and class counts, per-class
 * histogram, payload size statistics; for kind features also frames and
 * duration statistics (10 ms frames), feat_dim and dtype. */
int packer_inspect_main(int argc, char **argv);

/* packer verify DEST [--decode]: check every record (lengths, CRC-32C, label
 * range; with --decode every JPEG is decoded under feederd's rules,
 * media/jpeg_decode.h: the pixel limit, no decoder warning; features: shape
 * matches the header and every value is finite). Lists each bad record by
 * index and reason on stdout; exit 1 if any. */
int packer_verify_main(int argc, char **argv);

/* packer cat DEST INDEX: write the payload of one sample to stdout. */
int packer_cat_main(int argc, char **argv);

#endif
