/* server.c — feederd's event loop (see server.h): one epoll over the
 * listening socket (listener.c), the client sessions (session.c), a
 * signalfd, the worker pool's eventfd and a timerfd; servicing the streams
 * after worker completions; and the once-a-second tick (rates, STATUS=
 * lines, the watchdog, HELLO deadlines, datasets changed on disk). */
#include "server.h"

#include "gpu_pipeline.h"
#include "gpu_ring.h"
#include "gpu_slot.h"
#include "listener.h"
#include "log.h"
#include "mapguard.h"
#include "remote.h"
#include "metrics.h"
#include "metrics_text.h"
#include "notify.h"
#include "pool.h"
#include "registry.h"
#include "server_state.h"
#include "session.h"
#include "status.h"
#include "stream.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

uint64_t server_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static double mib(uint64_t b)
{
	return (double)b / (1024.0 * 1024.0);
}

void server_wake(struct server *srv)
{
	uint64_t one = 1;
	/* A full eventfd counter still wakes the loop: nothing is lost. */
	if (write(srv->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("waking the loop: %s", strerror(errno));
}

/* ---- streams that are gone -------------------------------------------- */

void server_stream_gone(struct server *srv, struct stream *s)
{
	srv->mem_used -= stream_ring_bytes(s);
	stream_totals(s, &srv->done_batches, &srv->done_samples, &srv->done_replacements,
		      &srv->done_decode_errors);
	stream_stage_seconds(s, srv->done_stage_s);
	if (srv->metrics)
		metrics_text_stream_gone(srv, s, server_now_us());
	stream_destroy(s);
	/* A device ring the GPU still writes is parked, not freed: poll. */
	if (gpu_ring_collect())
		srv->releases_pending = 1;
}

/* Append s to a growing list of streams; 0, or -ENOMEM (s not added). */
static int stream_list_add(struct stream ***list, size_t *n, size_t *cap, struct stream *s)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct stream **nl = realloc(*list, ncap * sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		*list = nl;
		*cap = ncap;
	}
	(*list)[(*n)++] = s;
	return 0;
}

void server_stream_zombie(struct server *srv, struct stream *s)
{
	/* Cannot track it: leak the ring rather than free it under a running
	 * worker. */
	if (stream_list_add(&srv->zombies, &srv->nzombies, &srv->zcap, s))
		log_err("stream %u: out of memory while closing; its ring is leaked", stream_id(s));
}

void server_stream_keep(struct server *srv, struct stream *s)
{
	/* Freeing its device ring now is what the drain avoids; leaking it
	 * until the exit, a moment away, is not worse. */
	if (stream_list_add(&srv->kept, &srv->nkept, &srv->kcap, s))
		log_err("stream %u: out of memory while draining; its ring is leaked",
			stream_id(s));
}

/* ---- ring pages that outlive their stream ------------------------------ */

struct retained {
	struct watch w; /* first: epoll data points here */
	struct retained *next;
	int pidfd;
	pid_t pid;
	uint64_t bytes;
};

void server_retain(struct server *srv, pid_t pid, uint64_t bytes)
{
	if (bytes == 0 || pid <= 0)
		return;
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0) {
		/* ESRCH: it has exited, and its mapping with it. */
		if (errno != ESRCH)
			log_warn("pid %d keeps %.1f MiB of ring pages that cannot be watched "
				 "(pidfd_open: %s); they are not charged",
				 (int)pid, mib(bytes), strerror(errno));
		return;
	}
	struct retained *r = calloc(1, sizeof(*r));
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = r };
	if (r)
		r->w.kind = WATCH_RETAINED;
	if (!r || epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		log_warn("pid %d keeps %.1f MiB of ring pages that cannot be watched; they are "
			 "not charged",
			 (int)pid, mib(bytes));
		free(r);
		close(fd);
		return;
	}
	r->pidfd = fd;
	r->pid = pid;
	r->bytes = bytes;
	r->next = srv->retained;
	srv->retained = r;
	srv->mem_used += bytes;
	log_info("pid %d holds batches of its closed streams: %.1f MiB stay charged until it exits",
		 (int)pid, mib(bytes));
}

