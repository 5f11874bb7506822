/* report_client.c — a client that says what it likes about its data wait:
 * it speaks the protocol itself (not through libfeeder, which measures),
 * opens a jpeg stream and releases every batch with RELEASE reporting the
 * totals WAIT_US and COMPUTE_US as given (2^64 - 1 and such), RELEASES
 * times; then prints "ready", holds the stream HOLD_MS and hangs up.
 *
 *   report_client SOCKET DATASET WAIT_US COMPUTE_US RELEASES HOLD_MS
 *
 * test_metrics_reports.sh checks what feederd makes of it. */
#include "check.h"
#include "harness.h"
#include "protocol.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void recv_one(int fd, struct proto_msg *m, int *mfd)
{
	CHECKF(harness_recv(fd, m, mfd) == 0, "%s", harness_err);
	CHECKF(m->type != PROTO_ERROR, "feederd: %s", m->u.error.message);
}

/* OPEN_STREAM of 16x16 crops; the stream's id. */
static uint32_t open_stream(int fd, const char *dataset)
{
	struct proto_msg m = { .type = PROTO_OPEN_STREAM };
	proto_opts_jpeg(&m.u.open.opts, 16, 1);
	snprintf(m.u.open.opts.dataset, sizeof(m.u.open.opts.dataset), "%s", dataset);
	m.u.open.opts.batch = 4;
	m.u.open.opts.slots = 2;
	m.u.open.opts.epochs = 1000;
	m.u.open.opts.dtype = FEEDER_DTYPE_U8;
	m.u.open.tag = 1;
	harness_send(fd, &m);
	int mfd = -1;
	recv_one(fd, &m, &mfd);
	CHECKF(m.type == PROTO_STREAM_OPENED, "OPEN_STREAM answered with %s",
	       proto_type_name(m.type));
	if (mfd >= 0)
		close(mfd); /* the ring is not read: only the reports matter */
	return m.u.opened.stream;
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: report_client SOCKET DATASET WAIT_US COMPUTE_US RELEASES "
				"HOLD_MS\n");
		return 2;
	}
	uint64_t wait_us = strtoull(argv[3], NULL, 0), compute_us = strtoull(argv[4], NULL, 0);
	int releases = atoi(argv[5]), hold_ms = atoi(argv[6]);
	int fd = harness_hello(argv[1], "report_client", NULL);
	uint32_t stream = open_stream(fd, argv[2]);
	for (int n = 0; n < releases;) {
		struct proto_msg m;
		recv_one(fd, &m, NULL);
		if (m.type != PROTO_BATCH_READY)
			continue;
		struct proto_msg r = { .type = PROTO_RELEASE };
		r.u.release.stream = stream;
		r.u.release.slot = m.u.ready.slot;
		r.u.release.wait_us = wait_us;
		r.u.release.compute_us = compute_us;
		harness_send(fd, &r);
		n++;
	}
	printf("ready\n");
	fflush(stdout);
	usleep((useconds_t)hold_ms * 1000);
	close(fd);
	return 0;
}
