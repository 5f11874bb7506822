/* metrics_text.h — feederd's figures as Prometheus exposition text (see
 * metrics_text.c), for metrics.h's listener. Event loop only. */
#ifndef FEEDER_METRICS_TEXT_H
#define FEEDER_METRICS_TEXT_H

#include "server_state.h"

/* The whole text, malloc'd into *out (*len bytes). 0, or -1 without
 * memory. Takes the pool lock. */
int metrics_text(struct server *srv, uint64_t now_us, char **out, size_t *len);
/* Keep an ending stream's totals in its dataset's counters. */
void metrics_text_stream_gone(struct server *srv, struct stream *s, uint64_t now_us);

#endif
