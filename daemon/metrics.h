/* metrics.h — Prometheus metrics over HTTP (libmicrohttpd), opt-in with
 * metrics_listen.
 *
 * The event loop writes the whole exposition text once a tick
 * (metrics_publish, from server.c) and the listener's own thread answers
 * every GET /metrics with the latest copy: scraping never takes a lock the
 * loop or the workers hold for more than a memcpy, and a slow, idle or
 * hostile HTTP client only occupies the listener (which bounds connections,
 * request memory and idle time). Built from metrics.c with libmicrohttpd,
 * or metrics_none.c without it (metrics_listen is then refused). */
#ifndef FEEDER_METRICS_H
#define FEEDER_METRICS_H

#include <stddef.h>

struct metrics;

/* Listen on spec ("HOST:PORT", or an absolute unix socket path, replaced
 * if it exists). 0 and *out, or a negative code with a sentence. *bound
 * (may be NULL) gets the address as bound, with the port chosen for :0. */
int metrics_start(struct metrics **out, const char *spec, char *bound, size_t boundlen, char *err,
		  size_t errlen);
/* Stop the listener, close its connections, remove a unix socket. */
void metrics_stop(struct metrics *m);
/* The text every scrape now gets (copied). */
void metrics_publish(struct metrics *m, const char *text, size_t len);

#endif
