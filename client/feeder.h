/* feeder.h — libfeeder, the C client of feederd.
 *
 * feederd decodes and augments training samples on its own worker threads and
 * writes each batch straight into shared memory that this library maps into
 * the trainer's address space. A batch is therefore never copied on its way
 * from the decoder to the trainer: feeder_stream_next() hands out a view (pointer,
 * shape, dtype, labels) into a slot of the stream's ring, and the trainer
 * gives the slot back with feeder_batch_release() once it has consumed it (e.g.
 * after the host-to-device copy). The daemon refills released slots while the
 * trainer works on the others, so with `slots` of prefetch the next batch is
 * normally ready before it is asked for.
 *
 * Objects and ownership
 *   struct feeder         one connection to feederd (feeder_connect /
 *                         feeder_disconnect). Opaque.
 *   struct feeder_stream  one stream of batches on a connection
 *                         (feeder_stream_open / feeder_stream_close). It owns
 *                         the mapping of its ring. Opaque.
 *   struct feeder_batch   a caller-owned view of one ready slot, filled by
 *                         feeder_stream_next. Its pointers stay valid until the
 *                         batch is released or its stream is closed.
 *
 * Threads: a connection and its streams may be used from any thread, but by
 * one thread at a time (the library takes no locks). Use one connection per
 * thread for parallel consumers.
 *
 * Errors: every function that can fail returns 0 (or a documented positive
 * value) on success and a negative code on failure: a negated errno
 * (-ENOENT, -ECONNREFUSED, ...) or one of the FEEDER_E* codes below.
 * feeder_strerror() names any code; feeder_last_error() gives the sentence of
 * the last failure on a connection, which for refusals by the daemon is the
 * daemon's own explanation ("no dataset named 'imagenet'", ...).
 *
 * Determinism: a stream's batches are a pure function of its options (seed,
 * epoch, rank/world, start_batch, pipeline parameters): opening the same
 * stream twice yields the same bytes. Ranks of one world are disjoint and
 * together cover each epoch; start_batch = k yields exactly the tail of the
 * full epoch from batch k on. start_sample = P starts the first epoch at
 * position P of its order, the ranks sharing the rest as P+r, P+r+w, ...:
 * a job that stopped after P samples resumes with any world size and each
 * sample of that epoch is still delivered once (elastic resume); a stream
 * that reconnects keeps it for that epoch only.
 *
 * Names: the connection is the library's root object, so its calls are
 * feeder_<verb> (feeder_connect, feeder_disconnect, feeder_set_reconnect);
 * everything else is feeder_<object>_<verb> (feeder_stream_open,
 * feeder_stream_next, feeder_batch_release).
 *
 * Link with `pkg-config --cflags --libs feeder`. Only feeder_* symbols are
 * exported. */
#ifndef FEEDER_H
#define FEEDER_H

#include "feeder_types.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct feeder;
struct feeder_stream;

/* Geometry of an open stream, as the daemon announced it. */
struct feeder_stream_info {
	uint32_t id; /* the daemon's stream id (feederctl streams) */
	uint32_t slots, batch;
	uint32_t dtype, layout;     /* enum feeder_dtype, feeder_layout */
	uint32_t ndim, shape[4];    /* shape of a full batch */
	uint64_t batches;           /* batches this stream delivers in all */
	uint64_t batches_per_epoch; /* for this rank, counting from batch 0 */
	uint64_t samples;           /* samples in the dataset */
	uint32_t classes;           /* classes in the dataset */
	void *ring;                 /* the mapping of the whole ring */
	size_t ring_size;           /* its length in bytes */
	size_t slot_size;
	uint32_t placement; /* enum feeder_placement, as served */
	uint32_t memory;    /* enum feeder_memory of the batches */
	int device;         /* FEEDER_MEMORY_DEVICE: CUDA ordinal here; else -1 */
};

/* A zero-copy view of one ready batch. data points into the shared ring and
 * is writable (the trainer may normalize in place); it stays valid until
 * feeder_batch_release(), feeder_stream_close() or feeder_disconnect(), even
 * if the daemon stops or restarts meanwhile (for device batches, see
 * feeder_set_reconnect). */
struct feeder_batch {
	void *data;              /* the tensor, 4096-byte aligned */
	size_t bytes;            /* of this batch: count * one sample */
	uint32_t ndim;           /* 4 */
	uint32_t shape[4];       /* shape[0] == count, e.g. {count,3,H,W} */
	uint32_t dtype, layout;  /* enum feeder_dtype, feeder_layout */
	const int32_t *labels;   /* count class ids */
	const uint64_t *indices; /* count dataset indices: the record each
					 sample came from (a replaced sample shows
					 its replacement's index) */
	const char *names;       /* with the names option: count names, each a
					 NUL-terminated string in a field of
					 FEEDER_SAMPLE_NAME_MAX bytes ("" where the
					 dataset keeps none); else NULL */
	uint32_t count;          /* samples in this batch (the last may be short) */
	uint64_t epoch;
	uint64_t batch_index;  /* within the epoch, counted for this rank */
	uint32_t replacements; /* corrupt samples replaced in this batch */
	uint32_t slot;         /* ring slot, for feeder_batch_release */
	uint32_t stream;       /* stream id, for feeder_batch_release */
	uint32_t memory;       /* enum feeder_memory: data is a device pointer
					 when FEEDER_MEMORY_DEVICE (labels stay on
					 the host) */
	int device;            /* its CUDA ordinal in this process, or -1 */
};

