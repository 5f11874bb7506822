/* datawait_client.c — a trainer whose data wait is known: it streams
 * BATCHES batches of a jpeg dataset (RandomResizedCrop SIZE, f32), sleeping
 * SLEEP_MS after each (its "compute"), measures itself how long it waited
 * in feeder_stream_next and how long it computed, then asks feederd for its
 * own stream and prints one JSON object with both views:
 *   {"client_share": ..., "daemon_share_total": ..., "daemon_share_10s": ...,
 *    "trainer_reports": ..., "stage_seconds": {...}, "workers_busy": ...}
 * Usage: datawait_client SOCKET DATASET BATCHES SLEEP_MS SIZE BATCH */
#include "feeder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr,
			"usage: datawait_client SOCKET DATASET BATCHES SLEEP_MS SIZE BATCH\n");
		return 2;
	}
	int batches = atoi(argv[3]), sleep_ms = atoi(argv[4]);
	struct feeder *f;
	if (feeder_connect(argv[1], 10000, &f)) {
		fprintf(stderr, "datawait_client: %s\n", feeder_last_error(NULL));
		return 1;
	}
	struct feeder_stream_opts o;
	feeder_stream_opts_init(&o);
	feeder_stream_opts_set_dataset(&o, argv[2]);
	o.pipeline = FEEDER_PIPE_JPEG;
	o.jpeg.height = o.jpeg.width = (uint32_t)atoi(argv[5]);
	o.batch = (uint32_t)atoi(argv[6]);
	o.dtype = FEEDER_DTYPE_F32;
	o.epochs = 1000;
	o.slots = 4;
	struct feeder_stream *s;
	if (feeder_stream_open(f, &o, 30000, &s)) {
		fprintf(stderr, "datawait_client: %s\n", feeder_last_error(f));
		return 1;
	}
	double wait = 0, compute = 0, last = 0;
	for (int k = 0; k < batches; k++) {
		double t0 = now_s();
		if (last)
			compute += t0 - last;
		struct feeder_batch b;
		if (feeder_stream_next(s, 60000, &b)) {
			fprintf(stderr, "datawait_client: %s\n", feeder_last_error(f));
			return 1;
		}
		double t1 = now_s();
		wait += t1 - t0;
		last = t1;
		struct timespec ts = { sleep_ms / 1000, (long)(sleep_ms % 1000) * 1000000 };
		nanosleep(&ts, NULL);
		feeder_batch_release(s, &b);
	}
	/* The daemon has the totals of the last RELEASE; give it a tick. */
	struct timespec ts = { 1, 200000000 };
	nanosleep(&ts, NULL);
	struct feeder_stream_status *ss;
	size_t n;
	struct feeder_status st;
	if (feeder_get_streams(f, 10000, &ss, &n) || feeder_get_status(f, 10000, &st)) {
		fprintf(stderr, "datawait_client: %s\n", feeder_last_error(f));
		return 1;
	}
	struct feeder_stream_info info;
	feeder_stream_info(s, &info);
	const struct feeder_stream_status *me = NULL;
	for (size_t i = 0; i < n; i++)
		if (ss[i].stream == info.id)
			me = &ss[i];
	if (!me) {
		fprintf(stderr, "datawait_client: feederd does not list stream %u\n", info.id);
		return 1;
	}
	printf("{\"client_share\": %.4f, \"daemon_share_total\": %.4f, \"daemon_share_10s\": %.4f, "
	       "\"trainer_reports\": %u, \"workers_busy\": %.4f, \"stage_seconds\": [%.6f, %.6f, "
	       "%.6f, %.6f, %.6f], \"bytes_per_s\": %.1f, \"slots\": %u}\n",
	       wait / (wait + compute), (double)me->wait_share_total, (double)me->wait_share_10s,
	       me->trainer_reports, st.workers_busy, me->stage_s[0], me->stage_s[1], me->stage_s[2],
	       me->stage_s[3], me->stage_s[4], me->bytes_per_s, me->slots);
	free(ss);
	feeder_stream_close(s);
	feeder_disconnect(f);
	return 0;
}
