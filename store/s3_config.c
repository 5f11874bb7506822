/* s3_config.c — where the object store is and who we are to it
 * (s3_config_load, see s3.h): the variables every S3 tool reads, and the
 * shared credentials file for the keys they leave out. Secrets read here
 * are never quoted back in a message: a malformed line is named by its
 * file, line number and key only. */
#include "s3.h"

#include "status.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S3_DEFAULT_TRIES 6
#define S3_DEFAULT_BACKOFF_MS 100

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* Copy a value that must fit and hold no control characters or spaces;
 * what names the value, never the value itself. */
static int take(char *dst, size_t cap, const char *v, const char *what, char *err, size_t errlen)
{
	size_t n = strlen(v);
	if (n >= cap)
		return status_fail(err, errlen, FEEDER_EINVAL, "%s is longer than %zu bytes", what,
				   cap - 1);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] <= 0x20 || v[i] == 0x7f)
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "%s holds a space or control character", what);
	memcpy(dst, v, n + 1);
	return 0;
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

struct profile_keys {
	char access[128], secret[256], token[4096];
	int found; /* the profile's section was seen */
};

/* Read profile's keys from an INI-style credentials file. A missing file
 * is not an error here (the caller says what was looked for). */
static int read_credentials(const char *path, const char *profile, struct profile_keys *k,
			    char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT)
			return 0;
		return status_fail(err, errlen, -errno, "cannot read the credentials file %s: %s",
				   path, strerror(errno));
	}
	char line[8192], what[600];
	int in = 0, rc = 0;
	unsigned lineno = 0;
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		lineno++;
		char *s = trim(line);
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			char *end = strchr(s, ']');
			if (!end) {
				rc = status_fail(err, errlen, FEEDER_EINVAL,
						 "%s:%u: a section header without ']'", path,
						 lineno);
				break;
			}
			*end = '\0';
			in = strcmp(trim(s + 1), profile) == 0;
			k->found |= in;
			continue;
		}
		if (!in)
			continue;
		char *eq = strchr(s, '=');
		if (!eq)
			continue;
		*eq = '\0';
		char *key = trim(s), *val = trim(eq + 1);
		char *dst = NULL;
		size_t cap = 0;
		if (!strcmp(key, "aws_access_key_id"))
			dst = k->access, cap = sizeof(k->access);
		else if (!strcmp(key, "aws_secret_access_key"))
			dst = k->secret, cap = sizeof(k->secret);
		else if (!strcmp(key, "aws_session_token"))
			dst = k->token, cap = sizeof(k->token);
		if (!dst)
			continue;
		snprintf(what, sizeof(what), "%.400s:%u: %s", path, lineno, key);
		rc = take(dst, cap, val, what, err, errlen);
	}
	fclose(f);
	return rc;
}

static int load_endpoint(struct s3_config *c, char *err, size_t errlen)
{
	const char *e = env("AWS_ENDPOINT_URL");
	if (!e) {
		snprintf(c->endpoint, sizeof(c->endpoint), "https://s3.%s.amazonaws.com",
			 c->region);
		return 0;
	}
	int rc = take(c->endpoint, sizeof(c->endpoint), e, "AWS_ENDPOINT_URL", err, errlen);
	if (rc)
		return rc;
	size_t n = strlen(c->endpoint);
	while (n > 0 && c->endpoint[n - 1] == '/')
		c->endpoint[--n] = '\0';
	const char *host = NULL;
	if (!strncmp(c->endpoint, "http://", 7))
		host = c->endpoint + 7;
	else if (!strncmp(c->endpoint, "https://", 8))
		host = c->endpoint + 8;
	if (!host || !*host || strpbrk(host, "/?#@"))
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "AWS_ENDPOINT_URL '%.200s' is not http(s)://host[:port]",
				   c->endpoint);
	return 0;
}

static int load_addressing(struct s3_config *c, char *err, size_t errlen)
{
	const char *a = env("FEEDER_S3_ADDRESSING");
	if (a && !strcmp(a, "path")) {
		c->path_style = 1;
	} else if (a && !strcmp(a, "virtual")) {
		c->path_style = 0;
	} else if (a) {
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "FEEDER_S3_ADDRESSING '%.40s' is not path or virtual", a);
	} else {
		/* AWS's own endpoints are virtual-host; MinIO, Ceph and test
		 * servers on a bare host:port answer path-style. */
		const char *host = strstr(c->endpoint, "://") + 3;
		const char *end = host + strcspn(host, ":");
		static const char aws[] = "amazonaws.com";
		size_t hn = (size_t)(end - host), an = sizeof(aws) - 1;
		c->path_style = !(hn >= an && !strncmp(end - an, aws, an));
	}
	return 0;
}

int s3_config_load(struct s3_config *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->tries = S3_DEFAULT_TRIES;
	c->backoff_ms = S3_DEFAULT_BACKOFF_MS;

	const char *region = env("AWS_REGION");
	if (!region)
		region = env("AWS_DEFAULT_REGION");
	if (!region)
		region = "us-east-1";
	int rc = take(c->region, sizeof(c->region), region, "AWS_REGION", err, errlen);
	if (rc)
		return rc;
	for (const char *p = c->region; *p; p++)
		if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '-')
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "AWS_REGION '%s' is not a region name (a-z, 0-9, '-')",
					   c->region);
	if ((rc = load_endpoint(c, err, errlen)) || (rc = load_addressing(c, err, errlen)))
		return rc;

	const char *ak = env("AWS_ACCESS_KEY_ID"), *sk = env("AWS_SECRET_ACCESS_KEY");
	if (ak && sk) {
		const char *tok = env("AWS_SESSION_TOKEN");
		if ((rc = take(c->access_key, sizeof(c->access_key), ak, "AWS_ACCESS_KEY_ID", err,
			       errlen)) ||
		    (rc = take(c->secret_key, sizeof(c->secret_key), sk, "AWS_SECRET_ACCESS_KEY",
			       err, errlen)) ||
		    (tok && (rc = take(c->session_token, sizeof(c->session_token), tok,
				       "AWS_SESSION_TOKEN", err, errlen))))
			return rc;
		return 0;
	}

	char path[4096];
	const char *file = env("AWS_SHARED_CREDENTIALS_FILE"), *home = env("HOME");
	if (file)
		snprintf(path, sizeof(path), "%s", file);
	else
		snprintf(path, sizeof(path), "%s/.aws/credentials", home ? home : "");
	const char *profile = env("AWS_PROFILE");
	if (!profile)
		profile = "default";
	struct profile_keys *k = calloc(1, sizeof(*k));
	if (!k)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	rc = read_credentials(path, profile, k, err, errlen);
	if (rc == 0 && (!k->found || !k->access[0] || !k->secret[0]))
		rc = status_fail(
			err, errlen, FEEDER_EINVAL,
			"no S3 credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are "
			"not set, and the profile '%s' of %s %s (AWS_PROFILE, "
			"AWS_SHARED_CREDENTIALS_FILE)",
			profile, path,
			k->found ? "has no aws_access_key_id and aws_secret_access_key"
				 : "is not there");
	if (rc == 0) {
		memcpy(c->access_key, k->access, sizeof(c->access_key));
		memcpy(c->secret_key, k->secret, sizeof(c->secret_key));
		memcpy(c->session_token, k->token, sizeof(c->session_token));
	}
	memset(k, 0, sizeof(*k));
	free(k);
	return rc;
}
