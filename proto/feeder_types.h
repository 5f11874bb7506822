/* feeder_types.h — the types trainers and feederd share: what a stream is
 * asked to be (the one definition of the stream options, their enums and,
 * in proto/protocol.c's field walker, their defaults and ranges), and what
 * the daemon reports about itself, its datasets and its streams.
 *
 * The same struct travels everywhere without being copied field by field:
 * a trainer fills it (libfeeder's feeder_stream_opts_init gives the
 * defaults; this header is installed beside feeder.h, which includes it),
 * OPEN_STREAM carries it (proto/protocol.h), and feederd's pipelines read it
 * as it arrived (daemon/jpeg_pipeline.h, daemon/features_pipeline.h). The
 * Python client's cffi declarations are generated from this header at build
 * time (client/python/gen_cdef.py; tests/python/test_layout.py compares them
 * with the C compiler's layout).
 *
 * Adding an option means: a field here, its line in walk_opts() in
 * proto/protocol.c (encoding, default and range in one place), and the
 * pipeline that reads it; a keyword in client/python/feeder/pipelines.py
 * only where Python should name it. See ARCHITECTURE.md.
 *
 * Enum fields are uint32_t so that the struct has the same meaning on the
 * wire, in C and through cffi; only the fixed-width types below are used. */
#ifndef FEEDER_TYPES_H
#define FEEDER_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes: every call returns 0 (or a documented positive value) or a
 * negative code, either a negated errno or one of these, for failures errno
 * has no good word for. feeder_strerror() names any of them. */
enum {
	FEEDER_EBASE = 10000,
	FEEDER_ECORRUPT = -(FEEDER_EBASE + 1),   /* stored data fails its checks (CRC, bounds) */
	FEEDER_EVERSION = -(FEEDER_EBASE + 2),   /* format or protocol version not supported */
	FEEDER_EFORMAT = -(FEEDER_EBASE + 3),    /* not a Feeder dataset / malformed record */
	FEEDER_EPROTO = -(FEEDER_EBASE + 4),     /* malformed protocol message */
	FEEDER_EDECODE = -(FEEDER_EBASE + 5),    /* a sample could not be decoded (bad JPEG) */
	FEEDER_EQUOTA = -(FEEDER_EBASE + 6),     /* a memory or count limit would be exceeded */
	FEEDER_ENODATASET = -(FEEDER_EBASE + 7), /* no dataset of that name */
	FEEDER_EBADNAME = -(FEEDER_EBASE + 8),   /* a name that is not allowed (path escape) */
	FEEDER_EINVAL = -(FEEDER_EBASE + 9),     /* an option or argument out of range */
	FEEDER_ECLOSED = -(FEEDER_EBASE + 10),   /* the peer closed the connection */
	FEEDER_ETIMEDOUT = -(FEEDER_EBASE + 11), /* nothing arrived in time */
	FEEDER_EEND = -(FEEDER_EBASE + 12),      /* the stream has delivered all its batches */
	FEEDER_ENODEV = -(FEEDER_EBASE + 13),    /* no CUDA device / CUDA not built */
	FEEDER_EDENIED = -(FEEDER_EBASE + 14),   /* the daemon does not serve this user */
	FEEDER_ESTREAM = -(FEEDER_EBASE + 15),   /* the stream ended with an error */
};

/* feederd's socket when neither a path nor $FEEDER_SOCKET says otherwise. */
#define FEEDER_DEFAULT_SOCKET "/run/feeder/feederd.sock"
/* feederd's datasets directory when its configuration names none. */
#define FEEDER_DEFAULT_DATASETS "/var/lib/feeder/datasets"

/* What the daemon does to each sample. */
enum feeder_pipeline { FEEDER_PIPE_JPEG = 1, FEEDER_PIPE_FEATURES = 2, FEEDER_PIPE_WAVE = 3 };
/* Element types of the batch tensor. */
enum feeder_dtype { FEEDER_DTYPE_U8 = 1, FEEDER_DTYPE_F16 = 2, FEEDER_DTYPE_F32 = 3 };
enum feeder_layout { FEEDER_LAYOUT_NCHW = 1, FEEDER_LAYOUT_NHWC = 2 };
/* What a corrupt sample does: replaced by the next valid sample of the epoch
 * (counted in the batch's replacements), or the stream fails. */
enum feeder_on_error { FEEDER_ON_ERROR_REPLACE = 0, FEEDER_ON_ERROR_FAIL = 1 };
/* features: what an utterance shorter than chunk_len does. */
enum feeder_feat_pad { FEEDER_FEAT_PAD_REPEAT = 1, FEEDER_FEAT_PAD_SKIP = 2 };
/* features: cepstral mean normalization. */
enum feeder_feat_cmn {
	FEEDER_FEAT_CMN_NONE = 0,
	FEEDER_FEAT_CMN_UTT = 1,
	FEEDER_FEAT_CMN_SLIDING = 2
};
/* wave: the features a chunk becomes (Kaldi's compute-fbank-feats or
 * compute-mfcc-feats recipe, media/fbank.h). */
