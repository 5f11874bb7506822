/* config.c — feederd's configuration. One table, keys[], says for every key
 * its name (the file key; the flag is derived from it), its type, the field
 * of struct config it fills, its default, its range, what "auto" becomes,
 * the environment variable that may set it and its line of help. The
 * defaults, the INI parser, the command-line parser, --help and
 * --check-config all walk that table, so they cannot disagree about which
 * keys exist or what values they take; tests/config/test_config_docs.sh
 * holds feederd.conf(5), feederd(8) and dist/feederd.conf to it.
 *
 * See config.h for the precedence rules and the error format. */
#include "config.h"

#include "argtab.h"

#include "protocol.h"
#include "status.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

/* A config file is a few hundred bytes; a larger one is a mistake (a binary
 * or a log passed to --config) that deserves an error, not an allocation. */
#define CONFIG_FILE_MAX (1u << 20)

enum key_type {
	KEY_SOCKET, /* char[]: a path that must fit sun_path */
	KEY_PATH,   /* char[]: any path */
	KEY_TEXT,   /* char[]: any text, "" allowed */
	KEY_LISTEN, /* char[]: "" (off), HOST:PORT or an absolute unix socket path */
	KEY_UINT,   /* unsigned within [min, max] */
	KEY_INT,    /* int within [min, max] */
	KEY_SIZE,   /* uint32_t or uint64_t: bytes, optional suffix, within [min, max] */
	KEY_LEVEL,  /* int: syslog level by name or number */
	KEY_GROUP,  /* char[]: one group name or gid, or ""; the gid_t at aux */
	KEY_USERS,  /* uid_t[CONFIG_MAX_IDS]: comma-separated users; the count at aux */
	KEY_GROUPS, /* gid_t[CONFIG_MAX_IDS]: comma-separated groups; the count at aux */
};

struct key {
	const char *name; /* file key; the flag is "--" + name with '_' as '-' */
	enum key_type type;
	size_t off, size;   /* the field of struct config it fills */
	size_t aux;         /* KEY_GROUP: the resolved gid; KEY_USERS, KEY_GROUPS: the count */
	long long min, max; /* KEY_UINT, KEY_INT, KEY_SIZE */
	const char *def;    /* the default, written as in a file ("" = empty) */
	/* Non-NULL: the key also takes "auto", which holds the field at all
	 * ones until every source is read; then config_load stores
	 * resolve(cfg), clamped to [min, max]. Keys are resolved in table
	 * order, and a resolver reads only keys without "auto". */
	uint64_t (*resolve)(const struct config *cfg);
	const char *env;  /* environment variable that sets it, or NULL */
	const char *arg;  /* the flag's value in --help and feederd(8) */
	const char *help; /* what it is, for --help (the default is appended) */
};

#define FIELD(f) .off = offsetof(struct config, f), .size = sizeof(((struct config *)0)->f)
#define STR_(x) #x
#define STR(x) STR_(x)

/* "auto" workers: one per online CPU. */
static uint64_t auto_workers(const struct config *cfg)
{
	(void)cfg;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (uint64_t)n : 1;
}

/* "auto" client_quota: a client may hold all of memory_limit. */
static uint64_t auto_client_quota(const struct config *cfg)
{
	return cfg->memory_limit;
}

/* "auto" reserved_connections: 4, but never more than a quarter of
 * max_clients. */
static uint64_t auto_reserved(const struct config *cfg)
{
	return cfg->max_clients / 4 < 4 ? cfg->max_clients / 4 : 4;
}

