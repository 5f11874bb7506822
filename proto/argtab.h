/* argtab.h — the programs' command lines as tables.
 *
 * xvec, packer, feeder-bench and the generators each describe their options
 * once, as an array of struct argtab: the long name, an optional short one,
 * what kind of value it takes (a flag, an integer or a real in a range, a
 * string, a size with K/M/G, one of a few words, or the program's own
 * parser), where the value goes and a line of help. argtab_parse reads argv
 * against the table and argtab_help prints the option list of --help from
 * it, so the two cannot drift apart (tests/docs/test_man.sh then holds the
 * man pages to the --help text).
 *
 * Parsing follows getopt_long's conventions, which these programs used
 * before: "--name value", "--name=value", a unique prefix of a long name,
 * "-x value", "-xvalue", short flags bundled ("-vh"), operands anywhere
 * among the options and "--" ending them. It keeps no global state. A
 * mistake is one sentence in the caller's buffer naming the option and the
 * reason ("--epochs 'abc' is not an integer from 1 to 1000000"); the
 * program puts its own name in front. This lives in proto/ because every
 * program links proto (feeder_proto). */
#ifndef FEEDER_ARGTAB_H
#define FEEDER_ARGTAB_H

#include <stddef.h>
#include <stdio.h>

enum argtab_kind {
	ARGTAB_K_END = 0, /* ends a table (the row ARGTAB_END) */
	ARGTAB_K_TEXT,    /* no option: help is a heading or a line printed as it is */
	ARGTAB_K_FLAG,    /* no value: *(int *)dst = 1 */
	ARGTAB_K_INT,     /* whole decimal number in [lo, hi]; dst by width (ARGTAB_INT_DST) */
	ARGTAB_K_REAL,    /* finite real in [lo, hi]; dst float or double (ARGTAB_REAL_DST) */
	ARGTAB_K_STRING,  /* *(const char **)dst = the argument */
	ARGTAB_K_SIZE,    /* bytes, optional K, M or G (KiB, MiB, GiB), in [lo, hi]; unsigned
			    long or long long */
	ARGTAB_K_ENUM,    /* one of choices' words (case-insensitive): *(int *)dst = its value */
	ARGTAB_K_FUNC,    /* parse(argument, dst, err, errlen): the program's own value */
};

/* The destination's C type for ARGTAB_INT and ARGTAB_REAL: picked by
 * _Generic in the ARGTAB_INT / ARGTAB_REAL macros below. */
enum argtab_type {
	ARGTAB_T_INT,
	ARGTAB_T_UINT,
	ARGTAB_T_LONG,
	ARGTAB_T_ULONG,
	ARGTAB_T_LLONG,
	ARGTAB_T_ULLONG,
	ARGTAB_T_FLOAT,
	ARGTAB_T_DOUBLE,
};

struct argtab_choice {
	const char *name;
	int value;
};

/* An ARGTAB_FUNC parser: 0, or -EINVAL with the reason after the quoted
 * argument in err ("is not auto, none or a number from 1 to 4096"). */
typedef int (*argtab_parse_fn)(const char *arg, void *dst, char *err, size_t errlen);

struct argtab {
	const char *name; /* long name without "--"; NULL for ARGTAB_TEXT */
	char short_name;  /* 'v' for -v; 0 for none */
	enum argtab_kind kind;
	enum argtab_type type; /* ARGTAB_INT, ARGTAB_REAL, ARGTAB_SIZE */
	void *dst;
	double lo, hi; /* ARGTAB_INT (exact up to 2^53; hi 0x1p64 means the type's
				   maximum), ARGTAB_REAL, ARGTAB_SIZE */
	const struct argtab_choice *choices; /* ARGTAB_ENUM: ended by a NULL name */
	argtab_parse_fn parse;               /* ARGTAB_FUNC */
	const char *arg;  /* the value's name in help ("N", "PATH"); NULL: from kind */
	const char *help; /* may hold '\n': continuation lines are indented */
	unsigned seen;    /* set by argtab_parse: how many times it was given */
};

#define ARGTAB_INT_DST(p)                                                                          \
	_Generic((p), int *: ARGTAB_T_INT, unsigned *: ARGTAB_T_UINT,             \
		 long *: ARGTAB_T_LONG, unsigned long *: ARGTAB_T_ULONG,            \
		 long long *: ARGTAB_T_LLONG, unsigned long long *: ARGTAB_T_ULLONG)
#define ARGTAB_REAL_DST(p) _Generic((p), float * : ARGTAB_T_FLOAT, double * : ARGTAB_T_DOUBLE)

/* The whole range of an unsigned 64-bit destination, as hi. */
#define ARGTAB_U64_MAX 0x1p64