/* ---- Connections ------------------------------------------------------ */

/* Connect to feederd and greet it (HELLO/WELCOME, which checks the protocol
 * version). path: the socket; NULL means $FEEDER_SOCKET if set, else
 * FEEDER_DEFAULT_SOCKET. timeout_ms bounds the whole call; while it lasts, a
 * socket that does not exist yet or refuses connections is retried (so a
 * trainer may start before the daemon). timeout_ms < 0 waits forever, 0 tries
 * once (a daemon that accepts then has up to 10 s to answer HELLO).
 * On success *out is a new connection (free it with feeder_disconnect).
 * Errors: -ENOENT / -ECONNREFUSED (no daemon), -EACCES (socket permissions),
 * FEEDER_ETIMEDOUT, FEEDER_EVERSION, FEEDER_EDENIED, FEEDER_ECLOSED,
 * -ENOMEM; *out is NULL and feeder_last_error(NULL) gives the sentence. */
int feeder_connect(const char *path, int timeout_ms, struct feeder **out);

/* Unmap and free every stream still open on f, close the connection (the
 * daemon reclaims the streams when it sees the connection close) and free f.
 * NULL is a no-op. Batches and streams of f must not be used afterwards. */
void feeder_disconnect(struct feeder *f);

/* The sentence describing the last failure on f, or, when f is NULL, of the
 * last feeder_connect() that failed in this thread. "" if none. The string
 * belongs to the library and changes with the next failure. */
const char *feeder_last_error(const struct feeder *f);

/* A short phrase for any code returned by this library. Never NULL. */
const char *feeder_strerror(int code);

/* The connection's socket descriptor, for poll/epoll loops that want to wait
 * for batches of several connections at once (readable = a message is
 * waiting; call feeder_stream_next with timeout 0). Do not read from it yourself. */
int feeder_fd(const struct feeder *f);

/* Survive a restart of the daemon (a crash, SIGKILL, `systemctl restart`).
 * With timeout_ms != 0, a call that finds the connection lost (the daemon
 * closed it or vanished; refusals do not count) dials the same socket again
 * with exponential backoff (10 ms doubling up to 1 s) for up to timeout_ms
 * (< 0: forever), greets the new daemon and reopens every open stream at the
 * batch after the last one feeder_stream_next returned. Streams are pure functions
 * of their options, so the caller sees exactly the batches an undisturbed
 * stream delivers: none skipped, none twice. The call that reconnects blocks
 * for as long as that takes, whatever its own timeout. A daemon that stops
 * gracefully (SIGTERM) says GOODBYE after its last announcement: batches
 * announced before it are still handed out from the old ring, then the call
 * reconnects. Host batches held across the loss stay valid, whatever the
 * daemon did (their release is then local); the old ring's memory and
 * descriptor go with the last of them, only its address range stays mapped
 * (reading zeros) until the stream is closed. Device batches (FEEDER_MEMORY_
 * DEVICE) stay valid only while the old daemon keeps their memory: until
 * its shutdown drain ends after a SIGTERM, not at all after a crash or a
 * connection it dropped; release
 * them promptly (that is local too; libfeeder lets the GPU work queued on
 * the old ring finish before it closes it). A stream the new daemon refuses (its dataset is gone) fails with
 * FEEDER_ESTREAM and the others go on; stream ids change. 0, the default,
 * turns it off: a lost connection is FEEDER_ECLOSED. Returns 0. */
int feeder_set_reconnect(struct feeder *f, int timeout_ms);

/* How many times f has reconnected to a restarted daemon. */
uint32_t feeder_get_reconnects(const struct feeder *f);

/* ---- The daemon's own figures (what feederctl shows) --------------------- */

/* The daemon's summary: uptime, clients, streams, memory, totals. Waits up
 * to timeout_ms (< 0: forever); batches that arrive meanwhile are queued for
 * their streams. Returns 0, FEEDER_ETIMEDOUT or the connection's error. */
int feeder_get_status(struct feeder *f, int timeout_ms, struct feeder_status *out);

/* The datasets the daemon serves, or the streams it serves (the caller's
 * own, or everyone's for root and the daemon's admin group): *out is a new
 * array of *n entries, freed by the caller with free() (NULL when *n is 0).
 * Returns 0, -ENOMEM, FEEDER_ETIMEDOUT or the connection's error. */
int feeder_get_datasets(struct feeder *f, int timeout_ms, struct feeder_dataset_status **out,
			size_t *n);
int feeder_get_streams(struct feeder *f, int timeout_ms, struct feeder_stream_status **out,
		       size_t *n);

/* ---- Streams ------------------------------------------------------------ */

