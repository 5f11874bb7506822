/* remote_none.c — remote.h where feederd is built without libcurl: a
 * configuration that names remote datasets is refused at start. */
#include "remote.h"

#include "status.h"

#include <errno.h>
#include <stdlib.h>

int remote_open(struct remote **out, const struct config *cfg, unsigned readers, char *err,
		size_t errlen)
{
	(void)readers;
	*out = NULL;
	struct config_remote *list = malloc(CONFIG_MAX_REMOTES * sizeof(*list));
	if (!list)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	int n = config_remotes(cfg->remote, list, err, errlen);
	free(list);
	if (n > 0)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "remote datasets (s3://) need feederd built with libcurl "
				   "(meson -Ds3=enabled)");
	return n;
}

void remote_close(struct remote *r)
{
	(void)r;
}

struct shard_cache *remote_cache(struct remote *r)
{
	(void)r;
	return NULL;
}

size_t remote_take(struct remote *r, struct dataset **out, size_t max)
{
	(void)r, (void)out, (void)max;
	return 0;
}

int remote_why(struct remote *r, const char *name, char *out, size_t outlen)
{
	(void)r, (void)name, (void)out, (void)outlen;
	return 0;
}
