/* config.c — feederd's configuration: one table of keys drives the INI
 * parser, the command-line parser, --help and --check-config, so the four
 * can never disagree about which keys exist or what values they take.
 *
 * See config.h for the precedence rules and the error format. */
#include "config.h"

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
	KEY_SOCKET,   /* path that must fit sun_path */
	KEY_PATH,     /* any path */
	KEY_LISTEN,   /* "" (off), HOST:PORT or an absolute unix socket path */
	KEY_UINT,     /* unsigned within [min, max] */
	KEY_INT,      /* signed within [min, max] */
	KEY_SIZE,     /* byte count with optional suffix, within [min, max] */
	KEY_LEVEL,    /* syslog level by name or number */
	KEY_GROUP,    /* one group name or gid, or "" */
	KEY_USERS,    /* comma-separated users */
	KEY_GROUPS,   /* comma-separated groups */
};

struct key {
	const char *name; /* file key; the flag is "--" + name with '_' -> '-' */
	enum key_type type;
	long long min, max;
	const char *help;
};

static const struct key keys[] = {
	{"socket", KEY_SOCKET, 0, 0, "listening socket path (env FEEDER_SOCKET)"},
	{"datasets", KEY_PATH, 0, 0, "directory with one sub-directory per dataset"},
	{"workers", KEY_UINT, 1, 1024, "decode worker threads (default: online CPUs)"},
	{"memory_limit", KEY_SIZE, 1 << 20, 1LL << 48, "bytes of all stream rings together"},
	{"max_clients", KEY_UINT, 1, 65536, "concurrent client connections"},
	{"log_level", KEY_LEVEL, 0, 7, "emerg..debug or 0..7"},
	{"client_quota", KEY_SIZE, 1 << 20, 1LL << 48, "ring bytes one client may hold (default: memory_limit)"},
	{"max_streams_per_client", KEY_UINT, 1, 1024, "open streams per connection"},
	{"max_slots", KEY_UINT, 1, 256, "largest prefetch depth (slots) of a stream"},
	{"max_message", KEY_SIZE, 512, PROTO_MAX_MESSAGE, "largest accepted protocol message"},
	{"socket_group", KEY_GROUP, 0, 0, "group owning the socket (default: feederd's)"},
	{"allow_users", KEY_USERS, 0, 0, "comma-separated users served (default: any)"},
	{"allow_groups", KEY_GROUPS, 0, 0, "comma-separated groups served (default: any)"},
	{"gpu", KEY_INT, -1, 63, "CUDA device for GPU pipelines, -1 = none"},
	{"max_clients_per_user", KEY_UINT, 1, 65536, "connections one uid may hold"},
	{"reserved_connections", KEY_UINT, 0, 1024, "of max_clients, kept for root and admin_groups (auto: min(4, max_clients/4))"},
	{"admin_groups", KEY_GROUPS, 0, 0, "groups that see every stream and use reserved connections"},
	{"hello_timeout", KEY_UINT, 1, 3600, "seconds a new connection has to send HELLO"},
	{"max_queued", KEY_SIZE, 4096, 1 << 30, "bytes of replies queued for a client that does not read"},
	{"shutdown_drain", KEY_UINT, 0, 3600, "seconds a stop waits for clients to let go of their batches"},
	{"starvation_warn", KEY_UINT, 0, 100, "warn when a trainer waits more than this % for data (0: never)"},
	{"starvation_after", KEY_UINT, 1, 86400, "seconds of such waiting before the warning"},
	{"metrics_listen", KEY_LISTEN, 0, 0, "serve Prometheus /metrics on HOST:PORT or a unix socket path (default: off)"},
};
#define N_KEYS (sizeof keys / sizeof keys[0])

static const char *const level_names[8] = {
	"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
};

const char *config_log_level_name(int level)
{
	return level >= 0 && level < 8 ? level_names[level] : "?";
}