enum feeder_wave_features { FEEDER_WAVE_FBANK = 1, FEEDER_WAVE_MFCC = 2 };
/* wave: the label of a speed-perturbed chunk: the speaker's, or a new
 * speaker per speed factor as wespeaker trains (0.9: label + classes, 1.1:
 * label + 2 classes; the model then has 3 x classes outputs). */
enum feeder_speed_labels { FEEDER_SPEED_SAME = 0, FEEDER_SPEED_NEW = 1 };
/* Where the daemon preprocesses a stream: on its worker threads, on its GPU
 * (feederd --gpu N; the workers still entropy-decode), or whichever the first
 * batches show to be faster. Without a GPU in the daemon, gpu is refused and
 * auto means cpu. */
enum feeder_placement {
	FEEDER_PLACEMENT_CPU = 0,
	FEEDER_PLACEMENT_GPU = 1,
	FEEDER_PLACEMENT_AUTO = 2
};
/* Where a batch's tensor is: host memory (the shared ring) or the GPU's
 * memory (a device-resident ring shared through CUDA IPC). */
enum feeder_memory { FEEDER_MEMORY_HOST = 0, FEEDER_MEMORY_DEVICE = 1 };

/* Where a worker's time goes, per sample: reading the record (and checking
 * it), entropy decoding and IDCT of the crop's region (also the staging
 * for a GPU batch), resampling/normalising/converting into the slot, the
 * features pipeline, and running a batch on the GPU. */
enum feeder_stage {
	FEEDER_STAGE_READ = 0,
	FEEDER_STAGE_DECODE = 1,
	FEEDER_STAGE_TRANSFORM = 2,
	FEEDER_STAGE_FEATURES = 3,
	FEEDER_STAGE_GPU = 4,
};
#define FEEDER_STAGES 5

/* Bytes of the dataset name field, including its NUL: names are 1..63
 * characters of [A-Za-z0-9._-], not starting with '.'. */
#define FEEDER_DATASET_MAX 64
/* Bytes of one sample's name in a batch (names = 1), including the NUL;
 * longer names are cut at a UTF-8 character boundary. */
#define FEEDER_SAMPLE_NAME_MAX 256
/* Bytes of a stream's settings line in its status (feeder_stream_status),
 * including the NUL. */
#define FEEDER_SETTINGS_MAX 256

/* Largest values the options may take (the daemon's configuration may set
 * tighter ones: max_slots, memory limits). */
#define FEEDER_MAX_BATCH 65536
#define FEEDER_MAX_SLOTS 256
#define FEEDER_MAX_WORLD 65536
#define FEEDER_MAX_EPOCHS 1000000
#define FEEDER_MAX_SIDE 8192       /* jpeg output height/width */
#define FEEDER_MAX_CHUNK 65536     /* features chunk_len and cmn_window */
#define FEEDER_MAX_WAVE_CHUNK 6000 /* wave chunk_len: a minute of frames */
/* wave bins: the mel filters that each still cover a bin of the 512-point
 * FFT of 16 kHz audio between 20 and 7600 Hz (the lowest filters narrow
 * with their count; at 125 the fourth covers none) */
#define FEEDER_MAX_WAVE_BINS 124

/* The jpeg pipeline: torchvision's RandomResizedCrop(size, scale, ratio) +
 * RandomHorizontalFlip(flip_p) in train mode, Resize(size * resize_ratio) +
 * CenterCrop(size) in eval mode, then ToTensor + Normalize(mean, std). */
struct feeder_jpeg_opts {
	uint32_t height, width;     /* output size; default 224 x 224 */
	uint32_t train;             /* 1: random resized crop + flip; 0: resize +
					center crop; default 1 */
	float scale_min, scale_max; /* crop area fraction; default 0.08..1 */
	float ratio_min, ratio_max; /* crop aspect ratio w/h; default 3/4..4/3 */
	float flip_p;               /* horizontal flip probability; default 0.5 */
	float resize_ratio;         /* eval: shorter side = size * ratio; default
					256/224 */
	float mean[3], std[3];      /* per channel, on [0,1] pixels; default
					ImageNet's. u8 output is not normalized. */
};

/* The features pipeline: a chunk of chunk_len frames of an utterance's
 * feature matrix, normalized, written as (feat_dim, chunk_len). */
