/* feederctl.h — what feederctl.c (the commands) and feederctl_top.c (the
 * live view) share: the names and numbers they print the same way. */
#ifndef FEEDER_FEEDERCTL_H
#define FEEDER_FEEDERCTL_H

#include "feeder.h"

#include <stddef.h>
#include <stdint.h>

/* "12.3 MiB" */
void fctl_human_bytes(uint64_t b, char *buf, size_t len);
const char *fctl_pipeline_name(uint32_t p);
/* "cpu", "gpu (device memory)", "auto -> gpu (cpu 12.1 ms, gpu 3.2 ms a batch)" */
void fctl_placement_text(const struct feeder_stream_status *s, char *buf, size_t len);
/* "12 %" or "-" (not reported: a client older than protocol 4) */
void fctl_share_text(float share, char *buf, size_t len);
extern const char *const fctl_stage_names[FEEDER_STAGES];

/* The live view: one frame a second (interval_ms) until 'q' or a signal on
 * a terminal; with once, one frame on stdout. 0, or 1 with the error said
 * on stderr. */
int fctl_top(struct feeder *f, const char *path, int once, int interval_ms, int timeout_ms);

#endif
