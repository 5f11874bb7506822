/* s3.c — the S3 client of s3.h on libcurl: one easy handle per client,
 * every request signed by curl (CURLOPT_AWS_SIGV4), retried here with
 * exponential backoff and full jitter, its failure turned into one
 * sentence naming s3://bucket/key. The service's XML is read only for the
 * few fields needed (Code, UploadId) by a plain extractor; nothing here
 * prints, and the secret key goes to curl alone. */
#include "s3.h"

#include "crc32c.h"
#include "status.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BACKOFF_CAP_MS 5000
#define CONNECT_TIMEOUT_MS 10000L
/* A transfer slower than this for that long is a dead peer, not a slow one. */
#define LOW_SPEED_BYTES 1024L
#define LOW_SPEED_SECONDS 30L
#define ERROR_BODY_MAX (64u << 10)
#define IO_CHUNK (1u << 20)
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct s3_client {
	CURL *h;
	struct s3_config c;
	uint64_t retries;
	uint64_t rng;
	char userpwd[400];
	char sigv4[128];
	char token_hdr[4200];
	char curl_err[CURL_ERROR_SIZE];
};

struct buf {
	char *p;
	size_t len, cap;
};

/* One request and what came back. */
struct xfer {
	const char *method; /* GET, HEAD, PUT, POST, DELETE */
	const char *bucket, *key, *query;
	/* request body: memory (mem) or a file range (in_fd >= 0) */
	int has_body;
	const void *mem;
	int in_fd;
	uint64_t in_off, in_len, in_pos;
	const char *extra_hdr; /* one more header line, or NULL */
	/* response body: into memory (up to max) or a file at out_off */
	int to_mem, out_fd;
	size_t max;
	uint64_t out_off;
	uint64_t range_off, range_len; /* a Range request when range_len > 0 */
	/* results */
	long status;
	uint64_t got;  /* body bytes kept from 2xx answers */
	uint32_t *crc; /* a file's body: the CRC-32C of the bytes written, or NULL */
	struct buf body, errbody;
	char etag[256];
	int sink_err; /* why our own write callback stopped the transfer */
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int buf_add(struct buf *b, const void *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *q = realloc(b->p, cap);
		if (!q)
			return -ENOMEM;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/* The text of the first <tag>...</tag> in xml, entities decoded; 0 if
 * found and it fits. */
static int xml_text(const char *xml, const char *tag, char *out, size_t cap)
{
	char open[64], close[64];
	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	const char *a = xml ? strstr(xml, open) : NULL;
	if (!a)
		return -1;
	a += strlen(open);
	const char *e = strstr(a, close);
	if (!e)
		return -1;
	static const struct {
		const char *ent;
		char c;
	} ents[] = { { "&amp;", '&' },
		     { "&lt;", '<' },
		     { "&gt;", '>' },
		     { "&quot;", '"' },
		     { "&apos;", '\'' } };
	size_t n = 0;
	while (a < e) {
		char c = *a++;
		if (c == '&') {
			size_t i;
			for (i = 0; i < sizeof(ents) / sizeof(ents[0]); i++) {
				size_t l = strlen(ents[i].ent);
				if (!strncmp(a - 1, ents[i].ent, l)) {
					c = ents[i].c;
					a += l - 1;
					break;
				}
			}
		}
		if (n + 1 >= cap)
			return -1;
		out[n++] = c;
	}
	out[n] = '\0';
	return 0;
}

/* Percent-encoding as SigV4 wants it: unreserved characters as they are,
 * '/' kept where keep_slash (a key's path), all else %XX upper-case. */
static int url_encode(char *dst, size_t cap, const char *s, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
			    c == '~' || (keep_slash && c == '/');
		if (n + 4 >= cap)
			return -1;
		if (plain) {
			dst[n++] = (char)c;
		} else {
			dst[n++] = '%';
			dst[n++] = hex[c >> 4];
			dst[n++] = hex[c & 15];
		}
	}
	dst[n] = '\0';
	return 0;
}

static void base64(char *out, const unsigned char *p, size_t n)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		out[o++] = tab[(v >> 18) & 63];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? tab[v & 63] : '=';
	}
	out[o] = '\0';
}

