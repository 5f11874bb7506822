/* s3.h — a client of S3-compatible object storage (AWS S3, MinIO, Ceph
 * RGW, GCS's XML API, R2), over libcurl, which signs each request
 * (CURLOPT_AWS_SIGV4) and verifies TLS by default.
 *
 * Where and who: s3_config_load reads what every S3 tool reads —
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION
 * (or AWS_DEFAULT_REGION; default us-east-1), AWS_ENDPOINT_URL (default
 * https://s3.REGION.amazonaws.com), and, for keys the environment lacks,
 * the profile AWS_PROFILE (default "default") of the credentials file
 * AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials). Addressing is
 * virtual-host (https://BUCKET.host/KEY) for AWS endpoints and path-style
 * (http://host:port/BUCKET/KEY) for any other endpoint, unless
 * FEEDER_S3_ADDRESSING says "path" or "virtual".
 *
 * Errors are values: every call returns 0 or a negative code with one
 * sentence in err naming the object
 * (s3://bucket/key) and the reason (the HTTP status and the service's error
 * Code, or curl's). Throttling and server errors (429, 500, 502, 503, 504,
 * SlowDown) and dropped connections are retried with exponential backoff
 * and full jitter (base 100 ms, cap 5 s, 6 tries by default) before the
 * error is returned. Secrets never appear in err, in logs or in any output:
 * the access key id alone may be shown. Codes: -ENOENT (no such object or
 * bucket), FEEDER_EDENIED (403), FEEDER_EINVAL (a bad argument or
 * configuration), -EIO (any other failure, after the retries), -ENOMEM.
 *
 * A client is one connection's worth of state (a curl easy handle): use one
 * per thread. */
#ifndef FEEDER_S3_H
#define FEEDER_S3_H

#include <stddef.h>
#include <stdint.h>

#define S3_MAX_KEY 1024
#define S3_MAX_BUCKET 64

struct s3_config {
	char endpoint[512]; /* scheme://host[:port], no trailing slash */
	char region[64];
	int path_style; /* 1: /BUCKET/KEY; 0: BUCKET.host/KEY */
	char access_key[128];
	char secret_key[256];
	char session_token[4096]; /* "" if none */
	int tries;                /* attempts per request, >= 1 */
	int backoff_ms;           /* first retry's backoff ceiling */
};

/* The environment and credentials file as described above. Fails (with the
 * variable or file named) when no credentials are found or a value is
 * malformed. */
int s3_config_load(struct s3_config *c, char *err, size_t errlen);

/* "s3://bucket/prefix/..." → bucket and prefix (no leading or trailing
 * '/'; "" if none). Refuses other schemes, empty or invalid bucket names
 * (3-63 of [a-z0-9.-]), keys over S3_MAX_KEY. */
int s3_url_parse(const char *url, char bucket[S3_MAX_BUCKET], char prefix[S3_MAX_KEY], char *err,
		 size_t errlen);

struct s3_client;

int s3_client_new(const struct s3_config *c, struct s3_client **out, char *err, size_t errlen);
void s3_client_free(struct s3_client *cl);

/* Retries the client made so far (every request, every kind). */
uint64_t s3_client_retries(const struct s3_client *cl);

/* PUT an object from memory. */
int s3_put(struct s3_client *cl, const char *bucket, const char *key, const void *data, size_t len,
	   char *err, size_t errlen);

/* PUT an object from len bytes of fd at offset off (pread; fd's position
 * untouched). */
int s3_put_fd(struct s3_client *cl, const char *bucket, const char *key, int fd, uint64_t off,
	      uint64_t len, char *err, size_t errlen);

/* Multipart upload: begin (the upload id into id), parts numbered 1..10000
 * of at least 5 MiB but the last (each from fd at off, its ETag into etag),
 * complete with every part's ETag in order, or abort. */
int s3_multipart_begin(struct s3_client *cl, const char *bucket, const char *key, char *id,
		       size_t idlen, char *err, size_t errlen);
int s3_multipart_put(struct s3_client *cl, const char *bucket, const char *key, const char *id,
		     int part, int fd, uint64_t off, uint64_t len, char *etag, size_t etaglen,
		     char *err, size_t errlen);
int s3_multipart_complete(struct s3_client *cl, const char *bucket, const char *key, const char *id,
			  int nparts, char *const *etags, char *err, size_t errlen);
int s3_multipart_abort(struct s3_client *cl, const char *bucket, const char *key, const char *id,
		       char *err, size_t errlen);

/* HEAD: the object's size. -ENOENT (err says so) when it does not exist. */
int s3_head(struct s3_client *cl, const char *bucket, const char *key, uint64_t *size, char *err,
	    size_t errlen);

/* GET the whole object into a malloc'd buffer (at most max bytes, else
 * FEEDER_EQUOTA). -ENOENT when it does not exist. */
int s3_get(struct s3_client *cl, const char *bucket, const char *key, size_t max, void **data,
	   size_t *len, char *err, size_t errlen);

/* GET bytes [off, off+len) of an object into fd at fd_off (pwrite); a body
 * cut short is resumed by a Range request from where it stopped (counted
 * as a retry). Fails when the object is shorter. With crc not NULL, the
 * CRC-32C of the bytes written, taken as they arrive. */
int s3_get_range_fd(struct s3_client *cl, const char *bucket, const char *key, uint64_t off,
		    uint64_t len, int fd, uint64_t fd_off, uint32_t *crc, char *err, size_t errlen);

/* DELETE an object (absent is fine). */
int s3_delete(struct s3_client *cl, const char *bucket, const char *key, char *err, size_t errlen);

#endif
