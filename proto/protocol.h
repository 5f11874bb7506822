/* protocol.h — the wire protocol between feederd and its clients, and the
 * layout of a stream's shared-memory ring.
 *
 * Transport: a Unix-domain SOCK_SEQPACKET socket, so every send is one whole
 * message. A message is a 16-byte header followed by a fixed-size payload
 * whose length depends only on the type (no variable parts, so validation is
 * a length check plus field checks):
 *
 *   u32 magic (PROTO_MAGIC) | u16 version (PROTO_VERSION) | u16 type
 *   | u32 payload length | u32 reserved (0)
 *
 * All integers are little-endian; floats travel as their IEEE-754 bit
 * patterns in a u32/u64; strings are fixed-size fields holding a NUL-
 * terminated string whose remaining bytes are all zero. proto_decode()
 * checks every field (enums, ranges, NUL termination, names) before the
 * caller sees the message, so the daemon never acts on a half-valid request.
 *
 * Conversation (C = client, D = daemon):
 *   C HELLO            -> D WELCOME (limits of this connection)
 *   C OPEN_STREAM(tag) -> D STREAM_OPENED(tag, id) + the ring memfd by
 *                         SCM_RIGHTS, or ERROR(tag) if refused
 *   D BATCH_READY(id, slot, epoch, batch)  whenever a slot is filled
 *   C RELEASE(id, slot)                    when the client is done with it
 *   D STREAM_END(id)   after the last batch of the last epoch was sent
 *   C CLOSE_STREAM(id) -> D STREAM_END(id) (the stream is gone on both sides)
 *   C STATUS(what)     -> D STATUS_REPLY, or DATASET_INFO… / STREAM_INFO…
 *                         followed by LIST_END
 *   D GOODBYE          the daemon is stopping: no BATCH_READY follows. The
 *                      client keeps what it holds or was announced (the
 *                      slots' pages are not taken back) and should release
 *                      it and disconnect; the daemon waits for that up to
 *                      its shutdown_drain, then closes the socket and exits.
 *                      (Clients that treat GOODBYE as the end of the
 *                      connection, as earlier ones did, need nothing new.)
 *   D ERROR(code, stream, tag, fatal, message)
 *
 * HELLO must come first; anything else before it, a second HELLO, or a
 * daemon-side type sent by a client is a protocol error. A malformed message
 * (bad magic/version/type/length/field, a dataset name that is not allowed
 * such as "../x": FEEDER_EBADNAME) is answered with a fatal ERROR and the
 * connection is closed. A well-formed request that
 * cannot be served (no such dataset, over quota) gets a non-fatal ERROR that
 * carries the request's tag, and the connection stays usable. A stream that
 * fails while running (on_error=fail and a corrupt sample) gets a non-fatal
 * ERROR carrying its stream id; the stream is then gone.
 *
 * After STREAM_END(reason 0) a stream keeps its ring (and its share of the
 * quota) until the client sends CLOSE_STREAM or disconnects. Messages from
 * the daemon are queued in order when the client's socket is full; a client
 * that leaves very many unread is dropped.
 *
 * This module does no I/O (see sockmsg.h for sending and receiving). */
#ifndef FEEDER_PROTOCOL_H
#define FEEDER_PROTOCOL_H

#include "feeder_types.h"

#include <stddef.h>
#include <stdint.h>

#define PROTO_MAGIC 0x52444546u /* "FEDR" in little-endian byte order */
/* 7: STREAM_INFO ends with the stream's settings line (feeder_stream_status
 * .settings), so that feederctl shows each stream's augmentation.
 * 8: STATUS_REPLY ends with the shard cache's figures (feeder_status
 * .cache_*), for feederctl status/top. */
#define PROTO_VERSION 8
#define PROTO_HEADER_SIZE 16
/* No message is larger than this; a receiver's buffer of this size plus one
 * byte detects oversized messages (MSG_TRUNC). */
#define PROTO_MAX_MESSAGE 1024

#define PROTO_TEXT_MAX 256 /* ERROR message field, including the NUL */
#define PROTO_AGENT_MAX 32 /* HELLO/WELCOME software name, including the NUL */

enum proto_type {
	PROTO_HELLO = 1,         /* C->D */
	PROTO_WELCOME = 2,       /* D->C */
	PROTO_OPEN_STREAM = 3,   /* C->D */
	PROTO_STREAM_OPENED = 4, /* D->C, carries the memfd */
	PROTO_BATCH_READY = 5,   /* D->C */
	PROTO_RELEASE = 6,       /* C->D */
	PROTO_CLOSE_STREAM = 7,  /* C->D */
	PROTO_STREAM_END = 8,    /* D->C */
	PROTO_ERROR = 9,         /* D->C */
	PROTO_GOODBYE = 10,      /* D->C */
	PROTO_STATUS = 11,       /* C->D */
	PROTO_STATUS_REPLY = 12, /* D->C */
	PROTO_DATASET_INFO = 13, /* D->C */
	PROTO_STREAM_INFO = 14,  /* D->C */
	PROTO_LIST_END = 15,     /* D->C */
	PROTO_TYPE_MAX = 15,
};