/* Bucket and key checked once, for every call. */
static int check_target(const char *bucket, const char *key, char *err, size_t errlen)
{
	size_t bn = strlen(bucket), kn = strlen(key);
	if (bn < 3 || bn >= S3_MAX_BUCKET || kn == 0 || kn >= S3_MAX_KEY)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "s3://%.63s/%.200s: the bucket must be 3 to 63 bytes and the "
				   "key 1 to %d",
				   bucket, key, S3_MAX_KEY - 1);
	for (const char *p = key; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "s3://%s/%.200s: the key holds a control character",
					   bucket, key);
	return 0;
}

int s3_client_new(const struct s3_config *c, struct s3_client **out, char *err, size_t errlen)
{
	*out = NULL;
	if (c->tries < 1 || c->backoff_ms < 0 || !c->endpoint[0] || !c->region[0] ||
	    !c->access_key[0] || !c->secret_key[0])
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "S3 configuration incomplete (endpoint, region, keys, tries)");
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return status_fail(err, errlen, -EIO, "curl_global_init failed: %s",
				   curl_easy_strerror(global_rc));
	struct s3_client *cl = calloc(1, sizeof(*cl));
	if (!cl)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	cl->c = *c;
	cl->h = curl_easy_init();
	if (!cl->h) {
		free(cl);
		return status_fail(err, errlen, -ENOMEM, "curl_easy_init failed");
	}
	snprintf(cl->userpwd, sizeof(cl->userpwd), "%s:%s", c->access_key, c->secret_key);
	snprintf(cl->sigv4, sizeof(cl->sigv4), "aws:amz:%s:s3", c->region);
	if (c->session_token[0])
		snprintf(cl->token_hdr, sizeof(cl->token_hdr), "x-amz-security-token: %s",
			 c->session_token);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	cl->rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)(uintptr_t)cl ^ (uint64_t)getpid();
	*out = cl;
	return 0;
}

void s3_client_free(struct s3_client *cl)
{
	if (!cl)
		return;
	curl_easy_cleanup(cl->h);
	/* The keys lived here: leave no copy in freed memory. */
	memset(cl, 0, sizeof(*cl));
	free(cl);
}

uint64_t s3_client_retries(const struct s3_client *cl)
{
	return cl->retries;
}

