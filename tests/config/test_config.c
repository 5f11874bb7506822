/* test_config.c — feederd's configuration (daemon/config.c): every key from
 * a file and from a flag, the error lines for unknown keys, flags and bad
 * values, the precedence flag > FEEDER_SOCKET > file > default, what
 * "auto" becomes, and the remote datasets' keys (config_remotes). */
#include "argtab.h"
#include "config.h"
#include "protocol.h"

#include "check.h"
#include "status.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/feeder-config-______";
/* The error line of the last load. */
static char err[512];

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f);
	fputs(text, f);
	CHECK(fclose(f) == 0);
}

/* tmpdir/name (one of four buffers in turn), written with text unless NULL. */
static char *tmp_file(const char *name, const char *text)
{
	static char paths[4][256];
	static unsigned turn;
	char *path = paths[turn++ % 4];
	snprintf(path, sizeof(paths[0]), "%s/%s", tmpdir, name);
	if (text)
		write_file(path, text);
	return path;
}

/* What config_print writes for c (malloc'd). */
static char *printed(const struct config *c)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	CHECK(f);
	config_print(c, f);
	CHECK(fclose(f) == 0);
	return text;
}

/* config_load with a NULL-terminated list of arguments after "feederd". */
static int load(struct config *cfg, ...)
{
	char *argv[32];
	int argc = 0;
	argv[argc++] = "feederd";
	va_list ap;
	va_start(ap, cfg);
	char *a;
	while ((a = va_arg(ap, char *)) != NULL && argc < 31)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	err[0] = 0;
	return config_load(argc, argv, cfg, err, sizeof err);
}

/* load, which must succeed. */
#define LOAD_OK(cfg, ...) CHECKF(load(cfg, __VA_ARGS__, NULL) == 0, "%s", err)

static void test_defaults(void)
{
	struct config c;
	/* A missing file given explicitly is an error naming it. */
	char *missing = tmp_file("missing.conf", NULL);
	int rc = load(&c, "--config", missing, NULL);
	CHECKF(rc == -ENOENT, "rc %d", rc);
	CHECKF(strstr(err, missing) && strstr(err, "No such file"), "err '%s'", err);
	/* Defaults through an empty file. */
	char *empty = tmp_file("empty.conf", "");
	LOAD_OK(&c, "--config", empty);
	CHECK(strcmp(c.socket_path, FEEDER_DEFAULT_SOCKET) == 0);
	CHECK(strcmp(c.datasets_dir, CONFIG_DEFAULT_DATASETS) == 0);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	CHECKF(c.workers == (unsigned)n, "workers %u cores %ld", c.workers, n);
	CHECK(c.memory_limit == 4ULL << 30);
	CHECK(c.client_quota == c.memory_limit);
	CHECK(c.log_level == LOG_INFO);
	CHECK(c.gpu == -1);
	CHECK(c.max_slots == 32 && c.max_clients == 64 && c.max_streams_per_client == 16);
	CHECK(c.max_message == PROTO_MAX_MESSAGE && c.hello_timeout == 5 &&
	      c.max_queued == 256 << 10);
	CHECK(c.n_allow_uids == 0 && c.n_allow_gids == 0 && c.socket_gid == (gid_t)-1);
	CHECK(c.check_only == 0);
	CHECK(strcmp(c.config_path, empty) == 0);
	/* Remote datasets: none, and the cache systemd's CacheDirectory=feeder
	 * makes. */
	CHECK(c.remote[0] == 0);
	CHECK(strcmp(c.cache_dir, "/var/cache/feeder") == 0);
	CHECK(c.cache_limit == 16ULL << 30);
	CHECK(c.fetchers == 4 && c.fetch_tries == 8 && c.shuffle_block == 8 &&
	      c.remote_check == 30);
}