static const struct key keys[] = {
	{ "socket", KEY_SOCKET, FIELD(socket_path), .def = FEEDER_DEFAULT_SOCKET,
	  .env = "FEEDER_SOCKET", .arg = "PATH", .help = "listening socket path" },
	{ "datasets", KEY_PATH, FIELD(datasets_dir), .def = CONFIG_DEFAULT_DATASETS, .arg = "DIR",
	  .help = "directory with one sub-directory per dataset" },
	{ "workers", KEY_UINT, FIELD(workers), .min = 1, .max = 1024, .def = "auto",
	  .resolve = auto_workers, .arg = "N", .help = "decode worker threads; auto: online CPUs" },
	{ "memory_limit", KEY_SIZE, FIELD(memory_limit), .min = 1 << 20, .max = 1LL << 48,
	  .def = "4G", .arg = "BYTES", .help = "bytes of all stream rings together" },
	{ "max_clients", KEY_UINT, FIELD(max_clients), .min = 1, .max = 65536, .def = "64",
	  .arg = "N", .help = "concurrent client connections" },
	{ "log_level", KEY_LEVEL, FIELD(log_level), .def = "info", .arg = "LEVEL",
	  .help = "emerg..debug or 0..7" },
	{ "client_quota", KEY_SIZE, FIELD(client_quota), .min = 1 << 20, .max = 1LL << 48,
	  .def = "auto", .resolve = auto_client_quota, .arg = "BYTES",
	  .help = "ring bytes one client may hold; auto: memory_limit" },
	{ "max_streams_per_client", KEY_UINT, FIELD(max_streams_per_client), .min = 1, .max = 1024,
	  .def = "16", .arg = "N", .help = "open streams per connection" },
	{ "max_slots", KEY_UINT, FIELD(max_slots), .min = 1, .max = 256, .def = "32", .arg = "N",
	  .help = "largest prefetch depth (slots) of a stream" },
	{ "max_message", KEY_SIZE, FIELD(max_message), .min = 512, .max = PROTO_MAX_MESSAGE,
	  .def = STR(PROTO_MAX_MESSAGE), .arg = "BYTES",
	  .help = "largest accepted protocol message" },
	{ "socket_group", KEY_GROUP, FIELD(socket_group),
	  .aux = offsetof(struct config, socket_gid), .def = "", .arg = "GROUP",
	  .help = "group owning the socket; empty: feederd's" },
	{ "allow_users", KEY_USERS, FIELD(allow_uids), .aux = offsetof(struct config, n_allow_uids),
	  .def = "", .arg = "LIST", .help = "comma-separated users served; empty: any" },
	{ "allow_groups", KEY_GROUPS, FIELD(allow_gids),
	  .aux = offsetof(struct config, n_allow_gids), .def = "", .arg = "LIST",
	  .help = "comma-separated groups served; empty: any" },
	{ "gpu", KEY_INT, FIELD(gpu), .min = -1, .max = 63, .def = "-1", .arg = "N",
	  .help = "CUDA device for GPU pipelines, -1 = none" },
	{ "max_clients_per_user", KEY_UINT, FIELD(max_clients_per_user), .min = 1, .max = 65536,
	  .def = "32", .arg = "N", .help = "connections one uid may hold" },
	{ "reserved_connections", KEY_UINT, FIELD(reserved_connections), .min = 0, .max = 1024,
	  .def = "auto", .resolve = auto_reserved, .arg = "N",
	  .help = "of max_clients, kept for root and admin_groups; auto: min(4, max_clients/4)" },
	{ "admin_groups", KEY_GROUPS, FIELD(admin_gids),
	  .aux = offsetof(struct config, n_admin_gids), .def = "", .arg = "LIST",
	  .help = "groups that see every stream and use reserved connections" },
	{ "hello_timeout", KEY_UINT, FIELD(hello_timeout), .min = 1, .max = 3600, .def = "5",
	  .arg = "SECONDS", .help = "seconds a new connection has to send HELLO" },
	{ "max_queued", KEY_SIZE, FIELD(max_queued), .min = 4096, .max = 1 << 30, .def = "256K",
	  .arg = "BYTES", .help = "bytes of replies queued for a client that does not read" },
	{ "shutdown_drain", KEY_UINT, FIELD(shutdown_drain), .min = 0, .max = 3600, .def = "3",
	  .arg = "SECONDS", .help = "seconds a stop waits for clients to let go of their batches" },
	{ "starvation_warn", KEY_UINT, FIELD(starvation_warn), .min = 0, .max = 100, .def = "10",
	  .arg = "PERCENT",
	  .help = "warn when a trainer waits more than this % for data (0: never)" },
	{ "starvation_after", KEY_UINT, FIELD(starvation_after), .min = 1, .max = 86400,
	  .def = "60", .arg = "SECONDS", .help = "seconds of such waiting before the warning" },
	{ "metrics_listen", KEY_LISTEN, FIELD(metrics_listen), .def = "", .arg = "HOST:PORT|PATH",
	  .help = "serve Prometheus /metrics on HOST:PORT or a unix socket path; empty: off" },
	{ "remote", KEY_TEXT, FIELD(remote), .def = "", .arg = "NAME=s3://BUCKET/PREFIX,...",
	  .help = "datasets served from object storage (S3), by name; empty: none" },
	{ "cache_dir", KEY_PATH, FIELD(cache_dir), .def = CONFIG_DEFAULT_CACHE, .arg = "DIR",
	  .help = "directory of the remote datasets' shard cache" },
	{ "cache_limit", KEY_SIZE, FIELD(cache_limit), .min = 1 << 20, .max = 1LL << 50,
	  .def = "16G", .arg = "BYTES", .help = "bytes of shards the cache keeps at most" },
	{ "fetchers", KEY_UINT, FIELD(fetchers), .min = 1, .max = 64, .def = "4", .arg = "N",
	  .help = "shards fetched from object storage at once" },
	{ "fetch_tries", KEY_UINT, FIELD(fetch_tries), .min = 1, .max = 30, .def = "8", .arg = "N",
	  .help = "attempts per object storage request (backoff with jitter between)" },
	{ "shuffle_block", KEY_UINT, FIELD(shuffle_block), .min = 1, .max = 4096, .def = "8",
	  .arg = "SHARDS", .help = "shards shuffled together in an epoch of a remote dataset" },
	{ "remote_check", KEY_UINT, FIELD(remote_check), .min = 1, .max = 86400, .def = "30",
	  .arg = "SECONDS", .help = "how often remote manifests are read again" },
};
#define N_KEYS (sizeof keys / sizeof keys[0])