/* Table rows. NAME is the long name, S the short one (0: none), META the
 * value's name in help. */
#define ARGTAB_FLAG(NAME, S, DST, HELP)                                                            \
	{                                                                                          \
		.name = NAME, .short_name = S, .kind = ARGTAB_K_FLAG,                     \
	  .dst = _Generic((DST), int *: (DST)), .help = HELP        \
	}
#define ARGTAB_INT(NAME, S, DST, LO, HI, META, HELP)                                               \
	{                                                                                          \
		.name = NAME, .short_name = S, .kind = ARGTAB_K_INT, .type = ARGTAB_INT_DST(DST),  \
		.dst = DST, .lo = LO, .hi = HI, .arg = META, .help = HELP                          \
	}
#define ARGTAB_REAL(NAME, S, DST, LO, HI, META, HELP)                                              \
	{                                                                                          \
		.name = NAME, .short_name = S, .kind = ARGTAB_K_REAL,                              \
		.type = ARGTAB_REAL_DST(DST), .dst = DST, .lo = LO, .hi = HI, .arg = META,         \
		.help = HELP                                                                       \
	}
#define ARGTAB_STRING(NAME, S, DST, META, HELP)                                                    \
	{                                                                                          \
		.name = NAME, .short_name = S, .kind = ARGTAB_K_STRING,                   \
	  .dst = _Generic((DST), const char **: (DST)), .arg = META, .help = HELP        \
	}
#define ARGTAB_SIZE(NAME, S, DST, LO, HI, META, HELP)                                                   \
	{                                                                                               \
		.name = NAME, .short_name = S, .kind = ARGTAB_K_SIZE,                                 \
	  .type = _Generic((DST), unsigned long *: ARGTAB_T_ULONG,                            \
			   unsigned long long *: ARGTAB_T_ULLONG),                             \
	  .dst = DST, .lo = LO, .hi = HI, .arg = META, .help = HELP \
	}
#define ARGTAB_ENUM(NAME, S, DST, CHOICES, META, HELP)                                                \
	{                                                                                             \
		.name = NAME, .short_name = S, .kind = ARGTAB_K_ENUM,                               \
	  .dst = _Generic((DST), int *: (DST)),                                              \
	  .choices = CHOICES, .arg = META, .help = HELP \
	}
#define ARGTAB_FUNC(NAME, S, DST, FN, META, HELP)                                                  \
	{                                                                                          \
		.name = NAME, .short_name = S, .kind = ARGTAB_K_FUNC, .dst = DST, .parse = FN,     \
		.arg = META, .help = HELP                                                          \
	}
#define ARGTAB_TEXT(HELP)                                                                          \
	{                                                                                          \
		.kind = ARGTAB_K_TEXT, .help = HELP                                                \
	}
#define ARGTAB_END                                                                                 \
	{                                                                                          \
		.kind = ARGTAB_K_END                                                               \
	}

/* Parse argv[1..argc) against tab (ended by ARGTAB_END). Each option's
 * value goes to its destination as it is met, so a later one wins, and its
 * row's seen count goes up (zeroed first). The operands, in order, go to
 * operands[0..*noperands): at most max of them, more is an error. Returns
 * 0, or -EINVAL with one sentence in err: "unknown option '--x'", "unknown
 * option '-x'", "option '--x' needs an argument", "option '--x' takes no
 * argument", "option '--x' is ambiguous (--xa, --xb)", "--x 'v' is not
 * ...", "unexpected argument 'a'". */
int argtab_parse(struct argtab *tab, int argc, char **argv, char **operands, int max,
		 int *noperands, char *err, size_t errlen);

/* The option list for --help: "  -v, --verbose" or "      --rate HZ",
 * the help text from column 30 (or on the next line when the left part is
 * wider), continuation lines indented to it; ARGTAB_TEXT rows as they are. */
void argtab_help(FILE *f, const struct argtab *tab);

/* The row of long option name, or NULL. */
const struct argtab *argtab_find(const struct argtab *tab, const char *name);

/* Whether option name was given (its row's seen count). */
int argtab_given(const struct argtab *tab, const char *name);

/* The value parsers behind ARGTAB_INT (unsigned) and ARGTAB_SIZE, for
 * operands, programs' own kinds and feederd's configuration. s must be all of
 * a decimal number (for a size, optionally followed by K, M, G or T, any
 * case, for KiB to TiB, each optionally written KiB or KB; or B), in
 * [min, max].
 * 0 or -EINVAL. */
int argtab_parse_uint(const char *s, unsigned long long min, unsigned long long max,
		      unsigned long long *out);
int argtab_parse_size(const char *s, unsigned long long min, unsigned long long max,
		      unsigned long long *out);

#endif