static void retained_free(struct server *srv, struct retained *r)
{
	for (struct retained **pp = &srv->retained; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	srv->mem_used -= r->bytes;
	close(r->pidfd);
	free(r);
}

/* The process that kept them exited: its ring pages are gone. */
static void retained_exit(struct server *srv, struct watch *w)
{
	struct retained *r = (struct retained *)w;
	log_debug("pid %d exited: %.1f MiB of ring pages released", (int)r->pid, mib(r->bytes));
	retained_free(srv, r);
}

/* Free the closed streams whose last task has finished. */
static void reap_zombies(struct server *srv)
{
	size_t keep = 0, ndrained = 0;
	struct stream *drained[64];
	pool_lock(srv->pool);
	for (size_t i = 0; i < srv->nzombies; i++) {
		if (stream_inflight(srv->zombies[i]) == 0 && ndrained < 64)
			drained[ndrained++] = srv->zombies[i];
		else
			srv->zombies[keep++] = srv->zombies[i];
	}
	srv->nzombies = keep;
	pool_unlock(srv->pool);
	for (size_t i = 0; i < ndrained; i++)
		server_stream_gone(srv, drained[i]);
	/* More than one turn's worth: come back for the rest. */
	if (ndrained == 64)
		server_wake(srv);
}

/* After worker completions: every session sends what is ready and
 * refills. */
static void service_all(struct server *srv)
{
	uint64_t now = server_now_us();
	/* Draining: nothing more is announced (GOODBYE was the last word). */
	for (struct session *c = srv->sessions; c && !srv->draining; c = c->next)
		if (!c->dead)
			session_service(c, now);
	reap_zombies(srv);
}

static void drop_dead(struct server *srv)
{
	for (struct session *c = srv->sessions, *next; c; c = next) {
		next = c->next;
		if (c->dead)
			session_drop(c);
	}
}

void server_stage_seconds(struct server *srv, double stage_s[FEEDER_STAGES])
{
	for (int i = 0; i < FEEDER_STAGES; i++)
		stage_s[i] = srv->done_stage_s[i];
	for (struct session *c = srv->sessions; c; c = c->next)
		for (size_t i = 0; i < c->nstreams; i++)
			stream_stage_seconds(c->streams[i], stage_s);
	for (size_t i = 0; i < srv->nzombies; i++)
		stream_stage_seconds(srv->zombies[i], stage_s);
}

/* ---- the tick ---------------------------------------------------------- */

static const char *const stage_names[FEEDER_STAGES] = { "reading records", "decoding",
							"resampling and converting",
							"computing features", "the GPU" };

/* The workers' busy share over the last `seconds` (at most the window):
 * their seconds of work (all stages) against their wall time, from the
 * newest snapshot back to the first one at least that old. */
static double busy_over(const struct server *srv, unsigned seconds)
{
	unsigned n = SERVER_BUSY_WINDOW + 1;
	if (srv->busy_snaps < 2)
		return -1; /* not measured yet */
	unsigned newest = (srv->busy_next + n - 1) % n;
	unsigned back = seconds < srv->busy_snaps - 1 ? seconds : srv->busy_snaps - 1;
	unsigned from = (newest + n - back) % n;
	double dt = srv->busy_snap_t[newest] - srv->busy_snap_t[from];
	unsigned workers = pool_workers(srv->pool);
	double b = dt > 0 && workers
			   ? (srv->busy_snap[newest] - srv->busy_snap[from]) / (dt * workers)
			   : 0;
	return b > 1 ? 1 : b;
}

/* The workers' busy share over the window. Pool lock held. */
static void measure_busy(struct server *srv, uint64_t now)
{
	double st[FEEDER_STAGES], sum = 0;
	server_stage_seconds(srv, st);
	for (int i = 0; i < FEEDER_STAGES; i++)
		sum += st[i];
	unsigned n = SERVER_BUSY_WINDOW + 1;
	srv->busy_snap[srv->busy_next] = sum;
	srv->busy_snap_t[srv->busy_next] = (double)now / 1e6;
	srv->busy_next = (srv->busy_next + 1) % n;
	if (srv->busy_snaps < n)
		srv->busy_snaps++;
	srv->workers_busy = busy_over(srv, SERVER_BUSY_WINDOW);
}

/* A trainer starving for data for starvation_after seconds: one warning
 * naming the stream, its client, the stage that takes the workers' time
 * and whether more workers would help. Pool lock held. */
static void starvation(struct server *srv, struct session *c, struct stream *s, uint64_t now)
{
	double share;
	if (!stream_starving(s, now, srv->cfg.starvation_warn / 100.0,
			     (uint64_t)srv->cfg.starvation_after * 1000000u, &share))
		return;
	double st[FEEDER_STAGES] = { 0 }, sum = 0;
	stream_stage_seconds(s, st);
	int top = 0;
	for (int i = 0; i < FEEDER_STAGES; i++) {
		sum += st[i];
		if (st[i] > st[top])
			top = i;
	}
	/* busy over the starving time itself (a window reaching back before it
	 * would count idle seconds of before) */
	unsigned secs = srv->cfg.starvation_after < SERVER_BUSY_WINDOW ? srv->cfg.starvation_after
								       : SERVER_BUSY_WINDOW;
	double busy = busy_over(srv, secs);
	const char *advice;
	char busy_text[32] = "not measured yet";
	if (busy >= 0)
		snprintf(busy_text, sizeof busy_text, "%.0f %%", 100 * busy);
	if (busy < 0)
		advice = "too early to say whether more workers would help";
	else if (busy >= 0.9)
		advice = "the workers are all busy: more workers (--workers) would help";
	else if (top == FEEDER_STAGE_READ)
		advice =
			"the workers are not all busy and reading dominates: the disk is the limit";
	else
		advice = "the workers are not all busy: more slots (prefetch) may help, or the "
			 "trainer's own input handling is the limit";
	log_warn("stream %u (client pid %d, dataset '%s'): the trainer waited %.0f %% of the last "
		 "%d s for data; workers busy %s; %.0f %% of the stream's work is %s; %s",
		 stream_id(s), (int)c->pid, stream_dataset(s)->name, 100 * share, 10, busy_text,
		 sum > 0 ? 100 * st[top] / sum : 0, stage_names[top], advice);
}

/* Connections that did not say HELLO in time hold a slot of max_clients
 * for nothing: close them, saying why. */
static void hello_deadlines(struct server *srv, uint64_t now)
{
	uint64_t limit = (uint64_t)srv->cfg.hello_timeout * 1000000u;
	for (struct session *c = srv->sessions; c; c = c->next) {
		if (c->hello || c->dead || now - c->since_us < limit)
			continue;
		char text[PROTO_TEXT_MAX];
		snprintf(text, sizeof(text), "no HELLO within %u s of connecting (hello_timeout)",
			 srv->cfg.hello_timeout);
		log_warn("client %u (pid %d, uid %u): %s; disconnecting", c->id, (int)c->pid,
			 (unsigned)c->uid, text);
		srv->dropped_clients++;
		session_error(c, FEEDER_ETIMEDOUT, 0, 0, 1, text);
	}
}

static void tick(struct server *srv)
{
	uint64_t now = server_now_us();
	double dt = (double)(now - srv->last_tick_us) / 1e6;
	srv->last_tick_us = now;
	unsigned streams = 0;
	double rate = 0;
	pool_lock(srv->pool);
	measure_busy(srv, now);
	for (struct session *c = srv->sessions; c; c = c->next)
		for (size_t i = 0; i < c->nstreams; i++) {
			stream_tick(c->streams[i], dt, now);
			rate += stream_rate(c->streams[i]);
			streams++;
			starvation(srv, c, c->streams[i], now);
		}
	pool_unlock(srv->pool);
	srv->rate = rate;
	hello_deadlines(srv, now);
	/* The watchdog may tick faster; the status line needs no more than
	 * one update a second. */
	if (now - srv->last_status_us >= 900000) {
		srv->last_status_us = now;
		notify_status("%u clients, %u streams, %.0f samples/s, %.0f MiB of rings",
			      srv->nsessions, streams, srv->rate, mib(srv->mem_used));
	}
	if (srv->watchdog_us)
		notify_watchdog();
	if (srv->metrics) {
		char *text;
		size_t len;
		if (metrics_text(srv, now, &text, &len) == 0) {
			metrics_publish(srv->metrics, text, len);
			free(text);
		}
	}
	/* Datasets removed or replaced on disk: about once a second. */
	if (now - srv->last_check_us >= 900000) {
		srv->last_check_us = now;
		if (registry_check(srv->reg))
			service_all(srv);
	}
}

static void handle_signal(struct server *srv)
{
	struct signalfd_siginfo si;
	while (read(srv->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			char err[512];
			int rc = registry_rescan(srv->reg, err, sizeof(err));
			if (rc)
				log_err("SIGHUP: rescanning the datasets failed: %s", err);
			else
				log_notice("SIGHUP: %zu datasets served", registry_count(srv->reg));
			/* End the streams of versions that are no longer served. */
			service_all(srv);
		} else if (!srv->stop) {
			log_notice("%s: shutting down", strsignal((int)si.ssi_signo));
			srv->stop = 1;
		} else {
			log_notice("%s: shutting down without waiting for the clients",
				   strsignal((int)si.ssi_signo));
			srv->drain_end_us = 0;
		}
	}
}

/* ---- setup ------------------------------------------------------------- */

static int watch_fd(struct server *srv, int fd, struct watch *w, int kind, char *err, size_t errlen)
{
	w->kind = kind;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = w };
	if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
		return status_fail(err, errlen, -errno, "epoll_ctl: %s", strerror(errno));
	return 0;
}

