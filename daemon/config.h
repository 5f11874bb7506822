/* config.h — feederd's configuration: defaults, INI file, environment and
 * command line, merged and validated in one call.
 *
 * feederd's main() calls config_load() once before doing anything else. The
 * sources are applied in increasing precedence:
 *
 *   built-in defaults < config file < environment (FEEDER_SOCKET) < flags
 *
 * The file is /etc/feeder/feederd.conf unless `--config PATH` names another
 * (a missing default file is fine and means "all defaults"; a missing file
 * named by --config is an error). Its format is INI: `key = value` lines,
 * `#` or `;` comments, blank lines, and an optional `[feederd]` section
 * header (any other section is an error). Keys are the long flag names with
 * '-' written as '_' (e.g. `memory_limit = 4G` and `--memory-limit 4G`).
 *
 * Every problem is reported as a single line in err, without a program-name
 * prefix, e.g.
 *   config /etc/feeder/feederd.conf:3: unknown key 'wrokers'
 *   command line: unknown flag '--wrokers'
 *   command line: --workers: '0' is not a number from 1 to 1024
 * and main() prints it as "feederd: <err>" and exits 2.
 *
 * Sizes accept a plain byte count or a K/M/G/T suffix (powers of 1024,
 * optionally followed by "iB" or "B"). workers, client_quota and
 * reserved_connections also take "auto" (their default): online CPUs,
 * memory_limit, and min(4, max_clients / 4), worked out once every source
 * is read. The keys, their types, defaults and ranges are one table, keys[]
 * in config.c. The watchdog and notify socket are not configured here:
 * feederd reads WATCHDOG_USEC / NOTIFY_SOCKET through libsystemd, as
 * systemd sets them. */
#ifndef FEEDER_CONFIG_H
#define FEEDER_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "feeder_types.h"
#include "s3.h" /* S3_MAX_BUCKET, S3_MAX_KEY */

#define CONFIG_DEFAULT_FILE "/etc/feeder/feederd.conf"
#define CONFIG_DEFAULT_DATASETS FEEDER_DEFAULT_DATASETS
/* systemd's CacheDirectory=feeder (dist/feederd.service) */
#define CONFIG_DEFAULT_CACHE "/var/cache/feeder"
/* sockaddr_un.sun_path is 108 bytes including the NUL. */
#define CONFIG_SOCKET_MAX 108
#define CONFIG_PATH_MAX 4096
#define CONFIG_NAME_MAX 64
/* Entries in allow_users / allow_groups. */
#define CONFIG_MAX_IDS 32

/* config_load's positive result: --help or --version was printed to stdout;
 * main() should exit 0 without starting. */
#define CONFIG_EXIT 1

struct config {
	char config_path[CONFIG_PATH_MAX];   /* the file that was read ("" if none) */
	char socket_path[CONFIG_SOCKET_MAX]; /* --socket; used unless socket-activated */
	char datasets_dir[CONFIG_PATH_MAX];  /* --datasets: one sub-directory per dataset */
	unsigned workers;                    /* --workers: decode threads (default: cores) */
	uint64_t memory_limit;               /* --memory-limit: all stream rings together, bytes */
	unsigned max_clients;                /* --max-clients: concurrent connections */
	int log_level;         /* --log-level: syslog priority 0..7 (LOG_ERR..LOG_DEBUG) */
	uint64_t client_quota; /* --client-quota: ring bytes one client may hold */
	unsigned max_streams_per_client; /* --max-streams-per-client */
	unsigned max_slots;              /* --max-slots: largest prefetch depth of a stream */
	uint32_t max_message;            /* --max-message: largest accepted message, bytes */
	char socket_group
		[CONFIG_NAME_MAX]; /* --socket-group: group owning the socket ("" = ours) */
	gid_t socket_gid;          /* socket_group resolved; (gid_t)-1 when "" */
	/* --allow-users / --allow-groups: comma-separated names or numeric ids.
	 * Both empty = every peer that can open the socket (mode 0660) is served;
	 * otherwise a peer is served if its uid is listed or its gid is listed
	 * (root, uid 0, is always served). Names are resolved at load time. */
	uid_t allow_uids[CONFIG_MAX_IDS];
	unsigned n_allow_uids;
	gid_t allow_gids[CONFIG_MAX_IDS];
	unsigned n_allow_gids;
	int gpu; /* --gpu: CUDA device for GPU pipelines, -1 = none */
	/* Connections: one uid holds at most max_clients_per_user; the last
	 * reserved_connections of max_clients are for root and admin_groups
	 * (who also see every client's streams in STATUS); a connection that
	 * has not said HELLO after hello_timeout seconds is closed; a client
	 * with more than max_queued bytes of replies unread is dropped. */
	unsigned max_clients_per_user;    /* --max-clients-per-user */
	unsigned reserved_connections;    /* --reserved-connections */
	gid_t admin_gids[CONFIG_MAX_IDS]; /* --admin-groups */
	unsigned n_admin_gids;
	unsigned hello_timeout; /* --hello-timeout, seconds */
	uint64_t max_queued;    /* --max-queued, bytes */
	/* On SIGTERM/SIGINT clients are told (GOODBYE) and have this many
	 * seconds to let go of their batches before the daemon exits; it exits
	 * sooner once every client has disconnected. */
	unsigned shutdown_drain; /* --shutdown-drain, seconds (0: none) */
	/* A trainer waiting more than starvation_warn % of its time for data
	 * for starvation_after seconds gets one warning in the log. */
	unsigned starvation_warn;  /* --starvation-warn, percent (0: off) */
	unsigned starvation_after; /* --starvation-after, seconds */
	/* Prometheus metrics: "" off, "HOST:PORT", or an absolute unix path. */
	char metrics_listen[CONFIG_SOCKET_MAX];
	/* Datasets read from object storage: "NAME=s3://BUCKET/PREFIX, ..."
	 * (config_remotes splits it), their shards cached in cache_dir, at most
	 * cache_limit bytes, fetched by `fetchers` threads whose requests try
	 * fetch_tries times; an epoch of such a dataset is shuffled in blocks
	 * of shuffle_block shards; their manifests are read again every
	 * remote_check seconds. */
	char remote[CONFIG_PATH_MAX];
	char cache_dir[CONFIG_PATH_MAX];
	uint64_t cache_limit;
	unsigned fetchers;
	unsigned fetch_tries;
	unsigned shuffle_block;
	unsigned remote_check;
	int check_only; /* --check-config: validate, print, exit 0 */
};

