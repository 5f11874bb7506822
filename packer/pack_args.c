/* pack_args.c — getopt_long with packer's usage errors, number parsing and
 * the recorded command line (see pack_args.h). */
#include "pack_args.h"

#include "pack_msg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether name (len bytes) is a whole long option's name. */
static int known_long(const struct option *o, const char *name, size_t len)
{
	for (; o && o->name; o++)
		if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
			return 1;
	return 0;
}

int pack_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
		const struct option *longopts)
{
	char spec[64];
	snprintf(spec, sizeof(spec), ":%s", shortopts); /* ':' reports a missing argument apart */
	opterr = 0;
	int c = getopt_long(argc, argv, spec, longopts, NULL);
	if (c != '?' && c != ':')
		return c;
	const char *a = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	size_t name_len = strcspn(a, "=");
	if (c == ':')
		pack_usage_error(cmd, "option '%s' needs an argument", a);
	else if (strncmp(a, "--", 2) == 0 && a[name_len] == '=' && known_long(longopts, a + 2, name_len - 2))
		pack_usage_error(cmd, "option '%.*s' takes no argument", (int)name_len, a);
	else if (strncmp(a, "--", 2) == 0 || !optopt)
		pack_usage_error(cmd, "unknown option '%.*s'", (int)name_len, a);
	else
		pack_usage_error(cmd, "unknown option '-%c'", optopt);
	return '?';
}

int pack_parse_uint(const char *s, unsigned long long min, unsigned long long max,
		    unsigned long long *out)
{
	char *end;
	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int pack_parse_size(const char *s, unsigned long long min, unsigned long long max,
		    unsigned long long *out)
{
	char *end;
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (errno || *end || v > (max >> shift))
		return -EINVAL;
	v <<= shift;
	if (v < min)
		return -EINVAL;
	*out = v;
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