static uint64_t next_rand(struct s3_client *cl)
{
	/* splitmix64: only the jitter of the backoff depends on it. */
	uint64_t z = (cl->rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Full jitter: a uniform wait in [0, min(cap, base * 2^attempt)]. */
static void backoff(struct s3_client *cl, int attempt)
{
	uint64_t ceil = (uint64_t)cl->c.backoff_ms << (attempt < 20 ? attempt : 20);
	if (ceil > BACKOFF_CAP_MS)
		ceil = BACKOFF_CAP_MS;
	uint64_t ms = ceil ? next_rand(cl) % (ceil + 1) : 0;
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static size_t on_read(char *dst, size_t size, size_t nitems, void *arg)
{
	struct xfer *x = arg;
	size_t want = size * nitems;
	uint64_t left = x->in_len - x->in_pos;
	if (want > left)
		want = (size_t)left;
	if (!want)
		return 0;
	if (x->mem) {
		memcpy(dst, (const char *)x->mem + x->in_pos, want);
	} else {
		ssize_t r = pread(x->in_fd, dst, want, (off_t)(x->in_off + x->in_pos));
		if (r <= 0) {
			x->sink_err = r < 0 ? -errno : -EIO;
			return CURL_READFUNC_ABORT;
		}
		want = (size_t)r;
	}
	x->in_pos += want;
	return want;
}

static int on_seek(void *arg, curl_off_t off, int origin)
{
	struct xfer *x = arg;
	if (origin != SEEK_SET || off < 0 || (uint64_t)off > x->in_len)
		return CURL_SEEKFUNC_FAIL;
	x->in_pos = (uint64_t)off;
	return CURL_SEEKFUNC_OK;
}

struct sink {
	struct xfer *x;
	CURL *h;
};

static size_t on_write(char *p, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	struct xfer *x = s->x;
	size_t len = size * n;
	long code = 0;
	curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code);
	if (code < 200 || code >= 300) {
		/* An error's XML: only its first bytes are of use. */
		size_t room = ERROR_BODY_MAX - x->errbody.len;
		if (len < room)
			room = len;
		if (room && buf_add(&x->errbody, p, room))
			return 0;
		return len;
	}
	if (x->to_mem) {
		if (x->body.len + len > x->max) {
			x->sink_err = FEEDER_EQUOTA;
			return 0;
		}
		if (buf_add(&x->body, p, len)) {
			x->sink_err = -ENOMEM;
			return 0;
		}
	} else if (x->out_fd >= 0) {
		if (x->range_len && x->got + len > x->range_len) {
			x->sink_err = -EPROTO;
			return 0;
		}
		size_t done = 0;
		while (done < len) {
			ssize_t w = pwrite(x->out_fd, p + done, len - done,
					   (off_t)(x->out_off + x->got + done));
			if (w < 0) {
				if (errno == EINTR)
					continue;
				x->sink_err = -errno;
				return 0;
			}
			done += (size_t)w;
		}
		/* Written in order (a Range resume goes on where it stopped):
		 * the file's checksum without reading it back. */
		if (x->crc)
			*x->crc = crc32c(*x->crc, p, len);
	}
	x->got += len;
	return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;
	if (len > 5 && !strncasecmp(p, "etag:", 5)) {
		const char *v = p + 5;
		size_t vl = len - 5;
		while (vl && (*v == ' ' || *v == '\t'))
			v++, vl--;
		while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
			vl--;
		if (vl < sizeof(x->etag)) {
			memcpy(x->etag, v, vl);
			x->etag[vl] = '\0';
		}
	}
	return len;
}

static int build_url(const struct s3_client *cl, const struct xfer *x, char *url, size_t cap)
{
	char key[3 * S3_MAX_KEY + 1];
	if (url_encode(key, sizeof(key), x->key, 1))
		return -1;
	const char *host = strstr(cl->c.endpoint, "://") + 3;
	int scheme_len = (int)(host - cl->c.endpoint);
	int n;
	if (cl->c.path_style)
		n = snprintf(url, cap, "%s/%s/%s%s%s", cl->c.endpoint, x->bucket, key,
			     x->query ? "?" : "", x->query ? x->query : "");
	else
		n = snprintf(url, cap, "%.*s%s.%s/%s%s%s", scheme_len, cl->c.endpoint, x->bucket,
			     host, key, x->query ? "?" : "", x->query ? x->query : "");
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* One try. Returns the CURLcode; x->status is the HTTP status (0: none). */
static CURLcode perform(struct s3_client *cl, struct xfer *x, const char *url)
{
	CURL *h = cl->h;
	struct curl_slist *hdrs = NULL, *t;
	char range[96];
	CURLcode rc = CURLE_OUT_OF_MEMORY;
	struct sink sink = { x, h };

	curl_easy_reset(h);
	x->status = 0;
	x->sink_err = 0;
	x->errbody.len = 0;
	x->etag[0] = '\0';
	x->in_pos = 0;
	cl->curl_err[0] = '\0';

	/* S3 wants the payload's hash in a header, and curl 7.88 neither
	 * sends it nor signs it unless given: the empty body's hash, or
	 * UNSIGNED-PAYLOAD for a body (TLS and the checksum header protect
	 * it; hashing it would read every shard twice). */
	if (!(t = curl_slist_append(hdrs, x->has_body ? "x-amz-content-sha256: UNSIGNED-PAYLOAD"
						      : "x-amz-content-sha256: " EMPTY_SHA256)))
		goto out;
	hdrs = t;
	if (cl->token_hdr[0]) {
		if (!(t = curl_slist_append(hdrs, cl->token_hdr)))
			goto out;
		hdrs = t;
	}
	/* A POST's body is XML, not the form curl would call it (a form is
	 * read, and so emptied, by some servers before the S3 handler). */
	if (!strcmp(x->method, "POST")) {
		if (!(t = curl_slist_append(hdrs, "Content-Type: application/xml")))
			goto out;
		hdrs = t;
	}
	if (x->extra_hdr) {
		if (!(t = curl_slist_append(hdrs, x->extra_hdr)))
			goto out;
		hdrs = t;
	}
	if (x->range_len) {
		snprintf(range, sizeof(range), "Range: bytes=%llu-%llu",
			 (unsigned long long)(x->range_off + x->got),
			 (unsigned long long)(x->range_off + x->range_len - 1));
		if (!(t = curl_slist_append(hdrs, range)))
			goto out;
		hdrs = t;
	}

	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_AWS_SIGV4, cl->sigv4);
	curl_easy_setopt(h, CURLOPT_USERPWD, cl->userpwd);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cl->curl_err);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, LOW_SPEED_BYTES);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, LOW_SPEED_SECONDS);
	curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 512L << 10);
	curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 1L << 20);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");

	if (!strcmp(x->method, "HEAD")) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (!strcmp(x->method, "PUT")) {
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, x);
		curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, on_seek);
		curl_easy_setopt(h, CURLOPT_SEEKDATA, x);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)x->in_len);
	} else if (!strcmp(x->method, "POST")) {
		/* Bodies posted here are small XML documents in memory: curl
		 * hashes them into the signature. */
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, x->mem ? (const char *)x->mem : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->in_len);
	} else if (!strcmp(x->method, "DELETE")) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
	}
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &x->status);
out:
	curl_slist_free_all(hdrs);
	return rc;
}

