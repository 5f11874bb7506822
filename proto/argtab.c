/* argtab.c — command-line tables: parsing argv against them and printing
 * their --help list (see argtab.h). */
#include "argtab.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HELP_COLUMN 30

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt,
						      ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int takes_value(const struct argtab *r)
{
	return r->kind != ARGTAB_K_FLAG && r->kind != ARGTAB_K_TEXT;
}

/* ---- numbers ---- */

/* The binary shift of a size suffix at *end (K, M, G or T, any case, then
 * optionally "iB"; or a bare "B"), moving *end past it. */
static unsigned size_suffix(char **end)
{
	static const char units[] = "kmgt";
	const char *u = **end ? strchr(units, tolower((unsigned char)**end)) : NULL;
	unsigned shift = u ? 10 * (unsigned)(u - units + 1) : 0;
	if (shift)
		(*end)++;
	if (shift && (*end)[0] == 'i' && (*end)[1] == 'B')
		*end += 2;
	else if (**end == 'B')
		(*end)++;
	return shift;
}

/* A whole decimal number, with a size suffix where suffix is set, in
 * [min, max]. */
static int parse_ull(const char *s, int suffix, unsigned long long min, unsigned long long max,
		     unsigned long long *out)
{
	char *end;
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned shift = suffix ? size_suffix(&end) : 0;
	if (errno || *end || v > (max >> shift))
		return -EINVAL;
	v <<= shift;
	if (v < min)
		return -EINVAL;
	*out = v;
	return 0;
}

int argtab_parse_uint(const char *s, unsigned long long min, unsigned long long max,
		      unsigned long long *out)
{
	return parse_ull(s, 0, min, max, out);
}

int argtab_parse_size(const char *s, unsigned long long min, unsigned long long max,
		      unsigned long long *out)
{
	return parse_ull(s, 1, min, max, out);
}

/* The largest value a destination of type t holds. */
static unsigned long long type_max(enum argtab_type t)
{
	switch (t) {
	case ARGTAB_T_INT:
		return INT_MAX;
	case ARGTAB_T_UINT:
		return UINT_MAX;
	case ARGTAB_T_LONG:
		return LONG_MAX;
	case ARGTAB_T_ULONG:
		return ULONG_MAX;
	case ARGTAB_T_LLONG:
		return LLONG_MAX;
	default:
		return ULLONG_MAX;
	}
}

static int type_signed(enum argtab_type t)
{
	return t == ARGTAB_T_INT || t == ARGTAB_T_LONG || t == ARGTAB_T_LLONG;
}

/* The row's integer range, clipped to its destination type. */
static void int_range(const struct argtab *r, long long *lo, unsigned long long *hi)
{
	unsigned long long tmax = type_max(r->type);
	*lo = type_signed(r->type) ? (r->lo < (double)LLONG_MIN ? LLONG_MIN : (long long)r->lo)
				   : (r->lo < 0 ? 0 : (long long)r->lo);
	*hi = r->hi < 0                                  ? 0
	      : r->hi >= 0x1p64 || r->hi >= (double)tmax ? tmax
							 : (unsigned long long)r->hi;
}

/* Write v (negative when neg, as a long long) to the destination. */
static void store_int(const struct argtab *r, int neg, long long sv, unsigned long long uv)
{
	switch (r->type) {
	case ARGTAB_T_INT:
		*(int *)r->dst = neg ? (int)sv : (int)uv;
		break;
	case ARGTAB_T_UINT:
		*(unsigned *)r->dst = (unsigned)uv;
		break;
	case ARGTAB_T_LONG:
		*(long *)r->dst = neg ? (long)sv : (long)uv;
		break;
	case ARGTAB_T_ULONG:
		*(unsigned long *)r->dst = (unsigned long)uv;
		break;
	case ARGTAB_T_LLONG:
		*(long long *)r->dst = neg ? sv : (long long)uv;
		break;
	default:
		*(unsigned long long *)r->dst = uv;
		break;
	}
}

static int set_int(const struct argtab *r, const char *arg, char *err, size_t errlen)
{
	long long lo;
	unsigned long long hi;
	int_range(r, &lo, &hi);
	char *end;
	int neg = arg[0] == '-';
	long long sv = 0;
	unsigned long long uv = 0;
	errno = 0;
	if (neg)
		sv = strtoll(arg, &end, 10);
	else
		uv = strtoull(arg, &end, 10);
	int ok = end != arg && !*end && !errno &&
		 (arg[0] == '-' || (arg[0] >= '0' && arg[0] <= '9'));
	if (ok && neg)
		ok = sv >= lo && (sv < 0 || (unsigned long long)sv <= hi);
	else if (ok)
		ok = (lo <= 0 || uv >= (unsigned long long)lo) && uv <= hi;
	if (!ok)
		return fail(err, errlen, "--%s '%s' is not an integer from %lld to %llu", r->name,
			    arg, lo, hi);
	store_int(r, neg, sv, uv);
	return 0;
}