/* The most remote datasets one daemon serves. */
#define CONFIG_MAX_REMOTES 64
#define CONFIG_URL_MAX 1100

struct config_remote {
	char name[FEEDER_DATASET_MAX];
	char url[CONFIG_URL_MAX]; /* s3://BUCKET[/PREFIX] */
	char bucket[S3_MAX_BUCKET];
	char prefix[S3_MAX_KEY]; /* no leading or trailing '/' */
};

/* Split a `remote` value ("NAME=s3://BUCKET/PREFIX, ...", blanks around
 * entries and around '=' ignored) into out (at most CONFIG_MAX_REMOTES):
 * names checked like dataset names and unique, URLs split by s3_url_parse
 * (a valid bucket name, a prefix that fits). Returns how many (>= 0), or
 * FEEDER_EINVAL with the entry named in err. */
int config_remotes(const char *spec, struct config_remote *out, char *err, size_t errlen);

/* Fill cfg with the built-in defaults, as config_load starts. The "auto"
 * keys (workers, client_quota, reserved_connections) hold all ones until
 * config_load resolves them; config_print writes them as "auto". Never
 * fails. */
void config_defaults(struct config *cfg);

/* Build cfg from defaults, the config file, the environment and argv (see
 * above). argv is not modified (getopt_long stops at the first operand, so it
 * permutes nothing); getopt's globals are reset on each call.
 * Returns 0 (run), CONFIG_EXIT (help/version printed; exit 0), or a negative
 * code (FEEDER_EINVAL for a bad key, flag or value, -ENOENT/-EACCES/... for an
 * unreadable file) with one line in err. cfg is fully written in every case
 * that returns 0. */
int config_load(int argc, char *const argv[], struct config *cfg, char *err, size_t errlen);

/* Parse one INI text (the contents of a file named name, used in messages)
 * on top of cfg. Exposed for tests and for reloading. Returns 0 or
 * FEEDER_EINVAL with "config NAME:LINE: ..." in err. */
int config_parse_text(struct config *cfg, const char *name, const char *text, char *err,
		      size_t errlen);

/* Name of a syslog level ("err", "info", ...); "?" if out of range. */
const char *config_log_level_name(int level);

/* Write the effective configuration as a valid config file (what
 * --check-config prints). */
void config_print(const struct config *cfg, FILE *f);

/* Whether metrics_listen = spec serves /metrics beyond this machine, as
 * far as the address written says (a name other than localhost is not
 * resolved: feederd judges the address it binds at start): 1 with a
 * sentence in why for every interface or an address that is not loopback,
 * else 0 (loopback, a unix socket, off). */
int config_metrics_exposed(const char *spec, char *why, size_t whylen);

/* The --help text. */
void config_usage(FILE *f);

#endif