struct feeder_features_opts {
	uint32_t chunk_len;  /* frames per example; default 200 */
	uint32_t pad;        /* enum feeder_feat_pad; default repeat */
	uint32_t cmn;        /* enum feeder_feat_cmn; default sliding */
	uint32_t cmn_window; /* frames (sliding); default 300, Kaldi's */
	uint32_t cvn;        /* 1: also variance normalization; default 0 */
	uint32_t train;      /* 1: random chunk; 0: centered; default 1 */
};

/* The wave pipeline: a chunk of a waveform dataset (packer pack audio
 * --store wave, 16 kHz), augmented on the daemon's workers, turned into
 * features there and written as (feat_dim, chunk_len) like the features
 * pipeline's output. In train mode the chunk is random and each
 * augmentation applies with its probability, in this order: speed
 * perturbation, reverberation, additive noise, gain, dither, features, CMN,
 * SpecAugment; every draw is a function of (seed, epoch, sample index). In
 * eval mode (train 0) the chunk is centred and nothing random is applied
 * (dither included). */
struct feeder_wave_opts {
	uint32_t chunk_len;             /* frames of 10 ms per example; default 200 */
	uint32_t train;                 /* 1: random chunk and augmentation; default 1 */
	uint32_t pad;                   /* enum feeder_feat_pad; default repeat */
	uint32_t features;              /* enum feeder_wave_features; default fbank */
	uint32_t bins;                  /* mel bins, 3..FEEDER_MAX_WAVE_BINS (124); default 80 */
	uint32_t ceps;                  /* mfcc: cepstra kept, 1..bins; default 30 */
	float dither;                   /* Gaussian dither at int16 scale (Kaldi's
					--dither); default 0 */
	uint32_t cmn;                   /* enum feeder_feat_cmn over the chunk; default utt */
	uint32_t cmn_window;            /* frames (sliding); default 300 */
	uint32_t cvn;                   /* 1: also variance normalization; default 0 */
	char noise[FEEDER_DATASET_MAX]; /* wave dataset of noises, classes named
					noise, music and speech (MUSAN's layout;
					speech is summed into babble); "" none */
	float noise_p;                  /* probability of additive noise, of a
					category drawn among those present; default 0 */
	float snr_noise_min, snr_noise_max;   /* dB; default 0..15 (Kaldi's recipe) */
	float snr_music_min, snr_music_max;   /* dB; default 5..15 */
	float snr_babble_min, snr_babble_max; /* dB; default 13..20 */
	uint32_t babble_min, babble_max;      /* speech recordings summed; default 3..7 */
	char rir[FEEDER_DATASET_MAX];         /* wave dataset of room impulse responses; "" none */
	float reverb_p;                       /* probability of reverberation; default 0 */
	float speed_p;                        /* probability of a speed factor of 0.9 or 1.1
					(equally likely) instead of 1; default 0 */
	uint32_t speed_labels;                /* enum feeder_speed_labels; default same */
	float gain_p;                         /* probability of a gain; default 0 */
	float gain_min_db, gain_max_db;       /* default -6..6 */
	float specaug_p;                      /* probability of SpecAugment masks; default 0 */
	uint32_t time_masks, time_mask_max;   /* masks, and frames each at most; default 1, 10 */
	uint32_t freq_masks, freq_mask_max;   /* masks, and bins each at most; default 1, 8 */
};

/* Everything a stream is asked to be. Fill it with feeder_stream_opts_init
 * (libfeeder) and change what differs; the daemon validates every field and
 * refuses the stream (FEEDER_EINVAL, with a sentence naming the field)
 * otherwise. Only the options of the chosen pipeline are read. */
struct feeder_stream_opts {
	char dataset[FEEDER_DATASET_MAX]; /* the dataset's name; no default */
	uint32_t pipeline;                /* enum feeder_pipeline; default jpeg */
	uint32_t batch;                   /* samples per batch, 1..65536; default 32 */
	uint64_t seed;                    /* shuffle and augmentation seed; default 0 */
	uint64_t epoch;                   /* first epoch; default 0 */
	uint32_t epochs;                  /* epochs served back to back; default 1 */
	uint32_t shuffle;                 /* 1: each epoch in a seeded random order; 0: in
				  dataset order (evaluation); default 1. Ranks
				  take every world-th position either way. */
	uint64_t start_batch;             /* first batch of the first epoch (resume); default 0 */
	uint64_t start_sample;            /* first epoch position of the first epoch, counted
				  over all ranks (elastic resume: a job that
				  stopped after P samples of an epoch resumes at
				  P with any world size; the ranks share
				  positions P.. as they share an epoch, and
				  start_batch then counts batches of that
				  share); at most the dataset's size; default 0 */
	uint32_t rank, world;             /* this consumer's share: rank < world; default 0 of 1 */
	uint32_t drop_last;               /* 1: drop the epoch's last short batch; default 0 */
	uint32_t slots;                   /* ring depth (prefetch), 1..256; default 4 */
	uint32_t dtype;                   /* enum feeder_dtype; default f32 (u8: jpeg only) */
	uint32_t layout;         /* enum feeder_layout; default NCHW (features: NCHW only) */
	uint32_t on_error;       /* enum feeder_on_error; default replace */
	uint32_t names;          /* 1: each batch also carries its samples' names
				  (where the dataset keeps them); default 0 */
	uint32_t placement;      /* enum feeder_placement; default cpu */
	uint32_t device_batches; /* 1: take batches in GPU memory when the daemon
				  offers them (placement gpu, and a GPU that this
				  process sees too); otherwise, and by default,
				  batches are in the host ring */
	struct feeder_jpeg_opts jpeg;
	struct feeder_features_opts features;
	struct feeder_wave_opts wave;
};

