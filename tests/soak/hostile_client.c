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
 * when keepfd finds pages left. */
#include "protocol.h"
#include "sockmsg.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static const char *sock_path, *dataset;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int dial(void)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A message within ms milliseconds: 0, or -1. */
static int recv_within(int fd, struct proto_msg *m, int *mfd, int ms)
{
	char err[256];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (poll(&p, 1, ms) != 1)
		return -1;
	return sockmsg_recv_msg(fd, m, mfd, err, sizeof(err)) == 0 ? 0 : -1;
}

static int hello(int fd)
{
	char err[256];
	struct proto_msg m = { .type = PROTO_HELLO };
	m.u.hello.pid = (uint32_t)getpid();
	snprintf(m.u.hello.agent, sizeof(m.u.hello.agent), "hostile_client");
	if (sockmsg_send_msg(fd, &m, -1, err, sizeof(err)) != 0)
		return -1;
	return recv_within(fd, &m, NULL, 5000) == 0 && m.type == PROTO_WELCOME ? 0 : -1;
}

static int run_idle(double end)
{
	int fds[40];
	int n = 0;
	unsigned made = 0;
	while (now_s() < end) {
		if (n == 40) {
			close(fds[0]);
			memmove(fds, fds + 1, sizeof(fds[0]) * (size_t)--n);
		}
		int fd = dial();
		if (fd >= 0) {
			fds[n++] = fd;
			made++;
		}
		usleep(50000);
	}
	while (n)
		close(fds[--n]);
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
		int fd = dial();
		if (fd < 0 || hello(fd) != 0) {
			if (fd >= 0)
				close(fd);
			usleep(100000);
			continue;
		}
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

static int run_keepfd(double end)
{
	enum { KEEP = 64 };
	int kept[KEEP];
	int nkept = 0;
	unsigned streams = 0;
	char err[256];
	int fd = -1;
	while (now_s() < end && nkept < KEEP) {
		if (fd < 0 && ((fd = dial()) < 0 || hello(fd) != 0)) {
			if (fd >= 0)
				close(fd);
			fd = -1;
			usleep(100000);
			continue;
		}
		struct proto_msg m = { .type = PROTO_OPEN_STREAM };
		m.u.open.tag = ++streams;
		proto_opts_jpeg(&m.u.open.opts, 64, 1);
		snprintf(m.u.open.opts.dataset, sizeof(m.u.open.opts.dataset), "%s", dataset);
		m.u.open.opts.batch = 8;
		m.u.open.opts.slots = 2;
		if (sockmsg_send_msg(fd, &m, -1, err, sizeof(err)) != 0) {
			close(fd);
			fd = -1;
			continue;
		}
		int mfd = -1;
		if (recv_within(fd, &m, &mfd, 5000) != 0 || m.type != PROTO_STREAM_OPENED ||
		    mfd < 0) {
			if (mfd >= 0)
				close(mfd);
			usleep(200000); /* refused (over quota?): try again later */
			continue;
		}
		uint32_t id = m.u.opened.stream;
		/* Let it fill, then close it and keep the memfd. */
		for (int ready = 0; ready < 2 && recv_within(fd, &m, NULL, 5000) == 0;)
			ready += m.type == PROTO_BATCH_READY;
		m = (struct proto_msg){ .type = PROTO_CLOSE_STREAM };
		m.u.close.stream = id;
		if (sockmsg_send_msg(fd, &m, -1, err, sizeof(err)) == 0)
			while (recv_within(fd, &m, NULL, 5000) == 0 && m.type != PROTO_STREAM_END)
				;
		kept[nkept++] = mfd;
		usleep(100000);
	}
	if (fd >= 0)
		close(fd);
	/* The daemon frees a closed stream once its workers let go of it. */
	usleep(500000);
	unsigned long long left = 0;
	for (int i = 0; i < nkept; i++) {
		struct stat st;
		if (fstat(kept[i], &st) == 0)
			left += (unsigned long long)st.st_blocks * 512;
		close(kept[i]);
	}
	printf("keepfd: kept %d memfds of closed streams, %llu bytes still in them\n", nkept, left);
	return left ? 1 : 0;
}

static unsigned long long memfd_bytes(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 ? (unsigned long long)st.st_blocks * 512 : 0;
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
	char err[256];
	int fd = dial();
	if (fd < 0 || hello(fd) != 0) {
		printf("keepheld: no connection\n");
		return 1;
	}
	struct proto_msg m = { .type = PROTO_OPEN_STREAM };
	m.u.open.tag = 1;
	proto_opts_jpeg(&m.u.open.opts, 64, 0);
	snprintf(m.u.open.opts.dataset, sizeof(m.u.open.opts.dataset), "%s", dataset);
	m.u.open.opts.batch = 4;
	m.u.open.opts.slots = 2;
	int mfd = -1;
	if (sockmsg_send_msg(fd, &m, -1, err, sizeof(err)) != 0 ||
	    recv_within(fd, &m, &mfd, 5000) != 0 || m.type != PROTO_STREAM_OPENED || mfd < 0) {
		printf("keepheld: the stream was not opened\n");
		return 1;
	}
	uint64_t slot_size = m.u.opened.slot_size, ring_size = m.u.opened.ring_size;
	for (int ready = 0; ready < 2;) {
		if (recv_within(fd, &m, NULL, 10000) != 0) {
			printf("keepheld: the slots were not announced\n");
			return 1;
		}
		ready += m.type == PROTO_BATCH_READY;
	}
	close(fd);
	uint8_t *ring = mmap(NULL, ring_size, PROT_READ, MAP_SHARED, mfd, 0);
	if (ring == MAP_FAILED) {
		printf("keepheld: mmap: %s\n", strerror(errno));
		return 1;
	}
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
	sock_path = argv[1];
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