static const char *const level_names[8] = {
	"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
};

const char *config_log_level_name(int level)
{
	return level >= 0 && level < 8 ? level_names[level] : "?";
}

/* The field of cfg that k fills. */
static void *field(struct config *cfg, const struct key *k)
{
	return (char *)cfg + k->off;
}

static const void *cfield(const struct config *cfg, const struct key *k)
{
	return (const char *)cfg + k->off;
}

/* Numbers live in fields of 32 or 64 bits (int, unsigned, uint32_t,
 * uint64_t); a negative int goes through as its two's complement. */
static void num_set(struct config *cfg, const struct key *k, uint64_t v)
{
	if (k->size == sizeof(uint32_t)) {
		uint32_t v32 = (uint32_t)v;
		memcpy(field(cfg, k), &v32, sizeof v32);
	} else {
		memcpy(field(cfg, k), &v, sizeof v);
	}
}

static uint64_t num_get(const struct config *cfg, const struct key *k)
{
	if (k->size == sizeof(uint32_t)) {
		uint32_t v32;
		memcpy(&v32, cfield(cfg, k), sizeof v32);
		return v32;
	}
	uint64_t v;
	memcpy(&v, cfield(cfg, k), sizeof v);
	return v;
}

/* The value a field holds while it is "auto": all ones, outside every
 * key's range. */
static uint64_t auto_mark(const struct key *k)
{
	return k->size == sizeof(uint32_t) ? UINT32_MAX : UINT64_MAX;
}

static int is_auto(const struct config *cfg, const struct key *k)
{
	return k->resolve && num_get(cfg, k) == auto_mark(k);
}

static const struct key *key_find(const char *name)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

/* "--memory-limit" for key memory_limit. */
static const char *flag_name(const struct key *k, char *buf, size_t len)
{
	snprintf(buf, len, "--%s", k->name);
	for (char *p = buf; *p; p++)
		if (*p == '_')
			*p = '-';
	return buf;
}

static int parse_ll(const char *s, long long *out)
{
	if (!*s)
		return FEEDER_EINVAL;
	errno = 0;
	char *end;
	long long v = strtoll(s, &end, 10);
	if (errno || *end != '\0')
		return FEEDER_EINVAL;
	*out = v;
	return 0;
}

static int resolve_user(const char *name, uid_t *out)
{
	long long v;
	if (parse_ll(name, &v) == 0) {
		if (v < 0 || v >= UINT32_MAX)
			return FEEDER_EINVAL;
		*out = (uid_t)v;
		return 0;
	}
	char buf[4096];
	struct passwd pw, *res = NULL;
	if (getpwnam_r(name, &pw, buf, sizeof buf, &res) != 0 || !res)
		return -ENOENT;
	*out = res->pw_uid;
	return 0;
}

static int resolve_group(const char *name, gid_t *out)
{
	long long v;
	if (parse_ll(name, &v) == 0) {
		if (v < 0 || v >= UINT32_MAX)
			return FEEDER_EINVAL;
		*out = (gid_t)v;
		return 0;
	}
	char buf[4096];
	struct group gr, *res = NULL;
	if (getgrnam_r(name, &gr, buf, sizeof buf, &res) != 0 || !res)
		return -ENOENT;
	*out = res->gr_gid;
	return 0;
}

/* Split a comma-separated list and resolve each entry into k's array; the
 * count is written once every entry resolved. where is the message prefix
 * ("config F:3: allow_users" or "command line: --allow-users"). */
static int apply_id_list(struct config *cfg, const struct key *k, const char *val,
			 const char *where, char *err, size_t errlen)
{
	int users = k->type == KEY_USERS;
	unsigned n = 0;
	const char *p = val;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (!*p)
			break;
		const char *e = p;
		while (*e && *e != ',' && *e != ' ' && *e != '\t')
			e++;
		char name[CONFIG_NAME_MAX];
		if ((size_t)(e - p) >= sizeof name)
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "%s: name '%.*s' is too long", where, (int)(e - p), p);
		memcpy(name, p, (size_t)(e - p));
		name[e - p] = '\0';
		if (n == CONFIG_MAX_IDS)
			return status_fail(err, errlen, FEEDER_EINVAL, "%s: more than %d entries",
					   where, CONFIG_MAX_IDS);
		int rc = users ? resolve_user(name, (uid_t *)field(cfg, k) + n)
			       : resolve_group(name, (gid_t *)field(cfg, k) + n);
		if (rc)
			return status_fail(err, errlen, FEEDER_EINVAL, "%s: no %s named '%s'",
					   where, users ? "user" : "group", name);
		n++;
		p = e;
	}
	*(unsigned *)((char *)cfg + k->aux) = n;
	return 0;
}

/* KEY_SOCKET, KEY_PATH, KEY_TEXT and KEY_LISTEN: a string that fits its
 * field. */