/* --gpu N: the device must be there (a clear start-up error otherwise).
 * FEEDERD_GPU_EMULATE=1 runs GPU placement on the host instead, for tests
 * on machines without a GPU (gpu_slot.h). */
static int gpu_check(struct server *srv, char *err, size_t errlen)
{
	int want = srv->cfg.gpu;
	if (want < 0)
		return 0;
	const char *emu = getenv("FEEDERD_GPU_EMULATE");
	if (emu && strcmp(emu, "1") == 0) {
		srv->gpu = GPU_SLOT_EMULATED;
		log_warn(
			"--gpu %d: the GPU is emulated on the host (FEEDERD_GPU_EMULATE=1), for tests "
			"only: no CUDA kernel, copy or IPC runs",
			want);
		return 0;
	}
	char why[256];
	int n = gpu_pipeline_devices(why, sizeof(why));
	if (n < 0)
		return status_fail(err, errlen, FEEDER_ENODEV, "--gpu %d: %s", want, why);
	if (want >= n)
		return status_fail(err, errlen, FEEDER_ENODEV,
				   "--gpu %d: this machine has %d CUDA device%s (0..%d)", want, n,
				   n == 1 ? "" : "s", n - 1);
	srv->gpu = want;
	log_info("preprocessing on GPU %d for streams with placement gpu or auto", want);
	return 0;
}