static int transient(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_GOT_NOTHING:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return 1;
	default:
		return 0;
	}
}

static int retry_status(long status, const char *code)
{
	return status == 429 || status == 500 || status == 502 || status == 503 || status == 504 ||
	       !strcmp(code, "SlowDown") || !strcmp(code, "InternalError");
}

/* Run x with the retries of s3.h; 0 on a 2xx answer, else the code and
 * the sentence. */
static int run(struct s3_client *cl, struct xfer *x, char *err, size_t errlen)
{
	char url[8192], code[128];
	if (build_url(cl, x, url, sizeof(url)))
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "s3://%s/%.200s: the URL is too long", x->bucket, x->key);
	int attempt = 0, budget = cl->c.tries * 4;
	for (;;) {
		uint64_t got_before = x->got;
		CURLcode rc = perform(cl, x, url);
		code[0] = '\0';
		if (x->errbody.len)
			xml_text(x->errbody.p, "Code", code, sizeof(code));
		int again = 0;
		if (rc == CURLE_OUT_OF_MEMORY)
			return status_fail(err, errlen, -ENOMEM, "s3://%s/%.200s: out of memory",
					   x->bucket, x->key);
		if (x->sink_err == FEEDER_EQUOTA)
			return status_fail(err, errlen, FEEDER_EQUOTA,
					   "s3://%s/%.200s: larger than %zu bytes", x->bucket,
					   x->key, x->max);
		if (x->sink_err)
			return status_fail(
				err, errlen, x->sink_err, "s3://%s/%.200s: %s", x->bucket, x->key,
				x->sink_err == -EPROTO ? "more bytes than the range asked"
						       : strerror(-x->sink_err));
		if (rc != CURLE_OK) {
			again = transient(rc);
		} else if (x->status >= 200 && x->status < 300) {
			/* CompleteMultipartUpload may fail after its 200: the
			 * error is then the body (an object's bytes never are). */
			if (strcmp(x->method, "POST") != 0 || !x->body.p ||
			    !strstr(x->body.p, "<Error>"))
				return 0;
			xml_text(x->body.p, "Code", code, sizeof(code));
			again = retry_status(0, code);
		} else {
			again = retry_status(x->status, code);
		}
		/* A body cut short resumes where it stopped: that try was not
		 * wasted. */
		int progressed = x->range_len && x->got > got_before;
		if (again && --budget > 0 && (progressed || attempt + 1 < cl->c.tries)) {
			cl->retries++;
			if (!progressed) {
				backoff(cl, attempt);
				attempt++;
			}
			if (!x->range_len)
				x->got = 0, x->body.len = 0;
			continue;
		}
		const char *after = attempt ? " (after retries)" : "";
		if (rc != CURLE_OK)
			return status_fail(err, errlen, -EIO, "s3://%s/%.200s: %s: %s%s", x->bucket,
					   x->key, cl->c.endpoint,
					   cl->curl_err[0] ? cl->curl_err : curl_easy_strerror(rc),
					   after);
		if (x->status == 404)
			return status_fail(err, errlen, -ENOENT,
					   "s3://%s/%.200s: no such %s (%ld%s%s)", x->bucket,
					   x->key,
					   !strcmp(code, "NoSuchBucket") ? "bucket" : "object",
					   x->status, code[0] ? " " : "", code);
		if (x->status == 403)
			return status_fail(err, errlen, FEEDER_EDENIED,
					   "s3://%s/%.200s: access denied (403%s%s) for access key "
					   "%.40s",
					   x->bucket, x->key, code[0] ? " " : "", code,
					   cl->c.access_key);
		return status_fail(err, errlen, -EIO, "s3://%s/%.200s: %s failed (HTTP %ld%s%s)%s",
				   x->bucket, x->key, x->method, x->status, code[0] ? " " : "",
				   code, after);
	}
}

