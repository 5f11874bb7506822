/* sockmsg.c — one SEQPACKET message per call, with optional SCM_RIGHTS
 * (see sockmsg.h). */
#include "sockmsg.h"

#include "protocol.h"
#include "status.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int sockmsg_send(int sock, const void *buf, size_t len, int pass_fd, char *err, size_t errlen)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (pass_fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	}
	ssize_t n;
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		int e = errno;
		if (e == EAGAIN || e == EWOULDBLOCK)
			return -EAGAIN;
		if (e == EPIPE || e == ECONNRESET || e == ENOTCONN)
			return status_fail(err, errlen, FEEDER_ECLOSED,
					   "peer closed the connection");
		return status_fail(err, errlen, -e, "sending a message failed: %s", strerror(e));
	}
	if ((size_t)n != len)
		return status_fail(err, errlen, -EIO, "message of %zu bytes was sent short (%zd)",
				   len, n);
	return 0;
}

int sockmsg_send_msg(int sock, const struct proto_msg *m, int pass_fd, char *err, size_t errlen)
{
	uint8_t buf[PROTO_MAX_MESSAGE];
	int n = proto_encode(m, buf, sizeof(buf));
	if (n < 0)
		return status_fail(err, errlen, n, "message type %u cannot be encoded", m->type);
	return sockmsg_send(sock, buf, (size_t)n, pass_fd, err, errlen);
}

int sockmsg_recv(int sock, void *buf, size_t cap, int *fd, char *err, size_t errlen)
{
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} ctl;
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	if (fd)
		*fd = -1;
	ssize_t n;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		int e = errno;
		if (e == EAGAIN || e == EWOULDBLOCK)
			return -EAGAIN;
		if (e == ECONNRESET)
			return status_fail(err, errlen, FEEDER_ECLOSED,
					   "peer closed the connection");
		return status_fail(err, errlen, -e, "receiving a message failed: %s", strerror(e));
	}
	/* Collect every descriptor that came, so none leaks whatever happens. */
	int got = -1, extra = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int f;
			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (got < 0 && fd) {
				got = f;
			} else {
				close(f);
				extra++;
			}
		}
	}
	if (n == 0 && got < 0) {
		/* SEQPACKET gives 0 both at the end and for an empty message:
		 * only a peer that hung up has POLLRDHUP/POLLHUP. */
		struct pollfd p = { .fd = sock, .events = POLLIN | POLLRDHUP };
		if (poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP)))
			return status_fail(err, errlen, FEEDER_ECLOSED,
					   "peer closed the connection");
		return status_fail(err, errlen, FEEDER_EPROTO, "a message of 0 bytes (no header)");
	}
	if (mh.msg_flags & MSG_TRUNC) {
		if (got >= 0)
			close(got);
		return status_fail(err, errlen, FEEDER_EPROTO,
				   "message is larger than the %zu bytes accepted", cap);
	}
	if ((mh.msg_flags & MSG_CTRUNC) || extra) {
		if (got >= 0)
			close(got);
		return status_fail(err, errlen, FEEDER_EPROTO,
				   "message carried more file descriptors than expected");
	}
	if (fd)
		*fd = got;
	return (int)n;
}

int sockmsg_recv_msg(int sock, struct proto_msg *m, int *fd, char *err, size_t errlen)
{
	uint8_t buf[PROTO_MAX_MESSAGE + 1];
	int lfd = -1;
	int n = sockmsg_recv(sock, buf, sizeof(buf), fd ? &lfd : NULL, err, errlen);
	if (n < 0)
		return n;
	int rc = proto_decode(buf, (size_t)n, m, err, errlen);
	if (rc < 0) {
		if (lfd >= 0)
			close(lfd);
		return rc;
	}
	if (fd)
		*fd = lfd;
	else if (lfd >= 0)
		close(lfd);
	return 0;
}