/* ---- What the daemon reports (feeder_get_status, _datasets, _streams;
 * feederctl). The STATUS reply, DATASET_INFO and STREAM_INFO messages carry
 * these structs. */

struct feeder_status {
	uint64_t uptime_ms;
	uint32_t clients, streams, workers, datasets;
	uint64_t memory_used, memory_limit; /* bytes of stream rings */
	uint64_t batches, samples;          /* sent / decoded since the daemon started */
	uint64_t replacements;              /* corrupt samples replaced */
	uint64_t decode_errors;             /* samples that failed to decode (replaced or not) */
	uint64_t protocol_errors;           /* malformed messages received */
	double samples_per_s;               /* over the last few seconds, all streams */
	double workers_busy;                /* share of the workers' time spent on samples,
					  over the last 10 s (0..1; -1 in the first seconds) */
	double stage_s[FEEDER_STAGES];      /* worker seconds per enum feeder_stage, since start */
	/* The shard cache of remote (s3://) datasets; all 0 when the daemon
	 * serves none. */
	uint64_t cache_bytes, cache_limit; /* shard files on disk now, and cache_limit */
	uint64_t cache_peak_bytes;         /* the most bytes on disk at any time */
	uint64_t cache_hits, cache_misses; /* shard reads that found it ready / had to wait */
	uint64_t cache_fetches;            /* shards fetched and checked */
	uint64_t cache_fetched_bytes;      /* bytes received from the store */
	uint64_t cache_retries;            /* requests retried */
	uint64_t cache_failures;           /* fetches that failed for good */
	double cache_wait_s;               /* worker seconds spent waiting for a fetch */
};

struct feeder_dataset_status {
	char name[FEEDER_DATASET_MAX];
	uint32_t kind; /* 1 jpeg images, 2 feature matrices, 3 waveforms */
	uint32_t classes;
	uint64_t samples;
	uint32_t feat_dim; /* features: columns per frame; waveforms: 1 */
	uint32_t streams;  /* open streams reading it */
};

struct feeder_stream_status {
	uint32_t stream, session; /* ids in the daemon (and its log) */
	uint32_t pid, uid;        /* of the client (SO_PEERCRED) */
	char dataset[FEEDER_DATASET_MAX];
	uint32_t pipeline, batch, slots;
	uint32_t ready; /* slots filled and not yet released */
	uint64_t epoch; /* epoch being produced */
	uint64_t batches_sent, batches_total;
	uint64_t samples; /* decoded */
	uint64_t replacements;
	double samples_per_s;               /* over the last few seconds */
	uint64_t client_wait_us;            /* time with no batch ready for the client */
	uint64_t ring_full_us;              /* time all slots were held by the client */
	uint32_t placement;                 /* requested, enum feeder_placement */
	uint32_t active;                    /* FEEDER_PLACEMENT_CPU or _GPU: what runs now */
	uint32_t memory;                    /* enum feeder_memory */
	uint32_t deciding;                  /* 1 while placement=auto still measures */
	float auto_cpu_ms, auto_gpu_ms;     /* auto: measured ms per batch each way, or 0 */
	uint32_t filling;                   /* slots the workers are filling now */
	uint32_t trainer_reports;           /* 1 once the client has reported its data wait */
	uint64_t trainer_wait_us;           /* the trainer's time blocked waiting for a batch */
	uint64_t trainer_compute_us;        /* and between its calls (its compute), as reported */
	float wait_share_10s;               /* wait / (wait + compute) over the last 10 s, */
	float wait_share_total;             /* and since the stream opened; -1: not reported */
	double bytes_per_s;                 /* tensor bytes produced, over the last few seconds */
	double stage_s[FEEDER_STAGES];      /* worker seconds per enum feeder_stage */
	char settings[FEEDER_SETTINGS_MAX]; /* the pipeline's settings in one line of
					  printable ASCII, e.g. "wave fbank 80, chunk
					  200 train, cmn utt, noise=musan p=0.6 ..."
					  (proto_opts_describe); cut with "..." */
};

#ifdef __cplusplus
}
#endif

#endif