static void test_every_key_file(void)
{
	char *path = tmp_file("all.conf", "# every key\n"
					  "[feederd]\n"
					  "socket = /tmp/x.sock\n"
					  "  datasets=/srv/data  \n"
					  "\n"
					  "; another comment\n"
					  "workers = 3\n"
					  "memory_limit = 2G\n"
					  "max_clients = 9\n"
					  "log_level = debug\n"
					  "client_quota = 512MiB\n"
					  "max_streams_per_client = 5\n"
					  "max_slots = 7\n"
					  "max_message = 1K\n"
					  "socket_group = 0\n"
					  "allow_users = root, 1234\n"
					  "allow_groups = 0,55\n"
					  "gpu = 2\r\n");
	struct config c;
	LOAD_OK(&c, "--config", path);
	CHECK(strcmp(c.socket_path, "/tmp/x.sock") == 0);
	CHECK(strcmp(c.datasets_dir, "/srv/data") == 0);
	CHECK(c.workers == 3);
	CHECK(c.memory_limit == 2ULL << 30);
	CHECK(c.max_clients == 9);
	CHECK(c.log_level == LOG_DEBUG);
	CHECK(c.client_quota == 512ULL << 20);
	CHECK(c.max_streams_per_client == 5);
	CHECK(c.max_slots == 7);
	CHECK(c.max_message == 1024);
	CHECK(strcmp(c.socket_group, "0") == 0 && c.socket_gid == 0);
	CHECK(c.n_allow_uids == 2 && c.allow_uids[0] == 0 && c.allow_uids[1] == 1234);
	CHECK(c.n_allow_gids == 2 && c.allow_gids[0] == 0 && c.allow_gids[1] == 55);
	CHECK(c.gpu == 2);

	/* What --check-config prints is itself a valid config that loads to the
	 * same values. */
	char *printed = tmp_file("printed.conf", NULL);
	FILE *f = fopen(printed, "w");
	CHECK(f);
	config_print(&c, f);
	CHECK(fclose(f) == 0);
	struct config d;
	LOAD_OK(&d, "--config", printed);
	CHECK(strcmp(d.socket_path, c.socket_path) == 0 && d.workers == c.workers);
	CHECK(d.memory_limit == c.memory_limit && d.client_quota == c.client_quota);
	CHECK(d.log_level == c.log_level && d.gpu == c.gpu && d.max_message == c.max_message);
	CHECK(d.n_allow_uids == 2 && d.allow_uids[1] == 1234 && d.n_allow_gids == 2);
}

static void test_every_flag(void)
{
	struct config c;
	LOAD_OK(&c, "--config", tmp_file("empty.conf", NULL), "--socket", "/tmp/f.sock",
		"--datasets=/d", "--workers", "2", "--memory-limit", "64M", "--max-clients=4",
		"--log-level", "3", "--client-quota", "16777216", "--max-streams-per-client", "2",
		"--max-slots", "3", "--max-message", "768", "--socket-group", "0", "--allow-users",
		"0", "--allow-groups", "0", "--gpu", "-1");
	CHECK(strcmp(c.socket_path, "/tmp/f.sock") == 0 && strcmp(c.datasets_dir, "/d") == 0);
	CHECK(c.workers == 2 && c.memory_limit == 64 << 20 && c.max_clients == 4);
	CHECK(c.log_level == LOG_ERR && c.client_quota == 16 << 20);
	CHECK(c.max_streams_per_client == 2 && c.max_slots == 3 && c.max_message == 768);
	CHECK(c.socket_gid == 0 && c.n_allow_uids == 1 && c.n_allow_gids == 1 && c.gpu == -1);
}

/* rc is FEEDER_EINVAL, and err one line with n1 (and n2 unless NULL). */
static void expect_error(int rc, const char *n1, const char *n2)
{
	CHECKF(rc == FEEDER_EINVAL, "rc %d err '%s'", rc, err);
	CHECKF(strstr(err, n1), "'%s' not in '%s'", n1, err);
	if (n2)
		CHECKF(strstr(err, n2), "'%s' not in '%s'", n2, err);
	CHECKF(!strchr(err, '\n'), "multi-line error '%s'", err);
}