enum proto_status_what {
	PROTO_STATUS_SUMMARY = 1,
	PROTO_STATUS_DATASETS = 2,
	PROTO_STATUS_STREAMS = 3
};

struct proto_hello {
	uint32_t pid;                /* informative; the daemon trusts SO_PEERCRED */
	char agent[PROTO_AGENT_MAX]; /* e.g. "libfeeder 0.1.0" */
};

struct proto_welcome {
	uint32_t session;     /* id of this connection in logs and STATUS */
	uint32_t max_streams; /* per connection */
	uint32_t max_slots;   /* per stream */
	uint32_t reserved;
	uint64_t quota;              /* bytes of ring memory this connection may hold */
	char agent[PROTO_AGENT_MAX]; /* e.g. "feederd 0.1.0" */
};

/* The request for a stream: the options exactly as libfeeder's callers
 * filled them (feeder_types.h). proto_decode checks that the message is well
 * formed (the dataset name included); whether the options are in range is
 * proto_opts_check's answer, which the daemon sends back as a non-fatal
 * FEEDER_EINVAL carrying the tag. */
struct proto_open_stream {
	uint32_t tag; /* chosen by the client, echoed in the answer */
	struct feeder_stream_opts opts;
};

/* The answer to OPEN_STREAM; the ring's memfd travels with it (SCM_RIGHTS).
 * The memfd is PROTO_RING_HEADER + slots * slot_size bytes, sealed with
 * F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_SEAL. */
struct proto_stream_opened {
	uint32_t tag;
	uint32_t stream; /* id, unique within the daemon, never 0 */
	uint32_t slots;
	uint32_t batch;
	uint64_t slot_size;         /* bytes, multiple of the page size */
	uint64_t ring_size;         /* bytes of the memfd */
	uint64_t batches;           /* batches this stream will send in all */
	uint64_t batches_per_epoch; /* for this rank, counting from batch 0 */
	uint64_t samples;           /* samples in the dataset */
	uint32_t classes;           /* classes in the dataset */
	uint32_t dtype, layout;
	uint32_t ndim;           /* 4 */
	uint32_t shape[4];       /* full batch shape, e.g. {B,3,H,W} */
	uint64_t labels_offset;  /* from the start of a slot */
	uint64_t indices_offset; /* from the start of a slot */
	uint64_t names_offset;   /* from the start of a slot; 0 without names */
	uint64_t tensor_offset;  /* from the start of a slot, PROTO_TENSOR_ALIGN */
	uint64_t tensor_bytes;   /* of a full batch */
	uint32_t placement;      /* enum feeder_placement, as the daemon serves it */
	uint32_t memory;         /* enum feeder_memory */
	uint64_t device_table;   /* FEEDER_MEMORY_DEVICE: offset of the device table
					  in the memfd (after the slots); else 0 */
};

struct proto_batch_ready {
	uint32_t stream;
	uint32_t slot; /* < slots */
	uint64_t epoch;
	uint64_t batch_index;  /* within the epoch, counted for this rank */
	uint32_t samples;      /* 1..batch (the last batch may be short) */
	uint32_t replacements; /* corrupt samples replaced in this batch */
};

struct proto_release {
	uint32_t stream;
	uint32_t slot;
	/* The trainer's totals for the stream, as the client measured them:
	 * time blocked waiting for a batch, and time between its calls. */
	uint64_t wait_us;
	uint64_t compute_us;
};

struct proto_close_stream {
	uint32_t stream;
};

struct proto_stream_end {
	uint32_t stream;
	uint32_t reason; /* 0 all batches sent, 1 closed by the client */
	uint64_t batches_sent;
};

struct proto_error {
	int32_t code;                 /* FEEDER_E* or -errno, < 0 */
	uint32_t stream;              /* the stream that failed, or 0 */
	uint32_t tag;                 /* the OPEN_STREAM tag refused, or 0 */
	uint32_t fatal;               /* 1: the daemon closes the connection next */
	char message[PROTO_TEXT_MAX]; /* one sentence */
};

struct proto_goodbye {
	uint32_t reason; /* 0 shutdown (SIGTERM/SIGINT) */
};

struct proto_status {
	uint32_t what; /* enum proto_status_what */
};

struct proto_list_end {
	uint32_t count; /* entries sent before it */
};