static int set_real(const struct argtab *r, const char *arg, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(v) || !(v >= r->lo && v <= r->hi))
		return fail(err, errlen, "--%s '%s' is not a number from %g to %g", r->name, arg,
			    r->lo, r->hi);
	if (r->type == ARGTAB_T_FLOAT)
		*(float *)r->dst = (float)v;
	else
		*(double *)r->dst = v;
	return 0;
}

/* A size as a person writes it: 64M rather than 67108864. */
static void size_text(unsigned long long v, char *buf, size_t len)
{
	static const char unit[] = "GMK";
	for (int i = 0; i < 3; i++) {
		unsigned shift = 30 - 10 * (unsigned)i;
		if (v && v % (1ULL << shift) == 0) {
			snprintf(buf, len, "%llu%c", v >> shift, unit[i]);
			return;
		}
	}
	snprintf(buf, len, "%llu", v);
}

static int set_size(const struct argtab *r, const char *arg, char *err, size_t errlen)
{
	long long lo;
	unsigned long long hi, v;
	int_range(r, &lo, &hi);
	if (argtab_parse_size(arg, (unsigned long long)lo, hi, &v)) {
		char a[32], b[32];
		size_text((unsigned long long)lo, a, sizeof a);
		size_text(hi, b, sizeof b);
		return fail(err, errlen, "--%s '%s' is not a size from %s to %s (e.g. 64M)",
			    r->name, arg, a, b);
	}
	store_int(r, 0, 0, v);
	return 0;
}

/* "a, b or c": the words of an enum row. */
static void choice_list(const struct argtab_choice *c, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = 0;
	for (size_t i = 0; c[i].name && n < len; i++) {
		const char *sep = i == 0 ? "" : c[i + 1].name ? ", " : " or ";
		int w = snprintf(buf + n, len - n, "%s%s", sep, c[i].name);
		if (w < 0)
			break;
		n += (size_t)w;
	}
}

static int set_enum(const struct argtab *r, const char *arg, char *err, size_t errlen)
{
	for (const struct argtab_choice *c = r->choices; c && c->name; c++)
		if (!strcasecmp(c->name, arg)) {
			*(int *)r->dst = c->value;
			return 0;
		}
	char list[256];
	choice_list(r->choices, list, sizeof list);
	return fail(err, errlen, "--%s '%s' is not %s", r->name, arg, list);
}

static int set_value(struct argtab *r, const char *arg, char *err, size_t errlen)
{
	r->seen++;
	switch (r->kind) {
	case ARGTAB_K_FLAG:
		*(int *)r->dst = 1;
		return 0;
	case ARGTAB_K_INT:
		return set_int(r, arg, err, errlen);
	case ARGTAB_K_REAL:
		return set_real(r, arg, err, errlen);
	case ARGTAB_K_STRING:
		*(const char **)r->dst = arg;
		return 0;
	case ARGTAB_K_SIZE:
		return set_size(r, arg, err, errlen);
	case ARGTAB_K_ENUM:
		return set_enum(r, arg, err, errlen);
	case ARGTAB_K_FUNC: {
		char why[200] = "is not valid";
		if (r->parse(arg, r->dst, why, sizeof why) == 0)
			return 0;
		return fail(err, errlen, "--%s '%s' %s", r->name, arg, why);
	}
	default:
		return fail(err, errlen, "--%s: not an option", r->name);
	}
}

/* ---- finding the row ---- */

/* The row of long option name[0..len): an exact name, else the one name it
 * begins (as getopt_long allows). NULL with the reason in err. */
static struct argtab *find_long(struct argtab *tab, const char *name, size_t len, char *err,
				size_t errlen)
{
	struct argtab *hit = NULL;
	int hits = 0;
	for (struct argtab *r = tab; r->kind != ARGTAB_K_END; r++) {
		if (!r->name || strncmp(r->name, name, len) != 0)
			continue;
		if (r->name[len] == 0)
			return r;
		hit = r;
		hits++;
	}
	if (hits == 1)
		return hit;
	if (hits == 0) {
		fail(err, errlen, "unknown option '--%.*s'", (int)len, name);
		return NULL;
	}
	size_t n = (size_t)snprintf(err, errlen, "option '--%.*s' is ambiguous (", (int)len, name);
	for (struct argtab *r = tab; r->kind != ARGTAB_K_END && n < errlen; r++)
		if (r->name && strncmp(r->name, name, len) == 0)
			n += (size_t)snprintf(err + n, errlen - n, "%s--%s",
					      n && err[n - 1] != '(' ? ", " : "", r->name);
	if (n < errlen)
		snprintf(err + n, errlen - n, ")");
	return NULL;
}

static struct argtab *find_short(struct argtab *tab, char c)
{
	for (struct argtab *r = tab; r->kind != ARGTAB_K_END; r++)
		if (r->name && r->short_name == c)
			return r;
	return NULL;
}

const struct argtab *argtab_find(const struct argtab *tab, const char *name)
{
	for (const struct argtab *r = tab; r->kind != ARGTAB_K_END; r++)
		if (r->name && !strcmp(r->name, name))
			return r;
	return NULL;
}