static void test_errors(void)
{
	char *path = tmp_file("bad.conf", NULL);
	struct config c;
	/* A file, and what its error says (and where: ":1:" unless told). */
	const char *const bad[][3] = {
		{ "workers = 2\n\n# c\nwrokers = 3\n", ":4: unknown key 'wrokers'", path },
		{ "[server]\n", ":1: unknown section '[server]'" },
		{ "workers\n", ":1: expected 'key = value'" },
		{ "workers = 0\n", "'0' is not a number from 1 to 1024" },
		{ "workers = 4x\n", "'4x'" },
		{ "workers = -3\n", "'-3'" },
		{ "max_clients = 99999999999999999999\n", "max_clients" },
		{ "memory_limit = 12Q\n", "'12Q' is not a size" },
		{ "memory_limit = 1.5G\n", "'1.5G'" },
		{ "memory_limit = 99999999999T\n", "memory_limit" },
		{ "memory_limit = 100\n", "'100' is not a size from 1048576" },
		{ "log_level = loud\n", "'loud' is not a log level" },
		{ "log_level = 8\n", "'8'" },
		{ "gpu = -2\n", "'-2' is not a number from -1 to 63" },
		{ "max_slots = 257\n", "max_slots" },
		{ "socket = \n", "empty socket path" },
		{ "socket = /tmp/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock\n",
		  "longer than 107 bytes" },
		{ "allow_users = root,no-such-user-feeder\n",
		  "no user named 'no-such-user-feeder'" },
		{ "allow_groups = no-such-group-feeder\n",
		  "no group named 'no-such-group-feeder'" },
		{ "socket_group = no-such-group-feeder\n", "no group named" },
		/* Messages are at most PROTO_MAX_MESSAGE: a larger limit would
		 * be accepted and mean nothing. */
		{ "max_message = 2048\n", "'2048' is not a size from 512 to 1024" },
		{ "hello_timeout = 0\n", "hello_timeout" },
		{ "max_queued = 100\n", "max_queued" },
		{ "admin_groups = no-such-group-feeder\n",
		  "no group named 'no-such-group-feeder'" },
		{ "fetchers = 0\n", "'0' is not a number from 1 to 64" },
		{ "fetchers = 65\n", "fetchers" },
		{ "fetch_tries = 0\n", "'0' is not a number from 1 to 30" },
		{ "shuffle_block = 0\n", "'0' is not a number from 1 to 4096" },
		{ "shuffle_block = 4097\n", "shuffle_block" },
		{ "remote_check = 0\n", "remote_check" },
		{ "cache_limit = 1023K\n", "'1023K' is not a size from 1048576" },
		{ "cache_limit = 12Q\n", "'12Q' is not a size" },
		{ "cache_dir = \n", "empty path" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		write_file(path, bad[i][0]);
		expect_error(load(&c, "--config", path, NULL), bad[i][1],
			     bad[i][2] ? bad[i][2] : ":1:");
	}

	/* Flags after --config with an empty file, and what their error says. */
	write_file(path, "");
	const char *const flags[][6] = {
		{ "unknown flag '--wrokers'", NULL, "--wrokers", "3" },
		{ "unknown flag '--work'", NULL, "--work", "3" }, /* not a prefix of a flag */
		{ "unexpected argument 'extra'", NULL, "extra" },
		{ "--workers needs a value", NULL, "--workers" },
		{ "command line: --workers: 'many'", NULL, "--workers", "many" },
		{ "client_quota", "larger than memory_limit", "--memory-limit", "64M",
		  "--client-quota", "128M" },
		{ "reserved_connections (8) leaves none", NULL, "--max-clients", "8",
		  "--reserved-connections", "8" },
	};
	for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
		const char *const *f = flags[i];
		expect_error(load(&c, "--config", path, f[2], f[3], f[4], f[5], NULL), f[0], f[1]);
	}
	/* A FIFO (or anything but a regular file or /dev/null) is refused
	 * without waiting for a writer (it used to hang). */
	char *fifo = tmp_file("fifo.conf", NULL);
	CHECK(mkfifo(fifo, 0600) == 0);
	expect_error(load(&c, "--config", fifo, NULL), "is not a regular file (a FIFO)", NULL);
	expect_error(load(&c, "--config", tmpdir, NULL), "is not a regular file (a directory)",
		     NULL);
	LOAD_OK(&c, "--config", "/dev/null");
	/* A prefix of a flag is not that flag. */
	expect_error(load(&c, "--config", path, "--work", "3", NULL), "unknown flag '--work'",
		     NULL);
}

static void test_precedence(void)
{
	char *path = tmp_file("prec.conf",
			      "socket = /tmp/file.sock\nworkers = 5\nlog_level = warning\n");
	struct config c;

	unsetenv("FEEDER_SOCKET");
	LOAD_OK(&c, "--config", path);
	CHECK(strcmp(c.socket_path, "/tmp/file.sock") == 0);
	CHECK(c.workers == 5 && c.log_level == LOG_WARNING);
	CHECK(c.max_clients == 64); /* default where the file is silent */

	setenv("FEEDER_SOCKET", "/tmp/env.sock", 1);
	LOAD_OK(&c, "--config", path);
	CHECK(strcmp(c.socket_path, "/tmp/env.sock") == 0);

	/* The flag wins over both, wherever it stands relative to --config. */
	LOAD_OK(&c, "--socket", "/tmp/flag.sock", "--workers", "1", "--config", path);
	CHECK(strcmp(c.socket_path, "/tmp/flag.sock") == 0 && c.workers == 1);
	CHECK(c.log_level == LOG_WARNING);

	/* A later flag overrides an earlier one. */
	LOAD_OK(&c, "--config", path, "--workers", "2", "--workers=7");
	CHECK(c.workers == 7);

	setenv("FEEDER_SOCKET",
	       "relative/too/long/yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
	       "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy",
	       1);
	expect_error(load(&c, "--config", path, NULL), "environment: FEEDER_SOCKET", "longer than");
	unsetenv("FEEDER_SOCKET");
}

