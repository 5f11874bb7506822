/* pack_args.h — command-line helpers of packer's subcommands.
 *
 * Every subcommand parses its options with getopt_long through
 * pack_getopt, which prints the one-line usage errors (pack_msg.h), and its
 * numbers with pack_parse_uint and pack_parse_size; pack_options_string
 * records the command
 * line in the dataset header. */
#ifndef FEEDER_PACK_ARGS_H
#define FEEDER_PACK_ARGS_H

#include <getopt.h>
#include <stddef.h>

/* getopt_long over argv for subcommand cmd (named in messages, as in
 * pack_usage_error), options allowed before, between and after the operands
 * (GNU permutation; "--" ends them). The caller sets optind = 0 before the
 * first call (argv[0], the subcommand word, is not parsed). Returns the next
 * option's val, -1 when the options are done (the operands are then
 * argv[optind..argc)), or '?' after printing "unknown option" or "option
 * needs an argument": the caller then returns PACK_EXIT_USAGE. shortopts
 * does not start with ':', '+' or '-' (this adds the ':'). */
int pack_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
		const struct option *longopts);

/* Parse a decimal unsigned number in [min, max] (whole string). 0 or -EINVAL. */
int pack_parse_uint(const char *s, unsigned long long min, unsigned long long max,
		    unsigned long long *out);

/* Parse a size: a decimal number of bytes, optionally followed by K, M or G
 * (KiB, MiB, GiB; "64M"), in [min, max]. 0 or -EINVAL. */
int pack_parse_size(const char *s, unsigned long long min, unsigned long long max,
		    unsigned long long *out);

/* Join argv[first..argc) with spaces into out (at most outlen-1 chars,
 * truncated), for struct dsformat_header.options. */
void pack_options_string(int argc, char **argv, int first, char *out, size_t outlen);

#endif
