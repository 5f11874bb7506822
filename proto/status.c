/* status.c — names for Feeder's error codes (see status.h). */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *status_str(int code)
{
	switch (code) {
	case 0:
		return "success";
	case FEEDER_ECORRUPT:
		return "data corrupt";
	case FEEDER_EVERSION:
		return "unsupported version";
	case FEEDER_EFORMAT:
		return "not a valid Feeder dataset or record";
	case FEEDER_EPROTO:
		return "malformed protocol message";
	case FEEDER_EDECODE:
		return "payload could not be decoded";
	case FEEDER_EQUOTA:
		return "limit exceeded";
	case FEEDER_ENODATASET:
		return "no such dataset";
	case FEEDER_EBADNAME:
		return "name not allowed";
	case FEEDER_EINVAL:
		return "invalid argument";
	case FEEDER_ECLOSED:
		return "connection closed by peer";
	case FEEDER_ETIMEDOUT:
		return "timed out";
	case FEEDER_EEND:
		return "end of epoch";
	case FEEDER_ENODEV:
		return "no CUDA device available";
	case FEEDER_EDENIED:
		return "permission denied by the daemon";
	case FEEDER_ESTREAM:
		return "stream failed";
	}
	if (code < 0 && code > -FEEDER_EBASE)
		return strerror(-code);
	return "unknown error";
}

int status_fail(char *buf, size_t len, int code, const char *fmt, ...)
{
	if (buf && len) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(buf, len, fmt, ap);
		va_end(ap);
	}
	return code;
}