/* "auto" (workers, client_quota, reserved_connections) is worked out after
 * every source is read: a later flag that changes what it depends on
 * changes it, and an explicit value in a file yields to a flag's "auto". */
static void test_auto(void)
{
	char *path = tmp_file("auto.conf",
			      "workers = 3\nclient_quota = auto\nreserved_connections = 2\n");
	struct config c;
	LOAD_OK(&c, "--config", path, "--memory-limit", "64M", "--workers", "auto",
		"--reserved-connections", "auto", "--max-clients", "8");
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	CHECKF(c.workers == (unsigned)n, "workers %u cores %ld", c.workers, n);
	CHECKF(c.client_quota == 64 << 20, "client_quota %llu", (unsigned long long)c.client_quota);
	CHECKF(c.reserved_connections == 2, "reserved %u", c.reserved_connections);
	LOAD_OK(&c, "--config", path, "--max-clients", "100");
	CHECK(c.reserved_connections == 2 && c.workers == 3);
	LOAD_OK(&c, "--config", "/dev/null", "--max-clients", "100");
	CHECKF(c.reserved_connections == 4, "reserved %u", c.reserved_connections);

	/* Before config_load resolves them they print as "auto", which parses
	 * back to "auto". */
	config_defaults(&c);
	char *text = printed(&c);
	CHECKF(strstr(text, "\nworkers = auto\n") && strstr(text, "\nclient_quota = auto\n") &&
		       strstr(text, "\nreserved_connections = auto\n"),
	       "%s", text);
	struct config d;
	config_defaults(&d);
	d.workers = 1;
	int rc = config_parse_text(&d, "printed", text, err, sizeof err);
	CHECKF(rc == 0, "%s", err);
	CHECK(memcmp(&c, &d, sizeof c) == 0);
	free(text);
}

static void test_check_only(void)
{
	char *path = tmp_file("check.conf", "datasets = /nonexistent/feeder/datasets\n");
	char *dir = tmp_file("datasets", NULL);
	CHECK(mkdir(dir, 0700) == 0);
	struct config c;
	int rc = load(&c, "--config", path, "--check-config", NULL);
	CHECKF(rc == -ENOENT && strstr(err, "/nonexistent/feeder/datasets"), "rc %d '%s'", rc, err);
	rc = load(&c, "--config", path, "--check-config", "--datasets", dir, NULL);
	CHECKF(rc == 0 && c.check_only == 1, "rc %d '%s'", rc, err);
}

/* The remote keys from a file and from flags, printed back by
 * --check-config, and the `remote` list split by config_remotes: its good
 * forms, and a refusal naming the entry for each bad one (also through
 * config_load, which checks the list before anything starts). */