/* The timer: figures once a second, the watchdog at half its interval if
 * that is shorter. */
static int arm_timer(struct server *srv, char *err, size_t errlen)
{
	uint64_t period = 1000000;
	srv->watchdog_us = notify_watchdog_usec();
	if (srv->watchdog_us && srv->watchdog_us / 2 < period)
		period = srv->watchdog_us / 2 ? srv->watchdog_us / 2 : 1;
	struct itimerspec its = {
		.it_interval = { (time_t)(period / 1000000), (long)(period % 1000000) * 1000 },
		.it_value = { (time_t)(period / 1000000), (long)(period % 1000000) * 1000 },
	};
	if (timerfd_settime(srv->timer_fd, 0, &its, NULL) != 0)
		return status_fail(err, errlen, -errno, "timerfd_settime: %s", strerror(errno));
	return 0;
}

int server_create(struct server **out, const struct config *cfg, char *err, size_t errlen)
{
	struct server *srv = calloc(1, sizeof(*srv));
	if (!srv)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	srv->cfg = *cfg;
	srv->epfd = srv->listen_fd = srv->sig_fd = srv->wake_fd = srv->timer_fd = -1;
	srv->gpu = -1;
	srv->start_us = srv->last_tick_us = server_now_us();
	long pg = sysconf(_SC_PAGESIZE);
	srv->page = pg > 0 ? (uint64_t)pg : 4096;
	int rc;

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if ((rc = pthread_sigmask(SIG_BLOCK, &set, NULL)) != 0) {
		rc = status_fail(err, errlen, -rc, "pthread_sigmask: %s", strerror(rc));
		goto fail;
	}
	srv->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	srv->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	srv->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	srv->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (srv->sig_fd < 0 || srv->wake_fd < 0 || srv->timer_fd < 0 || srv->epfd < 0) {
		rc = status_fail(err, errlen, -errno, "event descriptors: %s", strerror(errno));
		goto fail;
	}
	/* Before any dataset is mapped: I/O errors on a mapping must never
	 * take the daemon down (mapguard.h). */
	if ((rc = mapguard_install(err, errlen)) || (rc = gpu_check(srv, err, errlen)) ||
	    (rc = remote_open(&srv->remote, cfg, cfg->workers, err, errlen)) ||
	    !(srv->cache = remote_cache(srv->remote), 1) ||
	    (rc = registry_open(&srv->reg, cfg->datasets_dir, cfg->workers, srv->remote, err,
				errlen)) ||
	    (rc = listener_open(srv, err, errlen)) ||
	    (rc = pool_create(&srv->pool, cfg->workers, srv->wake_fd, err, errlen)))
		goto fail;
	if ((rc = watch_fd(srv, srv->listen_fd, &srv->w_listen, WATCH_LISTEN, err, errlen)) ||
	    (rc = watch_fd(srv, srv->sig_fd, &srv->w_signal, WATCH_SIGNAL, err, errlen)) ||
	    (rc = watch_fd(srv, srv->wake_fd, &srv->w_wake, WATCH_WAKE, err, errlen)) ||
	    (rc = watch_fd(srv, srv->timer_fd, &srv->w_timer, WATCH_TIMER, err, errlen)) ||
	    (rc = arm_timer(srv, err, errlen)))
		goto fail;
	if (registry_fd(srv->reg) >= 0 &&
	    (rc = watch_fd(srv, registry_fd(srv->reg), &srv->w_datasets, WATCH_DATASETS, err,
			   errlen)))
		goto fail;
	if (cfg->metrics_listen[0]) {
		char bound[160];
		if ((rc = metrics_start(&srv->metrics, cfg->metrics_listen, bound, sizeof bound,
					err, errlen)))
			goto fail;
		log_info("metrics: serving /metrics on %s", bound);
		char *text;
		size_t len;
		if (metrics_text(srv, server_now_us(), &text, &len) == 0) {
			metrics_publish(srv->metrics, text, len);
			free(text);
		}
	}
	log_info("feederd %s: %u workers, %zu datasets from %s, memory limit %.0f MiB",
		 FEEDER_VERSION, cfg->workers, registry_count(srv->reg), cfg->datasets_dir,
		 mib(cfg->memory_limit));
	*out = srv;
	return 0;
fail:
	server_destroy(srv);
	return rc;
}