/* Fill o with the defaults documented in struct feeder_stream_opts
 * (feeder_types.h); the dataset name is empty: the caller must set it. */
void feeder_stream_opts_init(struct feeder_stream_opts *o);

/* Copy name into o->dataset. Returns 0, or FEEDER_EBADNAME when name is not
 * an allowed dataset name (empty, longer than FEEDER_DATASET_MAX - 1 bytes,
 * starting with '.', or a character other than A-Z a-z 0-9 . _ -); o is
 * then unchanged. */
int feeder_stream_opts_set_dataset(struct feeder_stream_opts *o, const char *name);

/* Ask the daemon for a stream and map its ring. Waits up to timeout_ms (< 0:
 * forever) for the answer; batches of other streams that arrive meanwhile are
 * queued for them. On success *out is the new stream, owned by the caller
 * until feeder_stream_close (or feeder_disconnect).
 * Errors: FEEDER_EINVAL (an option out of range), FEEDER_EBADNAME,
 * FEEDER_ENODATASET, FEEDER_EQUOTA (over this client's memory or stream
 * quota), FEEDER_ETIMEDOUT, FEEDER_ECLOSED, FEEDER_EPROTO, -errno from mmap;
 * feeder_last_error(f) has the sentence (the daemon's for refusals). A
 * refused stream leaves the connection usable.
 * With device_batches, the daemon may serve the stream from a device ring
 * (feeder_stream_info's memory says which); when this process cannot open
 * it (the daemon's GPU is not visible here, CUDA IPC fails) the stream is
 * reopened on the host ring, with one line on stderr saying why. */
int feeder_stream_open(struct feeder *f, const struct feeder_stream_opts *o, int timeout_ms,
		       struct feeder_stream **out);

/* The stream's geometry. Never fails. */
void feeder_stream_info(const struct feeder_stream *s, struct feeder_stream_info *info);

/* Wait up to timeout_ms (< 0: forever, 0: only what already arrived) for the
 * stream's next batch and fill *b with a view of it. Batches come in order
 * (epoch, batch_index). The caller holds the batch's slot until
 * feeder_batch_release(); holding all `slots` slots stalls the stream.
 * Returns 0, or:
 *   FEEDER_ETIMEDOUT  nothing yet; try again.
 *   FEEDER_EEND       every batch of the stream has been delivered.
 *   FEEDER_ESTREAM    the stream failed in the daemon (on_error=fail and a
 *                     corrupt sample, ...); feeder_last_error has why. Batches
 *                     delivered before stay valid until released.
 *   FEEDER_ECLOSED    the daemon went away (shutdown or crash).
 *   FEEDER_EPROTO     the daemon sent something malformed; the connection is
 *                     unusable.
 * On error *b is zeroed. */
int feeder_stream_next(struct feeder_stream *s, int timeout_ms, struct feeder_batch *b);

/* Give b's slot back to the daemon so it can refill it; b is zeroed and its
 * pointers must not be used any more. Returns 0, FEEDER_EINVAL (b is not a
 * batch of s that is currently held; nothing happens), or, when the
 * connection has failed, its error (FEEDER_ECLOSED when the daemon went
 * away): the slot is gone with the connection and nothing more is needed. */
int feeder_batch_release(struct feeder_stream *s, struct feeder_batch *b);

/* Close the stream: for a device ring, wait until the GPU work queued so
 * far is done (it may read the ring) and close the CUDA IPC handles; then
 * tell the daemon (a stream that failed keeps its ring in the daemon until
 * this), wait briefly for its acknowledgement, unpin and unmap the ring,
 * free s. Held batches become invalid. NULL is a no-op. Returns 0 or the
 * error of the goodbye exchange (the stream is freed either way). */
int feeder_stream_close(struct feeder_stream *s);

/* For a batch in device memory: make cuda_stream (a cudaStream_t; NULL is
 * the legacy default stream) wait, on the GPU, until the daemon's write of
 * the batch is complete. Call before launching work that reads b->data on
 * that stream; the CPU does not wait. A host batch needs nothing: returns 0.
 * Errors: -EIO with CUDA's reason, FEEDER_ENODEV without CUDA. */
int feeder_batch_wait(struct feeder_stream *s, const struct feeder_batch *b, void *cuda_stream);

/* feeder_batch_release for a batch whose readers were queued on cuda_stream: the
 * daemon overwrites a device slot only after the work queued there so far
 * has run (an IPC event recorded on cuda_stream). For host batches and for
 * feeder_batch_release (cuda_stream NULL: the legacy default stream) it is the same
 * call. */
int feeder_batch_release_on(struct feeder_stream *s, struct feeder_batch *b, void *cuda_stream);

/* Register the stream's ring with cudaHostRegister (portable, mapped), so
 * that copies from its batches to the GPU are single DMAs. Call once after
 * opening; feeder_stream_close unregisters. Returns 0, FEEDER_ENODEV when
 * libfeeder was built without CUDA or there is no device, or -EIO when CUDA
 * refuses (the sentence is in feeder_last_error). */
int feeder_stream_pin(struct feeder_stream *s);

#ifdef __cplusplus
}
#endif

#endif