void config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	snprintf(cfg->socket_path, sizeof cfg->socket_path, "%s", FEEDER_DEFAULT_SOCKET);
	snprintf(cfg->datasets_dir, sizeof cfg->datasets_dir, "%s", CONFIG_DEFAULT_DATASETS);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	cfg->workers = n > 0 ? (n > 1024 ? 1024 : (unsigned)n) : 1;
	cfg->memory_limit = 4ULL << 30;
	cfg->max_clients = 64;
	cfg->log_level = LOG_INFO;
	/* 0 until merged: "not set" resolves to memory_limit in config_load. */
	cfg->client_quota = 0;
	cfg->max_streams_per_client = 16;
	cfg->max_slots = 32;
	cfg->max_message = PROTO_MAX_MESSAGE;
	cfg->max_clients_per_user = 32;
	cfg->reserved_connections = CONFIG_RESERVED_AUTO;
	cfg->hello_timeout = 5;
	cfg->max_queued = 256 << 10;
	cfg->shutdown_drain = 3;
	cfg->starvation_warn = 10;
	cfg->starvation_after = 60;
	cfg->socket_gid = (gid_t)-1;
	cfg->gpu = -1;
}

static const struct key *key_find(const char *name, size_t len)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strlen(keys[i].name) == len && memcmp(keys[i].name, name, len) == 0)
			return &keys[i];
	return NULL;
}

/* "--memory-limit" for key memory_limit, for messages. */
static const char *flag_name(const struct key *k, char *buf, size_t len)
{
	snprintf(buf, len, "--%s", k->name);
	for (char *p = buf; *p; p++)
		if (*p == '_')
			*p = '-';
	return buf;
}

int config_parse_size(const char *s, uint64_t *out)
{
	if (!isdigit((unsigned char)s[0]))
		return FEEDER_EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return FEEDER_EINVAL;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (shift && end[0] == 'i' && end[1] == 'B')
		end += 2;
	else if (end[0] == 'B')
		end++;
	if (*end != '\0')
		return FEEDER_EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return FEEDER_EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
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

/* Split a comma-separated list and resolve each entry. where is the message
 * prefix ("config F:3: allow_users" or "command line: --allow-users"). */
static int parse_id_list(struct config *cfg, const struct key *k, const char *val,
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
			return status_fail(err, errlen, FEEDER_EINVAL, "%s: name '%.*s' is too long",
					   where, (int)(e - p), p);
		memcpy(name, p, (size_t)(e - p));
		name[e - p] = '\0';
		if (n == CONFIG_MAX_IDS)
			return status_fail(err, errlen, FEEDER_EINVAL, "%s: more than %d entries",
					   where, CONFIG_MAX_IDS);
		gid_t *gids = strcmp(k->name, "admin_groups") == 0 ? cfg->admin_gids : cfg->allow_gids;
		int rc = users ? resolve_user(name, &cfg->allow_uids[n]) : resolve_group(name, &gids[n]);
		if (rc)
			return status_fail(err, errlen, FEEDER_EINVAL, "%s: no %s named '%s'",
					   where, users ? "user" : "group", name);
		n++;
		p = e;
	}
	if (users)
		cfg->n_allow_uids = n;
	else if (strcmp(k->name, "admin_groups") == 0)
		cfg->n_admin_gids = n;
	else
		cfg->n_allow_gids = n;
	return 0;
}

/* Apply one value. quota_set records that client_quota was given
 * explicitly. */
