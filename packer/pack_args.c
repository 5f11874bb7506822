/* pack_args.c — packer's option tables parsed with its usage errors, and the
 * recorded command line (see pack_args.h). */
#include "pack_args.h"

#include "pack_msg.h"
#include "packer.h"

#include <stdio.h>

int pack_args_parse(const char *cmd, struct argtab *tab, int argc, char **argv, char **operands,
		    int max, int *noperands)
{
	char err[512];
	if (argtab_parse(tab, argc, argv, operands, max, noperands, err, sizeof err))
		return pack_usage_error(cmd, "%s", err);
	return 0;
}

void pack_options_string(int argc, char **argv, int first, char *out, size_t outlen)
{
	size_t n = 0;
	if (!outlen)
		return;
	out[0] = 0;
	for (int i = first; i < argc && n + 1 < outlen; i++) {
		int w = snprintf(out + n, outlen - n, "%s%s", n ? " " : "", argv[i]);
		if (w < 0)
			break;
		n += (size_t)w;
	}
}
