/* hostile_client.c — the neighbours of the soak (tests/soak.sh):
 * clients that try to hold the daemon's resources while it serves others.
 *
 *   hostile_client SOCKET DATASET MODE SECONDS
 *
 *   idle    keep connecting without ever saying HELLO, up to 40 at a time
 *           (each is closed by the daemon's hello_timeout, or refused)
 *   noread  say HELLO, then ask for STATUS over and over and never read a
 *           reply (the daemon must drop it at max_queued, and it reconnects)
 *   keepfd  open a stream, let it fill, close it and keep its memfd; at the
 *           end every kept memfd must hold no pages (the daemon punched
 *           them out): prints "kept N memfds, B bytes still in them"
 *
 *   keepheld  open a stream, take the announcements of both its slots, hang
 *           up without releasing them or closing it, and keep the memfd:
 *           their pages must stay (a trainer that lost its connection still
 *           holds those batches), charged to memory_limit until this
 *           process exits. Prints "held: slot_size S, pages P" after the
 *           hang-up, and at the end "held: pages P, slots intact" (exit 0)
 *           or what changed (exit 1). tests/fault/test_kept_memfd.sh.
 *
 * Runs for SECONDS, then prints one line about what it did. Exit 0, or 1
 * when keepfd finds pages left or a check fails. */
#include "harness.h"

#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *dataset;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* OPEN_STREAM of the dataset at 64 x 64 with 2 slots on fd: 0 once
 * STREAM_OPENED came within 5 s (in m, the ring in *mfd), else -1. */
static int open_stream(int fd, uint32_t tag, int train, uint32_t batch, struct proto_msg *m,
		       int *mfd)
{
	*m = (struct proto_msg){ .type = PROTO_OPEN_STREAM };
	m->u.open.tag = tag;
	proto_opts_jpeg(&m->u.open.opts, 64, train);
	snprintf(m->u.open.opts.dataset, sizeof(m->u.open.opts.dataset), "%s", dataset);
	m->u.open.opts.batch = batch;
	m->u.open.opts.slots = 2;
	harness_send(fd, m);
	*mfd = -1;
	if (harness_recv_within(fd, m, mfd, 5000) == 0 && m->type == PROTO_STREAM_OPENED &&
	    *mfd >= 0)
		return 0;
	if (*mfd >= 0)
		close(*mfd);
	return -1;
}

static int run_idle(double end)
{
	int fds[40];
	unsigned made = 0;
	while (now_s() < end) {
		if (made >= 40)
			close(fds[made % 40]); /* the oldest */
		fds[made++ % 40] = harness_connect_raw(harness.sock);
		usleep(50000);
	}
	for (unsigned i = 0; i < made && i < 40; i++)
		close(fds[i]);
	printf("idle: %u connections that never said HELLO\n", made);
	return 0;
}

static int run_noread(double end)
{
	unsigned rounds = 0;
	unsigned long sent = 0;
	struct proto_msg m = { .type = PROTO_STATUS };
	m.u.status.what = PROTO_STATUS_DATASETS;
	uint8_t buf[PROTO_MAX_MESSAGE];
	int len = proto_encode(&m, buf, sizeof(buf));
	while (now_s() < end) {
		int fd = harness_hello(harness.sock, "hostile_client", NULL);
		CHECK(fcntl(fd, F_SETFL, O_NONBLOCK) == 0);
		rounds++;
		/* Ask until the daemon hangs up on us (or a while passed). */
		double stop = now_s() + 3;
		while (now_s() < end && now_s() < stop) {
			if (send(fd, buf, (size_t)len, MSG_NOSIGNAL) == len) {
				sent++;
				continue;
			}
			if (errno != EAGAIN)
				break;
			struct pollfd p = { .fd = fd, .events = POLLOUT };
			poll(&p, 1, 20);
		}
		close(fd);
	}
	printf("noread: %u connections, %lu requests whose replies were never read\n", rounds,
	       sent);
	return 0;
}

static unsigned long long memfd_bytes(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 ? (unsigned long long)st.st_blocks * 512 : 0;
}

