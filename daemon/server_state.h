/* server_state.h — what feederd's event loop (server.c) shares with the
 * listener (listener.c) and the client sessions (session.c): one struct
 * server, touched only by the loop's thread (the worker pool has its own
 * lock; see pool.h).
 *
 * epoll events carry a pointer to a `struct watch` that is the first member
 * of whatever they are about (a session, a refused connection) or one of the
 * loop's fixed descriptors, so the loop tells them apart by kind. */
#ifndef FEEDER_SERVER_STATE_H
#define FEEDER_SERVER_STATE_H

#include "config.h"
#include "feeder_types.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum watch_kind {
	WATCH_LISTEN = 1,
	WATCH_SIGNAL,
	WATCH_WAKE,
	WATCH_TIMER,
	WATCH_SESSION,
	WATCH_REFUSED,
	WATCH_DATASETS,
	WATCH_RETAINED
};
struct watch {
	int kind;
};

struct session;
struct refused;
struct registry;
struct pool;
struct stream;

/* Counters per (dataset, pipeline) of the streams that have ended, for
 * the metrics (metrics_text.c). */
struct metrics_series {
	char dataset[FEEDER_DATASET_MAX];
	uint32_t pipeline;
	uint64_t samples, batches, replacements;
	uint64_t wait_us, compute_us;
	double stage_s[FEEDER_STAGES];
	unsigned open; /* live copies only: open streams */
};

struct metrics;
struct retained;
struct shard_cache;

/* Seconds over which the workers' busy share is reported. */
#define SERVER_BUSY_WINDOW 10

struct server {
	struct config cfg;
	int epfd, listen_fd, sig_fd, wake_fd, timer_fd;
	int bound; /* we created cfg.socket_path (remove at exit) */
	struct watch w_listen, w_signal, w_wake, w_timer, w_datasets;
	struct registry *reg;
	struct remote *remote; /* the remote datasets (remote.h), or NULL */
	struct pool *pool;
	uint64_t page;
	struct session *sessions;
	unsigned nsessions;
	uint32_t next_session, next_stream;
	struct stream **zombies; /* closed, waiting for in-flight tasks */
	size_t nzombies, zcap;
	uint64_t mem_used; /* ring bytes of every open stream */
	uint64_t start_us, last_tick_us, last_status_us, last_check_us;
	uint64_t watchdog_us;
	int stop;
	/* After SIGTERM/SIGINT: clients were told (GOODBYE); the loop runs on
	 * until they have all gone or until drain_end_us. */
	int draining;
	uint64_t drain_end_us;
	/* Streams of clients gone during the drain whose device-ring slots
	 * they may still read: freed only when the daemon exits. */
	struct stream **kept;
	size_t nkept, kcap;
	/* Slots of streams ended while their client held them (a dropped
	 * connection): their pages live on in the client's mapping, so they
	 * stay charged to mem_used until its process exits. */
	struct retained *retained;
	/* totals of streams already gone, and counters of the loop */
	uint64_t done_batches, done_samples, done_replacements, done_decode_errors;
	double done_stage_s[FEEDER_STAGES]; /* worker seconds of streams that are gone */
	/* worker seconds in all, one snapshot a tick, for workers_busy */
	double busy_snap[SERVER_BUSY_WINDOW + 1], busy_snap_t[SERVER_BUSY_WINDOW + 1];
	unsigned busy_snaps, busy_next;
	double workers_busy;     /* share of the workers' time, last SERVER_BUSY_WINDOW s */
	struct metrics *metrics; /* the /metrics listener, or NULL */
	struct metrics_series *series;
	size_t nseries, cap_series;
	uint64_t protocol_errors;
	uint64_t dropped_clients; /* sessions dropped for a limit or a deadline */
	double rate;
	/* Device-ring releases or parked device rings to poll (gpu_ring.h):
	 * while set, the loop wakes every millisecond instead of sleeping. */
	int releases_pending;
	struct refused *refused; /* connections refused, waiting for the hang-up */
	unsigned nrefused;
	int gpu;                   /* --gpu: CUDA ordinal, GPU_SLOT_EMULATED, or -1 */
	struct shard_cache *cache; /* remote datasets' shards, or NULL when none is configured */
};

/* Monotonic microseconds: the loop's clock. */
uint64_t server_now_us(void);
/* Make the loop service every stream again soon (after this turn). */
void server_wake(struct server *srv);

/* Keep a closed stream until its workers let go of it (the loop frees it
 * once stream_inflight is 0), or free it now. Updates the totals. */
void server_stream_gone(struct server *srv, struct stream *s);
/* Worker seconds per stage of every stream, live or gone (pool lock held). */
void server_stage_seconds(struct server *srv, double stage_s[FEEDER_STAGES]);
void server_stream_zombie(struct server *srv, struct stream *s);
/* Charge `bytes` of ring pages that process pid still maps to mem_used
 * until it exits (watched by a pidfd); nothing when it is already gone. */
void server_retain(struct server *srv, pid_t pid, uint64_t bytes);
/* Free s when the daemon exits, not before (its client may still read its
 * device ring during the drain). */
void server_stream_keep(struct server *srv, struct stream *s);

#endif
