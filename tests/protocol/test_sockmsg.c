/* test_sockmsg.c — proto/sockmsg.c over a real SEQPACKET socketpair: message
 * boundaries, a descriptor passed by SCM_RIGHTS arrives and works, an
 * oversized message is reported (not silently cut), an unexpected descriptor
 * is refused and closed, and a closed peer reads as FEEDER_ECLOSED. */
#include "check.h"
#include "protocol.h"
#include "sockmsg.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

static int count_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			n++;
	return n;
}

int main(void)
{
	char err[256];
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	int base = count_fds();

	/* Two messages keep their boundaries. */
	struct proto_msg m = { .type = PROTO_RELEASE }, d;
	m.u.release.stream = 5;
	m.u.release.slot = 1;
	CHECK(sockmsg_send_msg(sv[0], &m, -1, err, sizeof(err)) == 0);
	m.u.release.slot = 2;
	CHECK(sockmsg_send_msg(sv[0], &m, -1, err, sizeof(err)) == 0);
	int fd = 123;
	CHECK(sockmsg_recv_msg(sv[1], &d, &fd, err, sizeof(err)) == 0);
	CHECK(d.type == PROTO_RELEASE && d.u.release.slot == 1 && fd == -1);
	CHECK(sockmsg_recv_msg(sv[1], &d, NULL, err, sizeof(err)) == 0);
	CHECK(d.u.release.slot == 2);

	/* A memfd travels and shares its content. */
	int mfd = memfd_create("ring", MFD_CLOEXEC);
	CHECK(mfd >= 0 && ftruncate(mfd, 4096) == 0);
	uint8_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	CHECK(p != MAP_FAILED);
	p[100] = 0xab;
	m.type = PROTO_GOODBYE;
	m.u.goodbye.reason = 0;
	CHECK(sockmsg_send_msg(sv[0], &m, mfd, err, sizeof(err)) == 0);
	CHECK(sockmsg_recv_msg(sv[1], &d, &fd, err, sizeof(err)) == 0);
	CHECK(d.type == PROTO_GOODBYE && fd >= 0 && fd != mfd);
	CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
	uint8_t *q = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(q != MAP_FAILED && q[100] == 0xab);
	munmap(q, 4096);
	close(fd);

	/* A descriptor the receiver did not ask for is refused and closed. */
	CHECK(sockmsg_send_msg(sv[0], &m, mfd, err, sizeof(err)) == 0);
	CHECK(sockmsg_recv_msg(sv[1], &d, NULL, err, sizeof(err)) == FEEDER_EPROTO);
	munmap(p, 4096);
	close(mfd);
	CHECKF(count_fds() == base, "descriptors leaked: %d, was %d", count_fds(), base);

	/* An oversized message is reported, and the next one still reads. */
	uint8_t big[PROTO_MAX_MESSAGE + 100];
	memset(big, 0x5a, sizeof(big));
	CHECK(sockmsg_send(sv[0], big, sizeof(big), -1, err, sizeof(err)) == 0);
	CHECK(sockmsg_recv_msg(sv[1], &d, NULL, err, sizeof(err)) == FEEDER_EPROTO);
	CHECK(strstr(err, "larger"));
	/* Garbage of a normal size is a decode error. */
	CHECK(sockmsg_send(sv[0], big, 40, -1, err, sizeof(err)) == 0);
	CHECK(sockmsg_recv_msg(sv[1], &d, NULL, err, sizeof(err)) == FEEDER_EPROTO);
	CHECK(strstr(err, "magic"));

	/* Non-blocking receive with nothing waiting. */
	uint8_t small[64];
	CHECK(fcntl(sv[1], F_SETFL, O_NONBLOCK) == 0);
	CHECK(sockmsg_recv(sv[1], small, sizeof(small), NULL, err, sizeof(err)) == -EAGAIN);

	/* The peer goes away: end of stream, and sending fails cleanly. */
	close(sv[0]);
	CHECK(sockmsg_recv(sv[1], small, sizeof(small), NULL, err, sizeof(err)) == FEEDER_ECLOSED);
	CHECK(sockmsg_send(sv[1], small, 16, -1, err, sizeof(err)) == FEEDER_ECLOSED);
	close(sv[1]);
	return 0;
}