static int apply(struct config *cfg, const struct key *k, const char *val, const char *where,
		 int *quota_set, char *err, size_t errlen)
{
	long long v;
	uint64_t sz;
	switch (k->type) {
	case KEY_SOCKET:
		if (!*val)
			return status_fail(err, errlen, FEEDER_EINVAL, "%s: empty socket path", where);
		if (strlen(val) >= CONFIG_SOCKET_MAX)
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "%s: socket path '%s' is longer than %d bytes", where, val,
					   CONFIG_SOCKET_MAX - 1);
		snprintf(cfg->socket_path, sizeof cfg->socket_path, "%s", val);
		return 0;
	case KEY_PATH:
		if (!*val)
			return status_fail(err, errlen, FEEDER_EINVAL, "%s: empty path", where);
		if (strlen(val) >= CONFIG_PATH_MAX)
			return status_fail(err, errlen, FEEDER_EINVAL, "%s: path is too long", where);
		snprintf(cfg->datasets_dir, sizeof cfg->datasets_dir, "%s", val);
		return 0;
	case KEY_LISTEN:
		if (strlen(val) >= sizeof cfg->metrics_listen)
			return status_fail(err, errlen, FEEDER_EINVAL, "%s: '%s' is too long", where,
					   val);
		if (*val && *val != '/') {
			const char *colon = strrchr(val, ':');
			char *end;
			long port = colon ? strtol(colon + 1, &end, 10) : -1;
			if (!colon || colon == val || !colon[1] || *end || port < 0 || port > 65535)
				return status_fail(err, errlen, FEEDER_EINVAL,
						   "%s: '%s' is not HOST:PORT (port 0..65535) or an "
						   "absolute unix socket path", where, val);
		}
		snprintf(cfg->metrics_listen, sizeof cfg->metrics_listen, "%s", val);
		return 0;
	case KEY_UINT:
	case KEY_INT:
		if (k->type == KEY_UINT && strcmp(k->name, "workers") == 0 && strcmp(val, "auto") == 0) {
			long n = sysconf(_SC_NPROCESSORS_ONLN);
			cfg->workers = n > 0 ? (n > 1024 ? 1024 : (unsigned)n) : 1;
			return 0;
		}
		if (strcmp(k->name, "reserved_connections") == 0 && strcmp(val, "auto") == 0) {
			cfg->reserved_connections = CONFIG_RESERVED_AUTO;
			return 0;
		}
		if (parse_ll(val, &v) || v < k->min || v > k->max)
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "%s: '%s' is not a number from %lld to %lld", where, val,
					   k->min, k->max);
		if (strcmp(k->name, "workers") == 0)
			cfg->workers = (unsigned)v;
		else if (strcmp(k->name, "max_clients") == 0)
			cfg->max_clients = (unsigned)v;
		else if (strcmp(k->name, "max_streams_per_client") == 0)
			cfg->max_streams_per_client = (unsigned)v;
		else if (strcmp(k->name, "max_slots") == 0)
			cfg->max_slots = (unsigned)v;
		else if (strcmp(k->name, "max_clients_per_user") == 0)
			cfg->max_clients_per_user = (unsigned)v;
		else if (strcmp(k->name, "reserved_connections") == 0)
			cfg->reserved_connections = (unsigned)v;
		else if (strcmp(k->name, "hello_timeout") == 0)
			cfg->hello_timeout = (unsigned)v;
		else if (strcmp(k->name, "shutdown_drain") == 0)
			cfg->shutdown_drain = (unsigned)v;
		else if (strcmp(k->name, "starvation_warn") == 0)
			cfg->starvation_warn = (unsigned)v;
		else if (strcmp(k->name, "starvation_after") == 0)
			cfg->starvation_after = (unsigned)v;
		else
			cfg->gpu = (int)v;
		return 0;
	case KEY_SIZE:
		if (config_parse_size(val, &sz) || sz < (uint64_t)k->min || sz > (uint64_t)k->max)
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "%s: '%s' is not a size from %lld to %lld bytes "
					   "(a number with an optional K, M, G or T suffix)",
					   where, val, k->min, k->max);
		if (strcmp(k->name, "memory_limit") == 0) {
			cfg->memory_limit = sz;
		} else if (strcmp(k->name, "client_quota") == 0) {
			cfg->client_quota = sz;
			*quota_set = 1;
		} else if (strcmp(k->name, "max_queued") == 0) {
			cfg->max_queued = sz;
		} else {
			cfg->max_message = (uint32_t)sz;
		}
		return 0;
	case KEY_LEVEL:
		for (int i = 0; i < 8; i++)
			if (strcasecmp(val, level_names[i]) == 0) {
				cfg->log_level = i;
				return 0;
			}
		if (strcasecmp(val, "error") == 0 || strcasecmp(val, "warn") == 0) {
			cfg->log_level = val[0] == 'e' || val[0] == 'E' ? LOG_ERR : LOG_WARNING;
			return 0;
		}
		if (parse_ll(val, &v) == 0 && v >= 0 && v <= 7) {
			cfg->log_level = (int)v;
			return 0;
		}
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "%s: '%s' is not a log level (emerg, alert, crit, err, warning, "
				   "notice, info, debug or 0..7)", where, val);
	case KEY_GROUP:
		if (!*val) {
			cfg->socket_group[0] = '\0';
			cfg->socket_gid = (gid_t)-1;
			return 0;
		}
		if (strlen(val) >= CONFIG_NAME_MAX || resolve_group(val, &cfg->socket_gid))
			return status_fail(err, errlen, FEEDER_EINVAL, "%s: no group named '%s'",
					   where, val);
		snprintf(cfg->socket_group, sizeof cfg->socket_group, "%s", val);
		return 0;
	case KEY_USERS:
	case KEY_GROUPS:
		return parse_id_list(cfg, k, val, where, err, errlen);
	}
	return status_fail(err, errlen, FEEDER_EINVAL, "%s: unhandled key", where);
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

