/* test_argtab.c — proto/argtab: the values each kind stores (integers and
 * their ranges, reals, sizes with suffixes, enums, flags, strings, the
 * program's own parser), the sentence for each mistake (unknown option,
 * missing argument, a value out of range, an ambiguous prefix, an extra
 * operand), operands among options and after "--", and the --help list
 * printed from the same table. */
#include "argtab.h"
#include "check.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

struct opts {
	int epochs, verbose, mode;
	unsigned threads;
	uint64_t seed;
	long steps;
	float lr;
	double gain;
	unsigned long long max_file;
	const char *out;
	int restart;
};

static const struct argtab_choice modes[] = { { "cpu", 0 },
					      { "gpu", 1 },
					      { "auto", 2 },
					      { NULL, 0 } };

/* --restart auto|MCUS: auto is -1. */
static int parse_restart(const char *arg, void *dst, char *err, size_t errlen)
{
	unsigned long long v = 0;
	if (strcmp(arg, "auto") != 0 && argtab_parse_uint(arg, 1, 4096, &v) != 0) {
		snprintf(err, errlen, "is not auto or a number from 1 to 4096");
		return -EINVAL;
	}
	*(int *)dst = v ? (int)v : -1;
	return 0;
}

static struct opts o;
static struct argtab tab[] = {
	ARGTAB_TEXT("options:"),
	ARGTAB_INT("epochs", 'e', &o.epochs, 1, 1000000, "E", "epochs to train (default 10)"),
	ARGTAB_INT("threads", 0, &o.threads, 1, 256, NULL, "worker threads"),
	ARGTAB_INT("seed", 0, &o.seed, 0, ARGTAB_U64_MAX, "S", "seed"),
	ARGTAB_INT("steps", 0, &o.steps, -1, 1e15, NULL, "steps\n(-1: all)"),
	ARGTAB_REAL("lr", 0, &o.lr, 0, 10, "R", "learning rate"),
	ARGTAB_REAL("gain", 0, &o.gain, -20, 20, "DB", NULL),
	ARGTAB_SIZE("max-file-size", 0, &o.max_file, 1, 1 << 30, NULL, "skip larger files"),
	ARGTAB_ENUM("mode", 0, &o.mode, modes, NULL, "where"),
	ARGTAB_STRING("out", 'o', &o.out, "PATH", "where to write"),
	ARGTAB_FUNC("restart", 0, &o.restart, parse_restart, "auto|MCUS", "restart interval"),
	ARGTAB_FLAG("verbose", 'v', &o.verbose, "say more"),
	ARGTAB_FLAG("very-long-option-name-here", 0, &o.verbose, "on the next line"),
	ARGTAB_END,
};

static char err[256];
static char *ops[4];
static int nops;

/* Parse the words of line (space-separated; "prog" is prepended) with at
 * most max operands. */
static int run(const char *line, int max)
{
	static char buf[1024];
	char *argv[32] = { "prog" };
	int argc = 1;
	snprintf(buf, sizeof buf, "%s", line);
	for (char *t = strtok(buf, " "); t && argc < 31; t = strtok(NULL, " "))
		argv[argc++] = t;
	memset(&o, 0, sizeof o);
	err[0] = 0;
	return argtab_parse(tab, argc, argv, ops, max, &nops, err, sizeof err);
}

/* The call fails with a sentence containing want. */
static void refused(const char *line, const char *want)
{
	int rc = run(line, 2);
	CHECKF(rc == -EINVAL, "'%s' was accepted", line);
	CHECKF(strstr(err, want) != NULL, "'%s': '%s' does not say '%s'", line, err, want);
	CHECKF(!strchr(err, '\n'), "'%s': the error is not one line", line);
}