static void xfer_init(struct xfer *x, const char *method, const char *bucket, const char *key)
{
	memset(x, 0, sizeof(*x));
	x->method = method;
	x->bucket = bucket;
	x->key = key;
	x->in_fd = -1;
	x->out_fd = -1;
}

static void xfer_free(struct xfer *x)
{
	free(x->body.p);
	free(x->errbody.p);
}

/* "x-amz-checksum-crc32c: <base64 of the big-endian CRC-32C>": S3 checks the
 * body against it and refuses the PUT on a mismatch. */
static int checksum_header(struct xfer *x, char *hdr, size_t cap)
{
	uint32_t crc = 0;
	if (x->mem) {
		crc = crc32c(0, x->mem, (size_t)x->in_len);
	} else {
		char *b = malloc(IO_CHUNK);
		if (!b)
			return -ENOMEM;
		for (uint64_t done = 0; done < x->in_len;) {
			size_t want =
				x->in_len - done < IO_CHUNK ? (size_t)(x->in_len - done) : IO_CHUNK;
			ssize_t r = pread(x->in_fd, b, want, (off_t)(x->in_off + done));
			if (r <= 0) {
				free(b);
				return r < 0 ? -errno : -EIO;
			}
			crc = crc32c(crc, b, (size_t)r);
			done += (uint64_t)r;
		}
		free(b);
	}
	unsigned char be[4] = { (unsigned char)(crc >> 24), (unsigned char)(crc >> 16),
				(unsigned char)(crc >> 8), (unsigned char)crc };
	char b64[16];
	base64(b64, be, 4);
	snprintf(hdr, cap, "x-amz-checksum-crc32c: %s", b64);
	return 0;
}

static int put_body(struct s3_client *cl, struct xfer *x, char *err, size_t errlen)
{
	char hdr[64];
	int rc = checksum_header(x, hdr, sizeof(hdr));
	if (rc)
		return status_fail(err, errlen, rc, "s3://%s/%.200s: reading the body: %s",
				   x->bucket, x->key, strerror(-rc));
	x->extra_hdr = hdr;
	return run(cl, x, err, errlen);
}

/* One PUT of a whole object, its body from memory (mem) or from a file
 * range (fd, off). */
static int put_object(struct s3_client *cl, const char *bucket, const char *key, const void *mem,
		      int fd, uint64_t off, uint64_t len, char *err, size_t errlen)
{
	int rc = check_target(bucket, key, err, errlen);
	if (rc)
		return rc;
	struct xfer x;
	xfer_init(&x, "PUT", bucket, key);
	x.mem = mem;
	x.in_fd = fd;
	x.in_off = off;
	x.in_len = len;
	x.has_body = 1;
	rc = put_body(cl, &x, err, errlen);
	xfer_free(&x);
	return rc;
}

int s3_put(struct s3_client *cl, const char *bucket, const char *key, const void *data, size_t len,
	   char *err, size_t errlen)
{
	return put_object(cl, bucket, key, data ? data : "", -1, 0, len, err, errlen);
}

int s3_put_fd(struct s3_client *cl, const char *bucket, const char *key, int fd, uint64_t off,
	      uint64_t len, char *err, size_t errlen)
{
	return put_object(cl, bucket, key, NULL, fd, off, len, err, errlen);
}

