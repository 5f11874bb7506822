/* metrics_none.c — metrics.h without libmicrohttpd: metrics_listen is
 * refused with the reason at start. */
#include "metrics.h"

#include "status.h"

int metrics_start(struct metrics **out, const char *spec, char *bound, size_t boundlen, char *err,
		  size_t errlen)
{
	(void)spec, (void)bound, (void)boundlen;
	*out = NULL;
	return status_fail(err, errlen, FEEDER_ENODEV,
			   "metrics_listen: feederd was built without "
			   "libmicrohttpd (install libmicrohttpd-dev and rebuild)");
}

void metrics_stop(struct metrics *m)
{
	(void)m;
}

void metrics_publish(struct metrics *m, const char *text, size_t len)
{
	(void)m, (void)text, (void)len;
}