struct proto_msg {
	uint16_t type; /* enum proto_type */
	union {
		struct proto_hello hello;
		struct proto_welcome welcome;
		struct proto_open_stream open;
		struct proto_stream_opened opened;
		struct proto_batch_ready ready;
		struct proto_release release;
		struct proto_close_stream close;
		struct proto_stream_end end;
		struct proto_error error;
		struct proto_goodbye goodbye;
		struct proto_status status;
		struct feeder_status status_reply;
		struct feeder_dataset_status dataset;
		struct feeder_stream_status stream;
		struct proto_list_end list_end;
	} u;
};

/* Name of a message type ("HELLO", …), "?" if unknown. */
const char *proto_type_name(uint32_t type);
/* 1 if type is sent by clients, 0 if by the daemon or unknown. */
int proto_type_from_client(uint32_t type);
/* The exact payload length of type, or 0 if type is unknown. */
size_t proto_payload_len(uint32_t type);

/* Encode m into buf (cap bytes). Returns the message length (header included)
 * or FEEDER_EINVAL if cap is too small or the type unknown. Does not validate
 * field values (the sender is trusted to build valid messages; decode checks). */
int proto_encode(const struct proto_msg *m, void *buf, size_t cap);

/* Decode and validate one whole message of len bytes. Returns 0 and fills m,
 * or FEEDER_EPROTO (bad magic, type, length, field), FEEDER_EVERSION (other
 * protocol version) or FEEDER_EBADNAME (dataset name not allowed), with a
 * sentence in err naming the field. m's content is unspecified on error. */
int proto_decode(const void *buf, size_t len, struct proto_msg *m, char *err, size_t errlen);

/* 0 if name is an allowed dataset name: 1..FEEDER_DATASET_MAX-1 characters of
 * [A-Za-z0-9._-], not starting with '.' (so never "." or ".."); else
 * FEEDER_EBADNAME with a sentence. */
int proto_name_check(const char *name, char *err, size_t errlen);

/* Fill o with the documented defaults of every option (feeder_types.h);
 * dataset is "" and left for the caller. */
void proto_opts_default(struct feeder_stream_opts *o);
/* The defaults with pipeline jpeg and size x size outputs in train (1) or
 * eval (0) mode, or pipeline features with chunk_len-frame chunks: for the
 * tests, benchmarks and tools that build options by hand. */
void proto_opts_jpeg(struct feeder_stream_opts *o, uint32_t size, int train);
void proto_opts_features(struct feeder_stream_opts *o, uint32_t chunk_len, int train);

/* 0 if every option of o that the stream uses is in range (the common ones
 * and those of o->pipeline; the dataset name is proto_name_check's), else
 * FEEDER_EINVAL with a sentence naming the field ("batch 0 is not within
 * 1..65536"). The one check of a stream's options: feederd makes it once,
 * at admission (daemon/session.c), before anything is built, and the
 * stream, its workers and the pipelines trust the options after it. */
int proto_opts_check(const struct feeder_stream_opts *o, char *err, size_t errlen);

/* One line of printable ASCII naming what o->pipeline does to a sample, for
 * feederctl (STREAM_INFO's settings) and feederd's "stream opened" log line:
 *   jpeg 224x224 train, scale 0.08..1 ratio 0.75..1.33, flip p=0.5, f32 NCHW
 *   features chunk 200 train, pad repeat, cmn sliding 300, f32
 *   wave fbank 80, chunk 200 train, cmn utt, noise=musan p=0.6 snr
 *   0..15/5..15/13..20 babble 3..7, rir=rirs p=0.6, speed p=0.5 labels=new,
 *   gain off, specaug p=0.6 t1x10 f1x8, dither 1, f16
 * (snr: noise/music/babble ranges in dB; an augmentation whose probability
 * is 0 is "off"; a wave stream in eval mode says "no augmentation"). A line
 * longer than len - 1 bytes is cut and ends in "..."; bytes of the names
 * that are not printable become '?'. */
void proto_opts_describe(const struct feeder_stream_opts *o, char *buf, size_t len);

/* ---- Shared-memory ring layout -------------------------------------------
 *
 * The memfd of a stream holds:
 *   [0, PROTO_RING_HEADER)  struct proto_ring_header (then zeros)
 *   slot i at PROTO_RING_HEADER + i * slot_size, each:
 *     [0, 64)                         struct proto_slot_header
 *     [labels_offset, +4*batch)       int32 labels (labels_offset = 64)
 *     [indices_offset, +8*batch)      u64 dataset index of each sample (the
 *                                     record actually delivered, so a
 *                                     replacement shows as its own index)
 *     [names_offset, +NAME*batch)     with the names option only (else the
 *                                     offset is 0): each sample's name, a
 *                                     NUL-terminated string in a field of
 *                                     FEEDER_SAMPLE_NAME_MAX bytes, "" when
 *                                     the dataset keeps no name for it
 *     [tensor_offset, +tensor_bytes)  the batch tensor, tensor_offset a
 *                                     multiple of PROTO_TENSOR_ALIGN
 *   slot_size = tensor_offset + tensor_bytes rounded up to the page size.
 * Structs in shared memory are in host byte order (both ends share the host).
 * The daemon writes a slot only while the client does not hold it: between
 * RELEASE and the next BATCH_READY for that slot. A slot announced and not
 * released keeps its bytes whatever happens to the stream or the daemon
 * (the client's mapping keeps the pages); the rest of a ring may read
 * zeros once its stream is gone. */