static int apply_string(struct config *cfg, const struct key *k, const char *val, const char *where,
			char *err, size_t errlen)
{
	size_t n = strlen(val);
	if (k->type == KEY_SOCKET && !n)
		return status_fail(err, errlen, FEEDER_EINVAL, "%s: empty socket path", where);
	if (k->type == KEY_SOCKET && n >= k->size)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "%s: socket path '%s' is longer than %zu bytes", where, val,
				   k->size - 1);
	if (k->type == KEY_PATH && !n)
		return status_fail(err, errlen, FEEDER_EINVAL, "%s: empty path", where);
	if (k->type == KEY_PATH && n >= k->size)
		return status_fail(err, errlen, FEEDER_EINVAL, "%s: path is too long", where);
	if (k->type == KEY_TEXT && n >= k->size)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "%s: value is too long (%zu bytes at most)", where, k->size - 1);
	if (k->type == KEY_LISTEN && n >= k->size)
		return status_fail(err, errlen, FEEDER_EINVAL, "%s: '%s' is too long", where, val);
	if (k->type == KEY_LISTEN && *val && *val != '/') {
		const char *colon = strrchr(val, ':');
		char *end;
		long port = colon ? strtol(colon + 1, &end, 10) : -1;
		if (!colon || colon == val || !colon[1] || *end || port < 0 || port > 65535)
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "%s: '%s' is not HOST:PORT (port 0..65535) or an "
					   "absolute unix socket path",
					   where, val);
	}
	memcpy(field(cfg, k), val, n + 1);
	return 0;
}

/* KEY_UINT, KEY_INT and KEY_SIZE: a number in [min, max], or "auto". */
static int apply_number(struct config *cfg, const struct key *k, const char *val, const char *where,
			char *err, size_t errlen)
{
	if (k->resolve && strcmp(val, "auto") == 0) {
		num_set(cfg, k, auto_mark(k));
		return 0;
	}
	if (k->type == KEY_SIZE) {
		unsigned long long sz;
		if (argtab_parse_size(val, (unsigned long long)k->min, (unsigned long long)k->max,
				      &sz))
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "%s: '%s' is not a size from %lld to %lld bytes "
					   "(a number with an optional K, M, G or T suffix)",
					   where, val, k->min, k->max);
		num_set(cfg, k, sz);
		return 0;
	}
	long long v;
	if (parse_ll(val, &v) || v < k->min || v > k->max)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "%s: '%s' is not a number from %lld to %lld", where, val, k->min,
				   k->max);
	num_set(cfg, k, (uint64_t)v);
	return 0;
}

static int apply_level(struct config *cfg, const struct key *k, const char *val, const char *where,
		       char *err, size_t errlen)
{
	long long v = -1;
	for (int i = 0; i < 8; i++)
		if (strcasecmp(val, level_names[i]) == 0)
			v = i;
	if (strcasecmp(val, "error") == 0)
		v = LOG_ERR;
	else if (strcasecmp(val, "warn") == 0)
		v = LOG_WARNING;
	else if (v < 0 && (parse_ll(val, &v) || v < 0 || v > 7))
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "%s: '%s' is not a log level (emerg, alert, crit, err, warning, "
				   "notice, info, debug or 0..7)",
				   where, val);
	num_set(cfg, k, (uint64_t)v);
	return 0;
}

/* KEY_GROUP: "" (the daemon's own group, gid_t -1) or one group. */
static int apply_group(struct config *cfg, const struct key *k, const char *val, const char *where,
		       char *err, size_t errlen)
{
	gid_t gid = (gid_t)-1;
	if (*val && (strlen(val) >= k->size || resolve_group(val, &gid)))
		return status_fail(err, errlen, FEEDER_EINVAL, "%s: no group named '%s'", where,
				   val);
	memcpy(field(cfg, k), val, strlen(val) + 1);
	memcpy((char *)cfg + k->aux, &gid, sizeof gid);
	return 0;
}

/* Apply one value of key k, from wherever it came (where names it for a
 * message). */
static int apply(struct config *cfg, const struct key *k, const char *val, const char *where,
		 char *err, size_t errlen)
{
	switch (k->type) {
	case KEY_SOCKET:
	case KEY_PATH:
	case KEY_TEXT:
	case KEY_LISTEN:
		return apply_string(cfg, k, val, where, err, errlen);
	case KEY_UINT:
	case KEY_INT:
	case KEY_SIZE:
		return apply_number(cfg, k, val, where, err, errlen);
	case KEY_LEVEL:
		return apply_level(cfg, k, val, where, err, errlen);
	case KEY_GROUP:
		return apply_group(cfg, k, val, where, err, errlen);
	case KEY_USERS:
	case KEY_GROUPS:
		return apply_id_list(cfg, k, val, where, err, errlen);
	}
	return status_fail(err, errlen, FEEDER_EINVAL, "%s: unhandled key", where);
}

/* Every key's default, through the same parser as a file's values. A
 * number whose field is neither 32 nor 64 bits wide would be written past
 * it: a mistake in keys[] that config_load (and so every test) reports. */