int s3_multipart_begin(struct s3_client *cl, const char *bucket, const char *key, char *id,
		       size_t idlen, char *err, size_t errlen)
{
	int rc = check_target(bucket, key, err, errlen);
	if (rc)
		return rc;
	struct xfer x;
	xfer_init(&x, "POST", bucket, key);
	/* "uploads=", not "uploads": the canonical query SigV4 signs. */
	x.query = "uploads=";
	x.to_mem = 1;
	x.max = 1 << 20;
	rc = run(cl, &x, err, errlen);
	if (rc == 0 && xml_text(x.body.p, "UploadId", id, idlen))
		rc = status_fail(err, errlen, -EIO,
				 "s3://%s/%.200s: the multipart upload's answer has no UploadId",
				 bucket, key);
	xfer_free(&x);
	return rc;
}

static int upload_query(char *q, size_t cap, int part, const char *id)
{
	char enc[1024];
	if (url_encode(enc, sizeof(enc), id, 0))
		return -1;
	int n = part ? snprintf(q, cap, "partNumber=%d&uploadId=%s", part, enc)
		     : snprintf(q, cap, "uploadId=%s", enc);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int s3_multipart_put(struct s3_client *cl, const char *bucket, const char *key, const char *id,
		     int part, int fd, uint64_t off, uint64_t len, char *etag, size_t etaglen,
		     char *err, size_t errlen)
{
	int rc = check_target(bucket, key, err, errlen);
	if (rc)
		return rc;
	char q[1200];
	if (part < 1 || part > 10000 || upload_query(q, sizeof(q), part, id))
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "s3://%s/%.200s: part %d or its upload id is out of range",
				   bucket, key, part);
	struct xfer x;
	xfer_init(&x, "PUT", bucket, key);
	x.query = q;
	x.has_body = 1;
	x.in_fd = fd;
	x.in_off = off;
	x.in_len = len;
	rc = run(cl, &x, err, errlen);
	if (rc == 0) {
		if (!x.etag[0] || strlen(x.etag) >= etaglen)
			rc = status_fail(err, errlen, -EIO,
					 "s3://%s/%.200s: part %d's answer has no usable ETag",
					 bucket, key, part);
		else
			strcpy(etag, x.etag);
	}
	xfer_free(&x);
	return rc;
}

static int xml_escaped(struct buf *b, const char *s)
{
	int rc = 0;
	for (; *s && !rc; s++) {
		const char *e = *s == '&'   ? "&amp;"
				: *s == '<' ? "&lt;"
				: *s == '>' ? "&gt;"
					    : NULL;
		rc = e ? buf_add(b, e, strlen(e)) : buf_add(b, s, 1);
	}
	return rc;
}

int s3_multipart_complete(struct s3_client *cl, const char *bucket, const char *key, const char *id,
			  int nparts, char *const *etags, char *err, size_t errlen)
{
	int rc = check_target(bucket, key, err, errlen);
	if (rc)
		return rc;
	char q[1200];
	if (nparts < 1 || nparts > 10000 || upload_query(q, sizeof(q), 0, id))
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "s3://%s/%.200s: %d parts or the upload id is out of range",
				   bucket, key, nparts);
	struct buf doc = { 0 };
	char num[64];
	rc = buf_add(&doc, "<CompleteMultipartUpload>", 25);
	for (int i = 0; i < nparts && !rc; i++) {
		int n = snprintf(num, sizeof(num), "<Part><PartNumber>%d</PartNumber><ETag>",
				 i + 1);
		rc = buf_add(&doc, num, (size_t)n);
		if (!rc)
			rc = xml_escaped(&doc, etags[i]);
		if (!rc)
			rc = buf_add(&doc, "</ETag></Part>", 14);
	}
	if (!rc)
		rc = buf_add(&doc, "</CompleteMultipartUpload>", 26);
	if (rc) {
		free(doc.p);
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	}
	struct xfer x;
	xfer_init(&x, "POST", bucket, key);
	x.query = q;
	x.mem = doc.p;
	x.in_len = doc.len;
	x.has_body = 1;
	x.to_mem = 1;
	x.max = 1 << 20;
	rc = run(cl, &x, err, errlen);
	xfer_free(&x);
	free(doc.p);
	return rc;
}