static int parse_text(struct config *cfg, const char *name, const char *text, int *quota_set,
		      char *err, size_t errlen)
{
	char *copy = strdup(text);
	if (!copy)
		return status_fail(err, errlen, -ENOMEM, "config %s: out of memory", name);
	int rc = 0;
	unsigned lineno = 0;
	/* strtok_r would merge empty lines and break line numbers; walk by hand. */
	char *line = copy;
	while (line) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		lineno++;
		char *s = trim(line);
		char where[CONFIG_PATH_MAX + 128];
		if (*s == '\0' || *s == '#' || *s == ';') {
			line = nl ? nl + 1 : NULL;
			continue;
		}
		if (*s == '[') {
			char *close = strchr(s, ']');
			if (!close || *trim(close + 1) != '\0') {
				rc = status_fail(err, errlen, FEEDER_EINVAL,
						 "config %s:%u: malformed section header '%s'", name,
						 lineno, s);
				break;
			}
			*close = '\0';
			char *sect = trim(s + 1);
			if (strcmp(sect, "feederd") != 0) {
				rc = status_fail(err, errlen, FEEDER_EINVAL,
						 "config %s:%u: unknown section '[%s]' (only [feederd])",
						 name, lineno, sect);
				break;
			}
			line = nl ? nl + 1 : NULL;
			continue;
		}
		char *eq = strchr(s, '=');
		if (!eq) {
			rc = status_fail(err, errlen, FEEDER_EINVAL,
					 "config %s:%u: expected 'key = value', got '%s'", name, lineno, s);
			break;
		}
		*eq = '\0';
		char *k = trim(s);
		char *v = trim(eq + 1);
		size_t vl = strlen(v);
		if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
			v[vl - 1] = '\0';
			v++;
		}
		const struct key *key = key_find(k, strlen(k));
		if (!key) {
			rc = status_fail(err, errlen, FEEDER_EINVAL, "config %s:%u: unknown key '%s'",
					 name, lineno, k);
			break;
		}
		snprintf(where, sizeof where, "config %s:%u: %s", name, lineno, key->name);
		rc = apply(cfg, key, v, where, quota_set, err, errlen);
		if (rc)
			break;
		line = nl ? nl + 1 : NULL;
	}
	free(copy);
	return rc;
}