static int apply_defaults(struct config *cfg, char *err, size_t errlen)
{
	memset(cfg, 0, sizeof *cfg);
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct key *k = &keys[i];
		int number = k->type == KEY_UINT || k->type == KEY_INT || k->type == KEY_SIZE ||
			     k->type == KEY_LEVEL;
		if (number && k->size != sizeof(uint32_t) && k->size != sizeof(uint64_t))
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "built-in key table: %s is a field of %zu bytes",
					   k->name, k->size);
		char where[64];
		snprintf(where, sizeof where, "built-in default: %s", k->name);
		int rc = apply(cfg, k, k->def, where, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

void config_defaults(struct config *cfg)
{
	char err[256];
	/* Cannot fail: the defaults are constants, and config_load (whose
	 * tests check every default) reports it if one ever does. */
	(void)apply_defaults(cfg, err, sizeof err);
}

/* Replace each "auto" by what it means now that every source is read. */
static void resolve_auto(struct config *cfg)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct key *k = &keys[i];
		if (!is_auto(cfg, k))
			continue;
		uint64_t v = k->resolve(cfg);
		if (v < (uint64_t)k->min)
			v = (uint64_t)k->min;
		if (v > (uint64_t)k->max)
			v = (uint64_t)k->max;
		num_set(cfg, k, v);
	}
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

/* A section header line ("[feederd]"); s is trimmed and starts with '['. */
static int parse_section(char *s, const char *name, unsigned lineno, char *err, size_t errlen)
{
	char *close = strchr(s, ']');
	if (!close || *trim(close + 1) != '\0')
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "config %s:%u: malformed section header '%s'", name, lineno, s);
	*close = '\0';
	char *sect = trim(s + 1);
	if (strcmp(sect, "feederd") != 0)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "config %s:%u: unknown section '[%s]' (only [feederd])", name,
				   lineno, sect);
	return 0;
}

/* One "key = value" line; s is trimmed, not empty and not a comment. One
 * layer of double quotes around the value is stripped. */
static int parse_setting(struct config *cfg, char *s, const char *name, unsigned lineno, char *err,
			 size_t errlen)
{
	char *eq = strchr(s, '=');
	if (!eq)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "config %s:%u: expected 'key = value', got '%s'", name, lineno,
				   s);
	*eq = '\0';
	char *k = trim(s);
	char *v = trim(eq + 1);
	size_t vl = strlen(v);
	if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
		v[vl - 1] = '\0';
		v++;
	}
	const struct key *key = key_find(k);
	if (!key)
		return status_fail(err, errlen, FEEDER_EINVAL, "config %s:%u: unknown key '%s'",
				   name, lineno, k);
	char where[CONFIG_PATH_MAX + 128];
	snprintf(where, sizeof where, "config %s:%u: %s", name, lineno, key->name);
	return apply(cfg, key, v, where, err, errlen);
}

int config_parse_text(struct config *cfg, const char *name, const char *text, char *err,
		      size_t errlen)
{
	char *copy = strdup(text);
	if (!copy)
		return status_fail(err, errlen, -ENOMEM, "config %s: out of memory", name);
	int rc = 0;
	unsigned lineno = 0;
	/* strtok_r would merge empty lines and break line numbers; walk by hand. */
	for (char *line = copy; line && rc == 0;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		lineno++;
		char *s = trim(line);
		if (*s == '[')
			rc = parse_section(s, name, lineno, err, errlen);
		else if (*s != '\0' && *s != '#' && *s != ';')
			rc = parse_setting(cfg, s, name, lineno, err, errlen);
		line = nl ? nl + 1 : NULL;
	}
	free(copy);
	return rc;
}

/* Read a whole file (at most CONFIG_FILE_MAX bytes) into a NUL-terminated
 * heap string. Only a regular file, or /dev/null ("defaults only"), is
 * read: a FIFO or a terminal would block the daemon (or --check-config)
 * forever, a directory is a mistake. The open itself must not block on a
 * FIFO with no writer, hence O_NONBLOCK until fstat has said what it is. */
static int read_file(const char *path, char **out, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return status_fail(err, errlen, -errno, "config %s: %s", path, strerror(errno));
	struct stat st, null_st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return status_fail(err, errlen, -e, "config %s: %s", path, strerror(e));
	}
	int is_null = S_ISCHR(st.st_mode) && stat("/dev/null", &null_st) == 0 &&
		      st.st_rdev == null_st.st_rdev;
	if (!S_ISREG(st.st_mode) && !is_null) {
		close(fd);
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "config %s: is not a regular file (%s)", path,
				   S_ISDIR(st.st_mode)    ? "a directory"
				   : S_ISFIFO(st.st_mode) ? "a FIFO"
				   : S_ISSOCK(st.st_mode) ? "a socket"
							  : "a device");
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
		int e = errno;
		close(fd);
		return status_fail(err, errlen, -e, "config %s: %s", path, strerror(e));
	}
	char *buf = malloc(CONFIG_FILE_MAX + 1);
	if (!buf) {
		close(fd);
		return status_fail(err, errlen, -ENOMEM, "config %s: out of memory", path);
	}
	size_t got = 0;
	for (;;) {
		ssize_t n = read(fd, buf + got, CONFIG_FILE_MAX + 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(buf);
			close(fd);
			return status_fail(err, errlen, -e, "config %s: %s", path, strerror(e));
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > CONFIG_FILE_MAX) {
			free(buf);
			close(fd);
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "config %s: larger than %u bytes", path,
					   CONFIG_FILE_MAX);
		}
	}
	close(fd);
	buf[got] = '\0';
	if (memchr(buf, '\0', got)) {
		free(buf);
		return status_fail(err, errlen, FEEDER_EINVAL, "config %s: contains a NUL byte",
				   path);
	}
	*out = buf;
	return 0;
}