/* Read an eventfd or timerfd's counter so that it stops being readable. */
static void drain(int fd)
{
	uint64_t v;
	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_warn("reading an event counter: %s", strerror(errno));
}

/* A graceful stop: no new connections, no new batches; every client is
 * told (GOODBYE) and keeps what it holds: host batches live on in its
 * mapping of the ring whatever the daemon does, device batches only while
 * the daemon keeps the device memory, which is until the drain ends. */
static void begin_drain(struct server *srv)
{
	srv->draining = 1;
	srv->drain_end_us = server_now_us() + (uint64_t)srv->cfg.shutdown_drain * 1000000u;
	notify_stopping();
	listener_close(srv);
	pool_lock(srv->pool);
	for (struct session *c = srv->sessions; c; c = c->next)
		for (size_t i = 0; i < c->nstreams; i++)
			stream_set_closing(c->streams[i]);
	pool_unlock(srv->pool);
	struct proto_msg bye = { .type = PROTO_GOODBYE };
	for (struct session *c = srv->sessions; c; c = c->next)
		session_send(c, &bye, -1);
	if (srv->nsessions)
		log_info(
			"%u clients told; waiting up to %u s (shutdown_drain) for them to let go of "
			"their batches",
			srv->nsessions, srv->cfg.shutdown_drain);
}

/* Whether the loop is over: not stopped, or stopped and the drain done
 * (every client gone and no device ring kept for one, or out of time). */
static int loop_done(struct server *srv, uint64_t now)
{
	if (!srv->stop)
		return 0;
	if (!srv->draining)
		begin_drain(srv);
	if (srv->nsessions == 0 && srv->nkept == 0)
		return 1;
	if (now < srv->drain_end_us)
		return 0;
	if (srv->nsessions || srv->nkept)
		log_notice("shutdown_drain over: %u clients still connected, %zu device rings kept "
			   "for clients gone; their device batches end now",
			   srv->nsessions, srv->nkept);
	return 1;
}