static void test_values(void)
{
	CHECK(run("--epochs 12 --threads=8 --seed 18446744073709551615 --steps -1 --lr 0.5 "
		  "--gain -3.5 --max-file-size 64M --mode GPU -o x.bin --restart 7 -v a b",
		  2) == 0);
	CHECK(o.epochs == 12 && o.threads == 8 && o.seed == UINT64_MAX && o.steps == -1);
	CHECK(o.lr == 0.5f && o.gain == -3.5 && o.max_file == 64ULL << 20 && o.mode == 1);
	CHECK(!strcmp(o.out, "x.bin") && o.restart == 7 && o.verbose == 1);
	CHECK(nops == 2 && !strcmp(ops[0], "a") && !strcmp(ops[1], "b"));
	CHECK(argtab_given(tab, "epochs") && !argtab_given(tab, "very-long-option-name-here"));
	/* Short forms, bundling, prefixes, the last value winning, "--". */
	CHECK(run("-e3 -vo out a --epo 5 --max-file-size=2k -- --mode", 2) == 0);
	CHECK(o.epochs == 5 && o.verbose && !strcmp(o.out, "out") && o.max_file == 2048);
	CHECK(nops == 2 && !strcmp(ops[0], "a") && !strcmp(ops[1], "--mode"));
	CHECK(run("--restart auto --max-file-size 1G", 0) == 0 && o.restart == -1 &&
	      o.max_file == 1ULL << 30);
}

static void test_errors(void)
{
	refused("--epochs abc", "--epochs 'abc' is not an integer from 1 to 1000000");
	refused("--epochs 0", "--epochs '0' is not an integer from 1 to 1000000");
	refused("--epochs 1000001", "from 1 to 1000000");
	refused("--epochs 1.5", "not an integer");
	refused("--epochs 1e3", "not an integer");
	refused("--threads -1", "--threads '-1' is not an integer from 1 to 256");
	refused("--seed 18446744073709551616", "--seed '18446744073709551616' is not an integer");
	refused("--steps -2", "from -1 to");
	refused("--lr 11", "--lr '11' is not a number from 0 to 10");
	refused("--lr nan", "is not a number");
	refused("--max-file-size 2G", "--max-file-size '2G' is not a size from 1 to 1G");
	refused("--max-file-size 12Q", "is not a size");
	refused("--max-file-size 0", "is not a size");
	refused("--mode tpu", "--mode 'tpu' is not cpu, gpu or auto");
	refused("--restart never", "--restart 'never' is not auto or a number from 1 to 4096");
	refused("--bogus", "unknown option '--bogus'");
	refused("--bogus=1", "unknown option '--bogus'");
	refused("-x", "unknown option '-x'");
	refused("-vx", "unknown option '-x'");
	refused("--out", "option '--out' needs an argument");
	refused("-o", "option '-o' needs an argument");
	refused("--verbose=1", "option '--verbose' takes no argument");
	refused("--m 1", "option '--m' is ambiguous (--max-file-size, --mode)");
	refused("a b c", "unexpected argument 'c'");
}

static void test_help(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	CHECK(f);
	argtab_help(f, tab);
	CHECK(fclose(f) == 0);
	static const char want[] = "options:\n"
				   "  -e, --epochs E              epochs to train (default 10)\n"
				   "      --threads N             worker threads\n"
				   "      --seed S                seed\n"
				   "      --steps N               steps\n"
				   "                              (-1: all)\n"
				   "      --lr R                  learning rate\n"
				   "      --gain DB\n"
				   "      --max-file-size SIZE    skip larger files\n"
				   "      --mode cpu|gpu|auto     where\n"
				   "  -o, --out PATH              where to write\n"
				   "      --restart auto|MCUS     restart interval\n"
				   "  -v, --verbose               say more\n"
				   "      --very-long-option-name-here\n"
				   "                              on the next line\n";
	CHECKF(!strcmp(text, want), "help is:\n%s", text);
	free(text);
}

int main(void)
{
	test_values();
	test_errors();
	test_help();
	puts("PASS: argtab values, errors and help");
	return 0;
}