void config_usage(FILE *f)
{
	fprintf(f,
		"usage: feederd [--config PATH] [--check-config] [OPTIONS]\n"
		"Serve decoded batches of packed datasets over shared memory.\n\n"
		"  %-29s config file (default %s)\n"
		"  %-29s validate the configuration, print it, exit\n",
		"--config PATH", CONFIG_DEFAULT_FILE, "--check-config");
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct key *k = &keys[i];
		char flag[64], arg[96];
		snprintf(arg, sizeof arg, "%s %s", flag_name(k, flag, sizeof flag), k->arg);
		fprintf(f, "  %-29s %s", arg, k->help);
		if (k->env)
			fprintf(f, ", also env %s", k->env);
		fprintf(f, " (default %s)\n", k->def[0] ? k->def : "empty");
	}
	fprintf(f, "  --help, --version\n\n"
		   "Flags override the environment, which overrides the file.\n");
}

/* A string value as the parser reads it back: one layer of surrounding
 * double quotes is stripped and the value trimmed, so a value that starts or
 * ends with a quote or with white space is printed inside quotes (found by
 * tests/fuzz, fuzz_config: printing was not stable). */
static void print_str(FILE *f, const char *v)
{
	size_t n = strlen(v);
	int quote = n && (v[0] == '"' || v[n - 1] == '"' || isspace((unsigned char)v[0]) ||
			  isspace((unsigned char)v[n - 1]));
	fprintf(f, quote ? "\"%s\"" : "%s", v);
}

/* A list of uids or gids (both 32 bits) as numbers, which load back to the
 * same ids without a name lookup. */
static void print_ids(FILE *f, const struct config *cfg, const struct key *k)
{
	unsigned n = *(const unsigned *)((const char *)cfg + k->aux);
	for (unsigned i = 0; i < n; i++) {
		uint32_t id;
		memcpy(&id, (const char *)cfield(cfg, k) + i * sizeof id, sizeof id);
		fprintf(f, "%s%" PRIu32, i ? "," : "", id);
	}
}

static void print_value(FILE *f, const struct config *cfg, const struct key *k)
{
	switch (k->type) {
	case KEY_SOCKET:
	case KEY_PATH:
	case KEY_TEXT:
	case KEY_LISTEN:
	case KEY_GROUP:
		print_str(f, cfield(cfg, k));
		return;
	case KEY_UINT:
	case KEY_SIZE:
		if (is_auto(cfg, k))
			fputs("auto", f);
		else
			fprintf(f, "%" PRIu64, num_get(cfg, k));
		return;
	case KEY_INT:
		fprintf(f, "%" PRId32, (int32_t)num_get(cfg, k));
		return;
	case KEY_LEVEL:
		fputs(config_log_level_name((int32_t)num_get(cfg, k)), f);
		return;
	case KEY_USERS:
	case KEY_GROUPS:
		print_ids(f, cfg, k);
		return;
	}
}

void config_print(const struct config *cfg, FILE *f)
{
	fprintf(f, "# effective configuration (file: %s)\n[feederd]\n",
		cfg->config_path[0] ? cfg->config_path : "none");
	for (size_t i = 0; i < N_KEYS; i++) {
		fprintf(f, "%s = ", keys[i].name);
		print_value(f, cfg, &keys[i]);
		fputc('\n', f);
	}
}

enum { OPT_HELP = 'h', OPT_VERSION = 'V', OPT_CONFIG = 1000, OPT_CHECK, OPT_KEY0 };

/* getopt_long's view of the command line: the four flags that are not keys,
 * then one per key (its name in names[]). */
struct flag_table {
	char names[N_KEYS][64];
	struct option longopts[N_KEYS + 5];
};

static void flag_table_init(struct flag_table *t)
{
	size_t n = 0;
	t->longopts[n++] = (struct option){ "help", no_argument, NULL, OPT_HELP };
	t->longopts[n++] = (struct option){ "version", no_argument, NULL, OPT_VERSION };
	t->longopts[n++] = (struct option){ "config", required_argument, NULL, OPT_CONFIG };
	t->longopts[n++] = (struct option){ "check-config", no_argument, NULL, OPT_CHECK };
	for (size_t k = 0; k < N_KEYS; k++) {
		flag_name(&keys[k], t->names[k], sizeof t->names[k]);
		t->longopts[n++] = (struct option){ t->names[k] + 2, required_argument, NULL,
						    OPT_KEY0 + (int)k };
	}
	t->longopts[n] = (struct option){ NULL, 0, NULL, 0 };
}