#define PROTO_RING_MAGIC 0x474e5246u /* "FRNG" */
#define PROTO_RING_HEADER 4096
#define PROTO_SLOT_HEADER 64
#define PROTO_TENSOR_ALIGN 4096

struct proto_ring_header {
	uint32_t magic;   /* PROTO_RING_MAGIC */
	uint32_t version; /* PROTO_VERSION */
	uint32_t stream;
	uint32_t slots;
	uint64_t slot_size;
	uint64_t slot0_offset; /* PROTO_RING_HEADER */
	uint32_t batch, dtype, layout, ndim;
	uint32_t shape[4];
	uint64_t labels_offset, tensor_offset, tensor_bytes;
	uint64_t indices_offset, names_offset;
};

struct proto_slot_header {
	uint64_t epoch;
	uint64_t batch_index;
	uint32_t samples; /* valid samples (rows of labels and tensor) */
	uint32_t replacements;
	uint32_t dtype, layout, ndim;
	uint32_t shape[4]; /* shape[0] == samples */
	uint32_t sequence; /* counts fills of this slot, for debugging */
};

/* The device table of a FEEDER_MEMORY_DEVICE ring, at STREAM_OPENED's
 * device_table offset of the memfd (page aligned), PROTO_DEVICE_TABLE_HEAD
 * bytes and then one entry per slot. The handles are CUDA's opaque 64-byte
 * IPC handles: the tensor buffer (slots * tensor_stride bytes; slot i's
 * tensor at i * tensor_stride), and per slot an event the daemon records
 * after writing the slot (the client's stream waits on it) and one the
 * client records when it releases the slot (the daemon waits on it before
 * writing again). Both events are interprocess, without timing. */
#define PROTO_DEVICE_MAGIC 0x56454446u /* "FDEV" */
#define PROTO_DEVICE_TABLE_HEAD 256
#define PROTO_DEVICE_SLOT_ENTRY 128
#define PROTO_IPC_HANDLE 64
struct proto_device_table {
	uint32_t magic;      /* PROTO_DEVICE_MAGIC */
	int32_t device;      /* the daemon's CUDA ordinal (informative) */
	char pci_bus_id[32]; /* "0000:3b:00.0": finds the same GPU whatever
					  CUDA_VISIBLE_DEVICES the client has */
	uint64_t tensor_stride;
	uint8_t mem_handle[PROTO_IPC_HANDLE];
};
struct proto_device_slot {
	uint8_t ready_event[PROTO_IPC_HANDLE];
	uint8_t release_event[PROTO_IPC_HANDLE];
};
/* Bytes of a device table for slots, rounded up to page. */
uint64_t proto_device_table_size(uint32_t slots, uint64_t page);

/* Bytes per element of dtype, 0 if unknown. Inline: the pipelines size
 * their samples with it on feederd's per-sample path, which uses nothing
 * of protocol.c (tests/pipelines/sample_path_symbols.sh holds them to it). */
static inline size_t proto_dtype_size(uint32_t dtype)
{
	switch (dtype) {
	case FEEDER_DTYPE_U8:
		return 1;
	case FEEDER_DTYPE_F16:
		return 2;
	case FEEDER_DTYPE_F32:
		return 4;
	}
	return 0;
}

/* Compute the ring geometry of a stream: shape, offsets, slot and ring sizes.
 * For jpeg: shape {B,3,H,W} (NCHW) or {B,H,W,3} (NHWC); for features:
 * {B, feat_dim, chunk_len, 1}; ndim is 4 for both. page is the page size
 * (a power of two).
 * Returns 0, or FEEDER_EQUOTA if the sizes overflow. */
struct proto_geometry {
	uint32_t ndim;
	uint32_t shape[4];
	uint64_t sample_bytes;
	uint64_t labels_offset, indices_offset, names_offset;
	uint64_t tensor_offset, tensor_bytes, slot_size, ring_size;
};
int proto_geometry(const struct feeder_stream_opts *o, uint32_t feat_dim, uint64_t page,
		   struct proto_geometry *g, char *err, size_t errlen);

#endif