int s3_multipart_abort(struct s3_client *cl, const char *bucket, const char *key, const char *id,
		       char *err, size_t errlen)
{
	int rc = check_target(bucket, key, err, errlen);
	if (rc)
		return rc;
	char q[1200];
	if (upload_query(q, sizeof(q), 0, id))
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "s3://%s/%.200s: the upload id is too long", bucket, key);
	struct xfer x;
	xfer_init(&x, "DELETE", bucket, key);
	x.query = q;
	rc = run(cl, &x, err, errlen);
	xfer_free(&x);
	return rc;
}

int s3_head(struct s3_client *cl, const char *bucket, const char *key, uint64_t *size, char *err,
	    size_t errlen)
{
	int rc = check_target(bucket, key, err, errlen);
	if (rc)
		return rc;
	struct xfer x;
	xfer_init(&x, "HEAD", bucket, key);
	rc = run(cl, &x, err, errlen);
	if (rc == 0) {
		curl_off_t cl_len = -1;
		curl_easy_getinfo(cl->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl_len);
		if (cl_len < 0)
			rc = status_fail(err, errlen, -EIO,
					 "s3://%s/%.200s: HEAD answered without a Content-Length",
					 bucket, key);
		else
			*size = (uint64_t)cl_len;
	}
	xfer_free(&x);
	return rc;
}

int s3_get(struct s3_client *cl, const char *bucket, const char *key, size_t max, void **data,
	   size_t *len, char *err, size_t errlen)
{
	*data = NULL;
	*len = 0;
	int rc = check_target(bucket, key, err, errlen);
	if (rc)
		return rc;
	struct xfer x;
	xfer_init(&x, "GET", bucket, key);
	x.to_mem = 1;
	x.max = max;
	rc = run(cl, &x, err, errlen);
	if (rc == 0) {
		if (!x.body.p && !(x.body.p = malloc(1))) {
			rc = status_fail(err, errlen, -ENOMEM, "out of memory");
		} else {
			*data = x.body.p;
			*len = x.body.len;
			x.body.p = NULL;
		}
	}
	xfer_free(&x);
	return rc;
}

int s3_get_range_fd(struct s3_client *cl, const char *bucket, const char *key, uint64_t off,
		    uint64_t len, int fd, uint64_t fd_off, uint32_t *crc, char *err, size_t errlen)
{
	if (crc)
		*crc = 0;
	int rc = check_target(bucket, key, err, errlen);
	if (rc || len == 0)
		return rc;
	struct xfer x;
	xfer_init(&x, "GET", bucket, key);
	x.crc = crc;
	x.out_fd = fd;
	x.out_off = fd_off;
	x.range_off = off;
	x.range_len = len;
	rc = run(cl, &x, err, errlen);
	if (rc == 0 && x.status != 206)
		rc = status_fail(err, errlen, -EIO,
				 "s3://%s/%.200s: the server answered a Range request with %ld",
				 bucket, key, x.status);
	else if (rc == 0 && x.got != len)
		rc = status_fail(err, errlen, -EIO,
				 "s3://%s/%.200s: the object is shorter than byte %llu", bucket,
				 key, (unsigned long long)(off + len));
	else if (rc == -EIO && x.status == 416)
		rc = status_fail(err, errlen, -EIO,
				 "s3://%s/%.200s: the object is shorter than byte %llu", bucket,
				 key, (unsigned long long)(off + len));
	xfer_free(&x);
	return rc;
}

int s3_delete(struct s3_client *cl, const char *bucket, const char *key, char *err, size_t errlen)
{
	int rc = check_target(bucket, key, err, errlen);
	if (rc)
		return rc;
	struct xfer x;
	xfer_init(&x, "DELETE", bucket, key);
	char code[64] = "";
	rc = run(cl, &x, err, errlen);
	if (rc == -ENOENT) {
		if (x.errbody.len)
			xml_text(x.errbody.p, "Code", code, sizeof(code));
		if (strcmp(code, "NoSuchBucket") != 0)
			rc = 0;
	}
	xfer_free(&x);
	return rc;
}