/* getopt_long takes an unambiguous prefix ("--work") for an option; a
 * configuration flag must be spelled out. 0, or the error for the word that
 * getopt_long just read as option o. */
static int check_spelled_out(char *const argv[], const struct option *o, char *err, size_t errlen)
{
	const char *a = optarg && optind >= 2 && optarg == argv[optind - 1] ? argv[optind - 2]
									    : argv[optind - 1];
	size_t nl = strlen(o->name);
	if (strncmp(a, "--", 2) || strncmp(a + 2, o->name, nl) || (a[2 + nl] && a[2 + nl] != '='))
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "command line: unknown flag '%.*s' (see --help)",
				   (int)strcspn(a, "="), a);
	return 0;
}

/* What the first pass over argv found besides key flags. */
struct scan {
	const char *config_path; /* --config, or NULL */
	int exit_now;            /* 1: --help, 2: --version (the first one given) */
};

/* One pass over argv with getopt_long (options stop at the first operand,
 * so argv is never permuted: it is the caller's). With apply_values = 0 it
 * only validates flag names and finds --config, --check-config, --help and
 * --version; with 1 it applies every key flag on top of cfg. */
static int scan_args(int argc, char *const argv[], struct config *cfg, int apply_values,
		     struct scan *sc, char *err, size_t errlen)
{
	struct flag_table t;
	flag_table_init(&t);
	optind = 0; /* GNU: a full re-initialisation, for the second pass */
	opterr = 0;
	int opt, li = -1, rc = 0;
	while (rc == 0 && (opt = getopt_long(argc, argv, "+:hV", t.longopts, &li)) != -1) {
		if (li >= 0 && opt != '?' && opt != ':' &&
		    (rc = check_spelled_out(argv, &t.longopts[li], err, errlen)))
			break;
		li = -1;
		if (opt == OPT_HELP || opt == OPT_VERSION) {
			if (!apply_values && !sc->exit_now)
				sc->exit_now = opt == OPT_HELP ? 1 : 2;
		} else if (opt == OPT_CHECK) {
			cfg->check_only = 1;
		} else if (opt == OPT_CONFIG) {
			if (!*optarg)
				rc = status_fail(err, errlen, FEEDER_EINVAL,
						 "command line: --config: empty path");
			sc->config_path = optarg;
		} else if (opt == ':') {
			rc = status_fail(err, errlen, FEEDER_EINVAL,
					 "command line: %s needs a value", argv[optind - 1]);
		} else if (opt == '?') {
			rc = status_fail(err, errlen, FEEDER_EINVAL,
					 "command line: unknown flag '%s' (see --help)",
					 argv[optind - 1]);
		} else if (apply_values) {
			char where[96];
			snprintf(where, sizeof where, "command line: %s", t.names[opt - OPT_KEY0]);
			rc = apply(cfg, &keys[opt - OPT_KEY0], optarg, where, err, errlen);
		}
	}
	if (rc == 0 && optind < argc)
		rc = status_fail(err, errlen, FEEDER_EINVAL,
				 "command line: unexpected argument '%s' (see --help)",
				 argv[optind]);
	return rc;
}

/* The host part of a metrics_listen "HOST:PORT" ("[::1]:9477": ::1). */
static void listen_host(const char *spec, char *host, size_t len)
{
	const char *colon = strrchr(spec, ':');
	size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
	if (n >= 2 && spec[0] == '[' && spec[n - 1] == ']') {
		spec++;
		n -= 2;
	}
	snprintf(host, len, "%.*s", (int)n, spec);
}

int config_metrics_exposed(const char *spec, char *why, size_t whylen)
{
	char host[CONFIG_SOCKET_MAX];
	struct in_addr a4;
	struct in6_addr a6;
	if (!spec[0] || spec[0] == '/')
		return 0;
	listen_host(spec, host, sizeof host);
	int every = !host[0] || strcmp(host, "*") == 0;
	if (!every && inet_pton(AF_INET, host, &a4) == 1) {
		if ((ntohl(a4.s_addr) >> 24) == 127)
			return 0;
		every = a4.s_addr == htonl(INADDR_ANY);
	} else if (!every && inet_pton(AF_INET6, host, &a6) == 1) {
		if (IN6_IS_ADDR_LOOPBACK(&a6) ||
		    (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127))
			return 0;
		every = IN6_IS_ADDR_UNSPECIFIED(&a6);
	} else if (!every) {
		return 0; /* localhost, or a name judged once bound */
	}
	snprintf(why, whylen,
		 "metrics_listen = %s serves /metrics on %s: the daemon's figures "
		 "are visible from other machines (127.0.0.1:PORT or a unix socket path keeps them "
		 "on this one)",
		 spec,
		 every ? "every network interface"
		       : "an address that is "
			 "not loopback");
	return 1;
}

/* Checks that only make sense for --check-config: the directories the daemon
 * will need exist. A running daemon reports these itself when it starts. */
