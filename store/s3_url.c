/* s3_url.c — "s3://bucket/prefix" split into a bucket and a key prefix
 * (s3_url_parse, see s3.h): the one place a user's object URL is checked. */
#include "s3.h"

#include "status.h"

#include <string.h>

/* S3's rule for new buckets: 3 to 63 of [a-z0-9.-], starting and ending
 * with a letter or digit. */
static int bucket_ok(const char *b, size_t n)
{
	if (n < 3 || n > 63)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = b[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && c != '.' && c != '-')
			return 0;
		if ((i == 0 || i == n - 1) && !alnum)
			return 0;
	}
	return 1;
}

int s3_url_parse(const char *url, char bucket[S3_MAX_BUCKET], char prefix[S3_MAX_KEY], char *err,
		 size_t errlen)
{
	static const char scheme[] = "s3://";
	if (strncmp(url, scheme, sizeof(scheme) - 1) != 0)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "'%.200s' is not an s3://bucket/prefix URL", url);
	const char *b = url + sizeof(scheme) - 1;
	const char *slash = strchr(b, '/');
	size_t bn = slash ? (size_t)(slash - b) : strlen(b);
	if (!bucket_ok(b, bn))
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "'%.200s': the bucket name '%.*s' is not 3 to 63 of a-z, 0-9, "
				   "'.' and '-' starting and ending with a letter or digit",
				   url, (int)(bn > 80 ? 80 : bn), b);
	const char *p = slash ? slash + 1 : "";
	while (*p == '/')
		p++;
	size_t pn = strlen(p);
	while (pn > 0 && p[pn - 1] == '/')
		pn--;
	/* Room for "/" and the longest name put under the prefix. */
	if (pn + 1 + 64 >= S3_MAX_KEY)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "'%.200s': the prefix is longer than %d bytes", url,
				   S3_MAX_KEY - 66);
	for (size_t i = 0; i < pn; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "'%.200s': the prefix holds a control character", url);
	memcpy(bucket, b, bn);
	bucket[bn] = '\0';
	memcpy(prefix, p, pn);
	prefix[pn] = '\0';
	return 0;
}