int argtab_given(const struct argtab *tab, const char *name)
{
	const struct argtab *r = argtab_find(tab, name);
	return r && r->seen;
}

/* ---- argv ---- */

/* "--name", "--name=value" or "--name value" at argv[*i]. */
static int parse_long(struct argtab *tab, int argc, char **argv, int *i, char *err, size_t errlen)
{
	const char *a = argv[*i] + 2;
	size_t len = strcspn(a, "=");
	struct argtab *r = find_long(tab, a, len, err, errlen);
	if (!r)
		return -EINVAL;
	if (!takes_value(r)) {
		if (a[len] == '=')
			return fail(err, errlen, "option '--%s' takes no argument", r->name);
		return set_value(r, NULL, err, errlen);
	}
	if (a[len] == '=')
		return set_value(r, a + len + 1, err, errlen);
	if (*i + 1 >= argc)
		return fail(err, errlen, "option '--%s' needs an argument", r->name);
	return set_value(r, argv[++*i], err, errlen);
}

/* "-v", "-vh" (bundled flags), "-x value" or "-xvalue" at argv[*i]. */
static int parse_short(struct argtab *tab, int argc, char **argv, int *i, char *err, size_t errlen)
{
	for (const char *p = argv[*i] + 1; *p; p++) {
		struct argtab *r = find_short(tab, *p);
		if (!r)
			return fail(err, errlen, "unknown option '-%c'", *p);
		if (!takes_value(r)) {
			int rc = set_value(r, NULL, err, errlen);
			if (rc)
				return rc;
			continue;
		}
		if (p[1])
			return set_value(r, p + 1, err, errlen);
		if (*i + 1 >= argc)
			return fail(err, errlen, "option '-%c' needs an argument", *p);
		return set_value(r, argv[++*i], err, errlen);
	}
	return 0;
}

static int add_operand(const char *a, char **operands, int max, int *n, char *err, size_t errlen)
{
	if (*n >= max)
		return fail(err, errlen, "unexpected argument '%s'", a);
	operands[(*n)++] = (char *)a;
	return 0;
}

int argtab_parse(struct argtab *tab, int argc, char **argv, char **operands, int max,
		 int *noperands, char *err, size_t errlen)
{
	int n = 0, rc = 0, options = 1;
	for (struct argtab *r = tab; r->kind != ARGTAB_K_END; r++)
		r->seen = 0;
	for (int i = 1; i < argc && rc == 0; i++) {
		const char *a = argv[i];
		if (options && !strcmp(a, "--"))
			options = 0;
		else if (options && a[0] == '-' && a[1] == '-')
			rc = parse_long(tab, argc, argv, &i, err, errlen);
		else if (options && a[0] == '-' && a[1])
			rc = parse_short(tab, argc, argv, &i, err, errlen);
		else
			rc = add_operand(a, operands, max, &n, err, errlen);
	}
	*noperands = n;
	return rc;
}

/* ---- help ---- */

static void value_name(const struct argtab *r, char *buf, size_t len)
{
	static const char *const by_kind[] = {
		[ARGTAB_K_INT] = "N",     [ARGTAB_K_REAL] = "X",     [ARGTAB_K_STRING] = "VALUE",
		[ARGTAB_K_SIZE] = "SIZE", [ARGTAB_K_FUNC] = "VALUE",
	};
	buf[0] = 0;
	if (!takes_value(r))
		return;
	if (r->arg) {
		snprintf(buf, len, " %s", r->arg);
		return;
	}
	if (r->kind != ARGTAB_K_ENUM) {
		snprintf(buf, len, " %s", by_kind[r->kind]);
		return;
	}
	size_t n = 0;
	for (const struct argtab_choice *c = r->choices; c && c->name && n < len; c++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", c == r->choices ? " " : "|",
				      c->name);
}

/* The help text from column HELP_COLUMN, its continuation lines indented
 * to it; col is where the caller's text ended. */
static void help_lines(FILE *f, const char *help, int col)
{
	if (!help || !*help) {
		fputc('\n', f);
		return;
	}
	if (col >= HELP_COLUMN - 1) {
		fputc('\n', f);
		col = 0;
	}
	while (*help) {
		size_t len = strcspn(help, "\n");
		fprintf(f, "%*s%.*s\n", HELP_COLUMN - col, "", (int)len, help);
		col = 0;
		help += len;
		if (*help == '\n')
			help++;
	}
}

void argtab_help(FILE *f, const struct argtab *tab)
{
	for (const struct argtab *r = tab; r->kind != ARGTAB_K_END; r++) {
		if (r->kind == ARGTAB_K_TEXT) {
			fprintf(f, "%s\n", r->help ? r->help : "");
			continue;
		}
		char val[256];
		value_name(r, val, sizeof val);
		int col;
		if (r->short_name)
			col = fprintf(f, "  -%c, --%s%s", r->short_name, r->name, val);
		else
			col = fprintf(f, "      --%s%s", r->name, val);
		help_lines(f, r->help, col < 0 ? 0 : col);
	}
}