int config_parse_text(struct config *cfg, const char *name, const char *text, char *err,
		      size_t errlen)
{
	int quota_set = 0;
	return parse_text(cfg, name, text, &quota_set, err, errlen);
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
		return status_fail(err, errlen, FEEDER_EINVAL, "config %s: is not a regular file (%s)",
				   path, S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO"
				   : S_ISSOCK(st.st_mode) ? "a socket" : "a device");
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
			return status_fail(err, errlen, FEEDER_EINVAL, "config %s: larger than %u bytes",
					   path, CONFIG_FILE_MAX);
		}
	}
	close(fd);
	buf[got] = '\0';
	if (memchr(buf, '\0', got)) {
		free(buf);
		return status_fail(err, errlen, FEEDER_EINVAL, "config %s: contains a NUL byte", path);
	}
	*out = buf;
	return 0;
}

void config_usage(FILE *f)
{
	fprintf(f, "usage: feederd [--config PATH] [--check-config] [OPTIONS]\n"
		   "Serve decoded batches of packed datasets over shared memory.\n\n"
		   "  %-29s config file (default %s)\n"
		   "  %-29s validate the configuration, print it, exit\n",
		"--config PATH",
		CONFIG_DEFAULT_FILE, "--check-config");
	for (size_t i = 0; i < N_KEYS; i++) {
		char flag[64], arg[80];
		flag_name(&keys[i], flag, sizeof flag);
		snprintf(arg, sizeof arg, "%s VALUE", flag);
		fprintf(f, "  %-29s %s\n", arg, keys[i].help);
	}
	fprintf(f, "  --help, --version\n\n"
		   "Flags override the environment, which overrides the file.\n");
}

static void print_ids(FILE *f, const char *key, const unsigned *ids, unsigned n)
{
	fprintf(f, "%s = ", key);
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "%s%u", i ? "," : "", ids[i]);
	fputc('\n', f);
}

/* A string value as the parser reads it back: one layer of surrounding
 * double quotes is stripped and the value trimmed, so a value that starts or
 * ends with a quote or with white space is printed inside quotes (found by
 * tests/fuzz, fuzz_config: printing was not stable). */
static void print_str(FILE *f, const char *key, const char *v)
{
	size_t n = strlen(v);
	int quote = n && (v[0] == '"' || v[n - 1] == '"' || isspace((unsigned char)v[0]) ||
			  isspace((unsigned char)v[n - 1]));
	fprintf(f, quote ? "%s = \"%s\"\n" : "%s = %s\n", key, v);
}

void config_print(const struct config *cfg, FILE *f)
{
	fprintf(f, "# effective configuration (file: %s)\n[feederd]\n",
		cfg->config_path[0] ? cfg->config_path : "none");
	print_str(f, "socket", cfg->socket_path);
	print_str(f, "datasets", cfg->datasets_dir);
	fprintf(f, "workers = %u\n", cfg->workers);
	fprintf(f, "memory_limit = %" PRIu64 "\n", cfg->memory_limit);
	fprintf(f, "max_clients = %u\n", cfg->max_clients);
	fprintf(f, "log_level = %s\n", config_log_level_name(cfg->log_level));
	fprintf(f, "client_quota = %" PRIu64 "\n", cfg->client_quota);
	fprintf(f, "max_streams_per_client = %u\n", cfg->max_streams_per_client);
	fprintf(f, "max_slots = %u\n", cfg->max_slots);
	fprintf(f, "max_message = %" PRIu32 "\n", cfg->max_message);
	print_str(f, "socket_group", cfg->socket_group);
	unsigned ids[CONFIG_MAX_IDS];
	for (unsigned i = 0; i < cfg->n_allow_uids; i++)
		ids[i] = (unsigned)cfg->allow_uids[i];
	print_ids(f, "allow_users", ids, cfg->n_allow_uids);
	for (unsigned i = 0; i < cfg->n_allow_gids; i++)
		ids[i] = (unsigned)cfg->allow_gids[i];
	print_ids(f, "allow_groups", ids, cfg->n_allow_gids);
	fprintf(f, "gpu = %d\n", cfg->gpu);
	fprintf(f, "max_clients_per_user = %u\n", cfg->max_clients_per_user);
	if (cfg->reserved_connections != CONFIG_RESERVED_AUTO)
		fprintf(f, "reserved_connections = %u\n", cfg->reserved_connections);
	else
		fprintf(f, "reserved_connections = auto\n");
	for (unsigned i = 0; i < cfg->n_admin_gids; i++)
		ids[i] = (unsigned)cfg->admin_gids[i];
	print_ids(f, "admin_groups", ids, cfg->n_admin_gids);
	fprintf(f, "hello_timeout = %u\n", cfg->hello_timeout);
	fprintf(f, "max_queued = %" PRIu64 "\n", cfg->max_queued);
	fprintf(f, "shutdown_drain = %u\n", cfg->shutdown_drain);
	fprintf(f, "starvation_warn = %u\n", cfg->starvation_warn);
	fprintf(f, "starvation_after = %u\n", cfg->starvation_after);
	print_str(f, "metrics_listen", cfg->metrics_listen);
}