static void test_remote(void)
{
	char *path = tmp_file("remote.conf", "remote =  a=s3://bkt/p ,c=s3://ddd/e/f\n"
					     "cache_dir = /srv/cache\n"
					     "cache_limit = 1M\n"
					     "fetchers = 64\n"
					     "fetch_tries = 30\n"
					     "shuffle_block = 4096\n"
					     "remote_check = 86400\n");
	struct config c;
	LOAD_OK(&c, "--config", path);
	CHECKF(strcmp(c.remote, "a=s3://bkt/p ,c=s3://ddd/e/f") == 0, "remote '%s'", c.remote);
	CHECK(strcmp(c.cache_dir, "/srv/cache") == 0 && c.cache_limit == 1 << 20);
	CHECK(c.fetchers == 64 && c.fetch_tries == 30 && c.shuffle_block == 4096 &&
	      c.remote_check == 86400);
	LOAD_OK(&c, "--config", path, "--remote", "x=s3://bucket", "--cache-dir=/c",
		"--cache-limit", "2G", "--fetchers", "1", "--fetch-tries", "1", "--shuffle-block",
		"1", "--remote-check", "1");
	CHECK(strcmp(c.remote, "x=s3://bucket") == 0 && strcmp(c.cache_dir, "/c") == 0);
	CHECK(c.cache_limit == 2ULL << 30 && c.fetchers == 1 && c.fetch_tries == 1 &&
	      c.shuffle_block == 1 && c.remote_check == 1);
	/* An empty value in the file or on the command line: no remote dataset. */
	LOAD_OK(&c, "--config", path, "--remote", "");
	CHECK(c.remote[0] == 0);

	/* What --check-config prints loads back to the same values. */
	LOAD_OK(&c, "--config", path);
	char *text = printed(&c);
	CHECKF(strstr(text, "\nremote = a=s3://bkt/p ,c=s3://ddd/e/f\n") &&
		       strstr(text, "\ncache_dir = /srv/cache\n") &&
		       strstr(text, "\ncache_limit = 1048576\n") &&
		       strstr(text, "\nfetchers = 64\n") && strstr(text, "\nfetch_tries = 30\n") &&
		       strstr(text, "\nshuffle_block = 4096\n") &&
		       strstr(text, "\nremote_check = 86400\n"),
	       "%s", text);
	struct config d;
	config_defaults(&d);
	int rc = config_parse_text(&d, "printed", text, err, sizeof err);
	CHECKF(rc == 0, "%s", err);
	CHECK(strcmp(d.remote, c.remote) == 0 && strcmp(d.cache_dir, c.cache_dir) == 0);
	CHECK(d.cache_limit == c.cache_limit && d.fetchers == c.fetchers &&
	      d.fetch_tries == c.fetch_tries && d.shuffle_block == c.shuffle_block &&
	      d.remote_check == c.remote_check);
	free(text);

	static struct config_remote r[CONFIG_MAX_REMOTES];
	CHECKF(config_remotes("a=s3://bkt/p", r, err, sizeof err) == 1, "%s", err);
	CHECK(strcmp(r[0].name, "a") == 0 && strcmp(r[0].url, "s3://bkt/p") == 0 &&
	      strcmp(r[0].bucket, "bkt") == 0 && strcmp(r[0].prefix, "p") == 0);
	/* Blanks around an entry and around '=' are not part of it. */
	CHECKF(config_remotes(" a=s3://bkt , c = s3://d.e-f/g/h/ ", r, err, sizeof err) == 2, "%s",
	       err);
	CHECK(strcmp(r[0].name, "a") == 0 && strcmp(r[0].url, "s3://bkt") == 0 &&
	      strcmp(r[0].bucket, "bkt") == 0 && r[0].prefix[0] == 0);
	CHECK(strcmp(r[1].name, "c") == 0 && strcmp(r[1].url, "s3://d.e-f/g/h/") == 0 &&
	      strcmp(r[1].bucket, "d.e-f") == 0 && strcmp(r[1].prefix, "g/h") == 0);
	CHECKF(config_remotes("\tx.y_z-1\t=\ts3://bkt/pre/fix\t,", r, err, sizeof err) == 1, "%s",
	       err);
	CHECK(strcmp(r[0].name, "x.y_z-1") == 0 && strcmp(r[0].url, "s3://bkt/pre/fix") == 0);
	/* Empty (or nothing but blanks and commas): no dataset, no error. */
	CHECK(config_remotes("", r, err, sizeof err) == 0);
	CHECK(config_remotes(" , ,", r, err, sizeof err) == 0);
	/* As many as the daemon serves, and one more is refused. */
	char many[CONFIG_MAX_REMOTES * 18 + 32];
	size_t at = 0;
	for (int i = 0; i <= CONFIG_MAX_REMOTES; i++)
		at += (size_t)snprintf(many + at, sizeof many - at, "%sd%d=s3://bkt", i ? "," : "",
				       i);
	char *last = strrchr(many, ',');
	*last = 0;
	CHECKF(config_remotes(many, r, err, sizeof err) == CONFIG_MAX_REMOTES, "%s", err);
	CHECK(strcmp(r[CONFIG_MAX_REMOTES - 1].name, "d63") == 0);
	*last = ',';
	expect_error(config_remotes(many, r, err, sizeof err), "remote: more than 64", NULL);

	/* A bad entry: the error is one line naming it. */
	const char *const bad[][3] = {
		{ "a", "'a' is not NAME=s3://BUCKET/PREFIX" },
		{ "a=s3://bkt, c", "'c' is not NAME=s3://BUCKET/PREFIX" },
		{ "../x=s3://bkt/p", "remote: '../x'", "starts with '.'" },
		{ "a/b=s3://bkt/p", "remote: 'a/b'", "character other than" },
		{ "a b=s3://bkt/p", "remote: 'a b'", "character other than" },
		{ "=s3://bkt/p", "remote: ''", "empty" },
		{ " = s3://bkt/p", "remote: ''", "empty" },
		{ "a=http://bkt/p",
		  "dataset 'a': 'http://bkt/p' is not an s3://bucket/prefix URL" },
		{ "a=bkt/p", "'bkt/p' is not an s3://" },
		/* The bucket: S3's rule, checked here and not first by the store. */
		{ "a=s3:///x", "dataset 'a': 's3:///x': the bucket name '' is not 3 to 63" },
		{ "a=s3://", "dataset 'a': 's3://': the bucket name '' is not 3 to 63" },
		{ "a=s3://b/p", "the bucket name 'b' is not 3 to 63" },
		{ "a=s3://Bkt/p", "the bucket name 'Bkt' is not 3 to 63" },
		{ "a=s3://bkt-/p", "the bucket name 'bkt-' is not 3 to 63" },
		{ "a=s3://bkt/p\x01q", "'s3://bkt/p\x01q': the prefix holds a control character" },
		{ "a=s3://bkt/p, b=s3://bkt2, a=s3://bkt3", "dataset 'a' is named twice" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		expect_error(config_remotes(bad[i][0], r, err, sizeof err), bad[i][1], bad[i][2]);
		/* config_load refuses it too, from a flag as from a file. */
		expect_error(load(&c, "--config", "/dev/null", "--remote", bad[i][0], NULL),
			     bad[i][1], bad[i][2]);
	}
	char *bad_file = tmp_file("remote-bad.conf", "remote = a=s3://bkt, a = s3://bkt2\n");
	expect_error(load(&c, "--config", bad_file, NULL), "dataset 'a' is named twice", NULL);
	/* A value longer than the field is refused, not cut. */
	char *huge = malloc(CONFIG_PATH_MAX + 16);
	CHECK(huge);
	memset(huge, 'x', CONFIG_PATH_MAX + 15);
	memcpy(huge, "a=s3://bkt/", 11);
	huge[CONFIG_PATH_MAX + 15] = 0;
	expect_error(load(&c, "--config", "/dev/null", "--remote", huge, NULL), "--remote",
		     "too long");
	free(huge);
}

static void test_sizes(void)
{
	unsigned long long v;
	CHECK(argtab_parse_size("0", 0, ULLONG_MAX, &v) == 0 && v == 0);
	CHECK(argtab_parse_size("1k", 0, ULLONG_MAX, &v) == 0 && v == 1024);
	CHECK(argtab_parse_size("3MiB", 0, ULLONG_MAX, &v) == 0 && v == 3 << 20);
	CHECK(argtab_parse_size("5GB", 0, ULLONG_MAX, &v) == 0 && v == 5ULL << 30);
	CHECK(argtab_parse_size("2T", 0, ULLONG_MAX, &v) == 0 && v == 2ULL << 40);
	CHECK(argtab_parse_size("17B", 0, ULLONG_MAX, &v) == 0 && v == 17);
	CHECK(argtab_parse_size("", 0, ULLONG_MAX, &v) == -EINVAL);
	CHECK(argtab_parse_size("-1", 0, ULLONG_MAX, &v) == -EINVAL);
	CHECK(argtab_parse_size(" 1", 0, ULLONG_MAX, &v) == -EINVAL);
	CHECK(argtab_parse_size("1 G", 0, ULLONG_MAX, &v) == -EINVAL);
	CHECK(argtab_parse_size("16777216T", 0, ULLONG_MAX, &v) == -EINVAL);
	CHECK(strcmp(config_log_level_name(3), "err") == 0);
	CHECK(strcmp(config_log_level_name(9), "?") == 0);
}

int main(void)
{
	/* mkdtemp's template: six capital X after the prefix. */
	memset(tmpdir + strlen(tmpdir) - 6, 'X', 6);
	CHECK(mkdtemp(tmpdir));
	test_defaults();
	test_every_key_file();
	test_every_flag();
	test_errors();
	test_precedence();
	test_auto();
	test_check_only();
	test_remote();
	test_sizes();
	char cmd[400];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : 1;
}