static int check_paths(const struct config *cfg, char *err, size_t errlen)
{
	struct stat st;
	if (stat(cfg->datasets_dir, &st) != 0)
		return status_fail(err, errlen, -errno, "datasets directory '%s': %s",
				   cfg->datasets_dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return status_fail(err, errlen, -ENOTDIR,
				   "datasets directory '%s': not a directory", cfg->datasets_dir);
	return 0;
}

/* The file: the one --config names (which must exist), else the default
 * (which may be missing: all defaults). */
static int load_file(struct config *cfg, const char *path, char *err, size_t errlen)
{
	int explicit_file = path != NULL;
	if (!path)
		path = CONFIG_DEFAULT_FILE;
	char *text = NULL;
	int rc = read_file(path, &text, err, errlen);
	if (rc == -ENOENT && !explicit_file)
		return 0;
	if (rc)
		return rc;
	snprintf(cfg->config_path, sizeof cfg->config_path, "%s", path);
	rc = config_parse_text(cfg, path, text, err, errlen);
	free(text);
	return rc;
}

/* The keys that an environment variable may set. */
static int load_env(struct config *cfg, char *err, size_t errlen)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		const char *v = keys[i].env ? getenv(keys[i].env) : NULL;
		if (!v || !*v)
			continue;
		char where[64];
		snprintf(where, sizeof where, "environment: %s", keys[i].env);
		int rc = apply(cfg, &keys[i], v, where, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

/* What no single key's range can say. */
static int check_relations(const struct config *cfg, char *err, size_t errlen)
{
	if (cfg->client_quota > cfg->memory_limit)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "client_quota (%" PRIu64 " bytes) is larger than memory_limit "
				   "(%" PRIu64 " bytes)",
				   cfg->client_quota, cfg->memory_limit);
	if (cfg->reserved_connections >= cfg->max_clients)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "reserved_connections (%u) leaves none of max_clients (%u) for "
				   "other users",
				   cfg->reserved_connections, cfg->max_clients);
	return 0;
}

int config_remotes(const char *spec, struct config_remote *out, char *err, size_t errlen)
{
	int n = 0;
	const char *p = spec;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (!*p)
			break;
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		const char *eq = memchr(p, '=', len);
		if (!eq)
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "remote: '%.*s' is not NAME=s3://BUCKET/PREFIX",
					   (int)len, p);
		if (n == CONFIG_MAX_REMOTES)
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "remote: more than %d datasets", CONFIG_MAX_REMOTES);
		struct config_remote *r = &out[n];
		/* "NAME = URL" as "NAME=URL". */
		size_t nl = (size_t)(eq - p);
		while (nl && (p[nl - 1] == ' ' || p[nl - 1] == '\t'))
			nl--;
		const char *u = eq + 1, *uend = p + len;
		while (u < uend && (*u == ' ' || *u == '\t'))
			u++;
		size_t ul = (size_t)(uend - u);
		if (nl >= sizeof(r->name) || ul >= sizeof(r->url))
			return status_fail(err, errlen, FEEDER_EINVAL, "remote: '%.*s' is too long",
					   (int)len, p);
		memcpy(r->name, p, nl);
		r->name[nl] = 0;
		memcpy(r->url, u, ul);
		r->url[ul] = 0;
		char why[400];
		if (proto_name_check(r->name, why, sizeof(why)) != 0)
			return status_fail(err, errlen, FEEDER_EINVAL, "remote: '%s': %s", r->name,
					   why);
		if (s3_url_parse(r->url, r->bucket, r->prefix, why, sizeof(why)) != 0)
			return status_fail(err, errlen, FEEDER_EINVAL, "remote: dataset '%s': %s",
					   r->name, why);
		for (int i = 0; i < n; i++)
			if (strcmp(out[i].name, r->name) == 0)
				return status_fail(err, errlen, FEEDER_EINVAL,
						   "remote: dataset '%s' is named twice", r->name);
		n++;
		p += len;
		while (*p && *p != ',')
			p++;
	}
	return n;
}

int config_load(int argc, char *const argv[], struct config *cfg, char *err, size_t errlen)
{
	int rc = apply_defaults(cfg, err, errlen);
	struct scan sc = { NULL, 0 };
	if (rc == 0)
		rc = scan_args(argc, argv, cfg, 0, &sc, err, errlen);
	if (rc)
		return rc;
	if (sc.exit_now == 1) {
		config_usage(stdout);
		return CONFIG_EXIT;
	}
	if (sc.exit_now == 2) {
		printf("feederd %s\n", FEEDER_VERSION);
		return CONFIG_EXIT;
	}
	if ((rc = load_file(cfg, sc.config_path, err, errlen)) ||
	    (rc = load_env(cfg, err, errlen)) ||
	    (rc = scan_args(argc, argv, cfg, 1, &sc, err, errlen)))
		return rc;
	resolve_auto(cfg);
	if ((rc = check_relations(cfg, err, errlen)))
		return rc;
	struct config_remote *rem = malloc(CONFIG_MAX_REMOTES * sizeof(*rem));
	if (!rem)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	rc = config_remotes(cfg->remote, rem, err, errlen);
	free(rem);
	if (rc < 0)
		return rc;
	if (cfg->check_only)
		return check_paths(cfg, err, errlen);
	return 0;
}