/* One pass over argv with getopt_long (options stop at the first operand,
 * so argv is never permuted: it is the caller's). With apply_values = 0 it
 * only validates flag names and finds --config, --check-config, --help and
 * --version; with 1 it applies every key flag on top of cfg. */
enum { OPT_HELP = 'h', OPT_VERSION = 'V', OPT_CONFIG = 1000, OPT_CHECK, OPT_KEY0 };
static int scan_args(int argc, char *const argv[], struct config *cfg, int apply_values,
		     const char **config_path, int *exit_now, int *quota_set, char *err,
		     size_t errlen)
{
	/* Long option names live as long as names[] (this frame). */
	char names[N_KEYS][64];
	struct option longopts[N_KEYS + 5];
	size_t n = 0;
	longopts[n++] = (struct option){ "help", no_argument, NULL, OPT_HELP };
	longopts[n++] = (struct option){ "version", no_argument, NULL, OPT_VERSION };
	longopts[n++] = (struct option){ "config", required_argument, NULL, OPT_CONFIG };
	longopts[n++] = (struct option){ "check-config", no_argument, NULL, OPT_CHECK };
	for (size_t k = 0; k < N_KEYS; k++) {
		flag_name(&keys[k], names[k], sizeof names[k]);
		longopts[n++] = (struct option){ names[k] + 2, required_argument, NULL,
						 OPT_KEY0 + (int)k };
	}
	longopts[n] = (struct option){ NULL, 0, NULL, 0 };
	optind = 0; /* GNU: a full re-initialisation, for the second pass */
	opterr = 0;
	int opt, li = -1;
	while ((opt = getopt_long(argc, argv, "+:hV", longopts, &li)) != -1) {
		/* getopt_long takes an unambiguous prefix ("--work") for the
		 * option; a configuration flag must be spelled out. */
		if (li >= 0 && opt != '?' && opt != ':') {
			const char *a = optarg && optind >= 2 && optarg == argv[optind - 1]
						? argv[optind - 2] : argv[optind - 1];
			size_t nl = strlen(longopts[li].name);
			if (strncmp(a, "--", 2) || strncmp(a + 2, longopts[li].name, nl) ||
			    (a[2 + nl] && a[2 + nl] != '='))
				return status_fail(err, errlen, FEEDER_EINVAL,
						   "command line: unknown flag '%.*s' (see --help)",
						   (int)strcspn(a, "="), a);
		}
		li = -1;
		switch (opt) {
		case OPT_HELP:
			if (!apply_values && !*exit_now)
				*exit_now = 1;
			break;
		case OPT_VERSION:
			if (!apply_values && !*exit_now)
				*exit_now = 2;
			break;
		case OPT_CHECK:
			cfg->check_only = 1;
			break;
		case OPT_CONFIG:
			if (!*optarg)
				return status_fail(err, errlen, FEEDER_EINVAL,
						   "command line: --config: empty path");
			*config_path = optarg;
			break;
		case ':':
			return status_fail(err, errlen, FEEDER_EINVAL, "command line: %s needs a value",
					   argv[optind - 1]);
		case '?':
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "command line: unknown flag '%s' (see --help)", argv[optind - 1]);
		default:
			if (apply_values) {
				const struct key *k = &keys[opt - OPT_KEY0];
				char where[96];
				snprintf(where, sizeof where, "command line: %s", names[opt - OPT_KEY0]);
				int rc = apply(cfg, k, optarg, where, quota_set, err, errlen);
				if (rc)
					return rc;
			}
		}
	}
	if (optind < argc)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "command line: unexpected argument '%s' (see --help)", argv[optind]);
	return 0;
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
		if (IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127))
			return 0;
		every = IN6_IS_ADDR_UNSPECIFIED(&a6);
	} else if (!every) {
		return 0; /* localhost, or a name judged once bound */
	}
	snprintf(why, whylen, "metrics_listen = %s serves /metrics on %s: the daemon's figures "
		 "are visible from other machines (127.0.0.1:PORT or a unix socket path keeps them "
		 "on this one)", spec, every ? "every network interface" : "an address that is "
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
		return status_fail(err, errlen, -ENOTDIR, "datasets directory '%s': not a directory",
				   cfg->datasets_dir);
	return 0;
}