/* epoll_wait's timeout: poll device releases every millisecond, wake for
 * the end of a drain, else sleep until something happens. */
static int loop_timeout(const struct server *srv)
{
	if (srv->releases_pending)
		return 1;
	if (!srv->draining)
		return -1;
	uint64_t now = server_now_us();
	return now >= srv->drain_end_us ? 0 : (int)((srv->drain_end_us - now) / 1000 + 1);
}

int server_run(struct server *srv, char *err, size_t errlen)
{
	notify_ready();
	notify_status("0 clients, 0 streams, %zu datasets", registry_count(srv->reg));
	struct epoll_event evs[64];
	while (!loop_done(srv, server_now_us())) {
		/* A device-ring release is an event on the client's GPU, which
		 * nothing signals to this loop: poll for it, briefly. */
		int n = epoll_wait(srv->epfd, evs, 64, loop_timeout(srv));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return status_fail(err, errlen, -errno, "epoll_wait: %s", strerror(errno));
		}
		int wake = 0;
		for (int i = 0; i < n; i++) {
			struct watch *w = evs[i].data.ptr;
			uint32_t ev = evs[i].events;
			switch (w->kind) {
			case WATCH_LISTEN:
				listener_accept(srv);
				break;
			case WATCH_SIGNAL:
				handle_signal(srv);
				break;
			case WATCH_WAKE:
				drain(srv->wake_fd);
				wake = 1;
				break;
			case WATCH_TIMER:
				drain(srv->timer_fd);
				tick(srv);
				break;
			case WATCH_SESSION: {
				struct session *c = (struct session *)w;
				if (ev & EPOLLOUT)
					session_flush(c);
				if (ev & EPOLLIN)
					session_input(c);
				if (!(ev & EPOLLIN) && (ev & (EPOLLHUP | EPOLLRDHUP | EPOLLERR)))
					c->dead = 1;
				break;
			}
			case WATCH_REFUSED:
				listener_linger_event(srv, w, ev);
				break;
			case WATCH_RETAINED:
				retained_exit(srv, w);
				break;
			case WATCH_DATASETS:
				/* A served data file changed: end its streams now. */
				if (registry_on_event(srv->reg))
					wake = 1;
				break;
			}
		}
		/* Completions first, then sessions that went away (whose
		 * pointers later events in this batch no longer use). */
		if (srv->releases_pending) {
			srv->releases_pending = gpu_ring_collect() > 0;
			wake = 1;
		}
		if (wake)
			service_all(srv);
		drop_dead(srv);
		/* The timer's tick wakes this loop at least once a second. */
		if (srv->refused)
			listener_sweep(srv, server_now_us());
	}
	/* The clients left let go in server_destroy: their host batches stay
	 * (the pages are in their mappings), their device batches end. */
	return 0;
}

void server_destroy(struct server *srv)
{
	if (!srv)
		return;
	/* Sessions left (the drain ran out, or server_run failed): close
	 * them; their streams become zombies until the workers are joined
	 * below. */
	srv->drain_end_us = 0;
	while (srv->sessions && srv->pool)
		session_drop(srv->sessions);
	pool_destroy(srv->pool);
	srv->pool = NULL;
	listener_sweep(srv, 0);
	/* Only now, the drain over and no worker left, the device rings go
	 * (gpu_ring_destroy; one the GPU still writes is left to the exit). */
	for (size_t i = 0; i < srv->nzombies; i++)
		server_stream_gone(srv, srv->zombies[i]);
	free(srv->zombies);
	for (size_t i = 0; i < srv->nkept; i++)
		server_stream_gone(srv, srv->kept[i]);
	free(srv->kept);
	while (srv->retained)
		retained_free(srv, srv->retained);
	gpu_slot_reap_wait();
	metrics_stop(srv->metrics);
	free(srv->series);
	registry_close(srv->reg);
	remote_close(srv->remote);
	listener_close(srv);
	for (int *fd = (int[]){ srv->epfd, srv->sig_fd, srv->wake_fd, srv->timer_fd, -2 };
	     *fd != -2; fd++)
		if (*fd >= 0)
			close(*fd);
	free(srv);
}
