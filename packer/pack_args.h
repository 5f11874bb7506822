/* pack_args.h — command-line helpers of packer's subcommands.
 *
 * Every subcommand describes its options as a table (proto/argtab.h) and
 * parses them through pack_args_parse, which prints the one-line usage
 * errors (pack_msg.h); pack_options_string records the command line in the
 * dataset header. Numbers that are operands rather than options go through
 * argtab_parse_uint. */
#ifndef FEEDER_PACK_ARGS_H
#define FEEDER_PACK_ARGS_H

#include "argtab.h"

#include <stddef.h>

/* Parse argv for subcommand cmd (named in messages, as in pack_usage_error;
 * argv[0], the subcommand word, is not parsed) against tab: options before,
 * between and after the operands, "--" ending them; at most max operands,
 * into operands[0..*noperands). Returns 0, or PACK_EXIT_USAGE after
 * printing "packer: CMD: <why> (try 'packer CMD --help')". */
int pack_args_parse(const char *cmd, struct argtab *tab, int argc, char **argv, char **operands,
		    int max, int *noperands);

/* Join argv[first..argc) with spaces into out (at most outlen-1 chars,
 * truncated), for struct dsformat_header.options. */
void pack_options_string(int argc, char **argv, int first, char *out, size_t outlen);

#endif