int config_load(int argc, char *const argv[], struct config *cfg, char *err, size_t errlen)
{
	config_defaults(cfg);
	const char *path = NULL;
	int exit_now = 0, quota_set = 0;
	int rc = scan_args(argc, argv, cfg, 0, &path, &exit_now, &quota_set, err, errlen);
	if (rc)
		return rc;
	if (exit_now == 1) {
		config_usage(stdout);
		return CONFIG_EXIT;
	}
	if (exit_now == 2) {
		printf("feederd %s\n", FEEDER_VERSION);
		return CONFIG_EXIT;
	}
	int explicit_file = path != NULL;
	if (!path)
		path = CONFIG_DEFAULT_FILE;
	char *text = NULL;
	rc = read_file(path, &text, err, errlen);
	if (rc == -ENOENT && !explicit_file) {
		rc = 0;
	} else if (rc) {
		return rc;
	} else {
		snprintf(cfg->config_path, sizeof cfg->config_path, "%s", path);
		rc = parse_text(cfg, path, text, &quota_set, err, errlen);
		free(text);
		if (rc)
			return rc;
	}
	const char *env = getenv("FEEDER_SOCKET");
	if (env && *env) {
		rc = apply(cfg, &keys[0], env, "environment: FEEDER_SOCKET", &quota_set, err, errlen);
		if (rc)
			return rc;
	}
	rc = scan_args(argc, argv, cfg, 1, &path, &exit_now, &quota_set, err, errlen);
	if (rc)
		return rc;
	if (!quota_set)
		cfg->client_quota = cfg->memory_limit;
	else if (cfg->client_quota > cfg->memory_limit)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "client_quota (%" PRIu64 " bytes) is larger than memory_limit "
				   "(%" PRIu64 " bytes)", cfg->client_quota, cfg->memory_limit);
	/* Not set: 4, but never more than a quarter of max_clients. */
	if (cfg->reserved_connections == CONFIG_RESERVED_AUTO)
		cfg->reserved_connections = cfg->max_clients / 4 < 4 ? cfg->max_clients / 4 : 4;
	if (cfg->reserved_connections >= cfg->max_clients)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "reserved_connections (%u) leaves none of max_clients (%u) for "
				   "other users", cfg->reserved_connections, cfg->max_clients);
	if (cfg->check_only)
		return check_paths(cfg, err, errlen);
	return 0;
}