static int run_keepfd(double end)
{
	enum { KEEP = 64 };
	int kept[KEEP];
	int nkept = 0;
	unsigned streams = 0;
	int fd = harness_hello(harness.sock, "hostile_client", NULL), mfd;
	while (now_s() < end && nkept < KEEP) {
		struct proto_msg m;
		if (open_stream(fd, ++streams, 1, 8, &m, &mfd) != 0) {
			usleep(200000); /* refused (over quota?): try again later */
			continue;
		}
		uint32_t id = m.u.opened.stream;
		/* Let it fill, then close it and keep the memfd. */
		for (int ready = 0; ready < 2 && harness_recv_within(fd, &m, NULL, 5000) == 0;)
			ready += m.type == PROTO_BATCH_READY;
		m = (struct proto_msg){ .type = PROTO_CLOSE_STREAM };
		m.u.close.stream = id;
		harness_send(fd, &m);
		while (harness_recv_within(fd, &m, NULL, 5000) == 0 && m.type != PROTO_STREAM_END)
			;
		kept[nkept++] = mfd;
		usleep(100000);
	}
	close(fd);
	/* The daemon frees a closed stream once its workers let go of it. */
	usleep(500000);
	unsigned long long left = 0;
	for (int i = 0; i < nkept; i++) {
		left += memfd_bytes(kept[i]);
		close(kept[i]);
	}
	printf("keepfd: kept %d memfds of closed streams, %llu bytes still in them\n", nkept, left);
	return left ? 1 : 0;
}

/* Whether slot i of the ring mapped at ring (slot_size apart) says batch i
 * of epoch 0. */
static int slots_intact(const uint8_t *ring, uint64_t slot_size)
{
	for (uint32_t i = 0; i < 2; i++) {
		const struct proto_slot_header *h =
			(const struct proto_slot_header *)(ring + PROTO_RING_HEADER +
							   i * slot_size);
		if (h->epoch != 0 || h->batch_index != i || h->samples == 0)
			return 0;
	}
	return 1;
}

static int run_keepheld(double end)
{
	int fd = harness_hello(harness.sock, "hostile_client", NULL), mfd;
	struct proto_msg m;
	CHECKF(open_stream(fd, 1, 0, 4, &m, &mfd) == 0, "keepheld: the stream was not opened");
	uint64_t slot_size = m.u.opened.slot_size, ring_size = m.u.opened.ring_size;
	for (int ready = 0; ready < 2; ready += m.type == PROTO_BATCH_READY)
		CHECKF(harness_recv(fd, &m, NULL) == 0, "keepheld: %s", harness_err);
	close(fd);
	uint8_t *ring = mmap(NULL, ring_size, PROT_READ, MAP_SHARED, mfd, 0);
	CHECKF(ring != MAP_FAILED, "keepheld: mmap: %s", strerror(errno));
	usleep(500000); /* the daemon has dropped the connection */
	printf("held: slot_size %llu, pages %llu\n", (unsigned long long)slot_size,
	       memfd_bytes(mfd));
	while (now_s() < end)
		usleep(50000);
	int ok = slots_intact(ring, slot_size) && memfd_bytes(mfd) >= 2 * slot_size;
	printf("held: pages %llu, slots %s\n", memfd_bytes(mfd), ok ? "intact" : "blanked");
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: hostile_client SOCKET DATASET idle|noread|keepfd|keepheld "
				"SECONDS\n");
		return 2;
	}
	snprintf(harness.sock, sizeof(harness.sock), "%s", argv[1]);
	dataset = argv[2];
	double end = now_s() + atof(argv[4]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[3], "idle"))
		return run_idle(end);
	if (!strcmp(argv[3], "noread"))
		return run_noread(end);
	if (!strcmp(argv[3], "keepfd"))
		return run_keepfd(end);
	if (!strcmp(argv[3], "keepheld"))
		return run_keepheld(end);
	fprintf(stderr, "hostile_client: unknown mode '%s'\n", argv[3]);
	return 2;
}
