"""_lib.py — libfeeder for Python: the cffi (ABI mode) declarations of
client/feeder.h and the loading of libfeeder.so.

ABI mode means no compiled extension: the package is pure Python and works
with any Python 3 that has cffi (Debian's python3-cffi), whatever its version.
The price is that the declarations below are not checked by a compiler: they
MUST MATCH client/feeder.h field for field. tests/python/test_layout.py
compares every size and offset with what a C compiler makes of feeder.h, so a
header change that is not copied here fails the tests instead of corrupting
memory.

The library is looked up in this order: $FEEDER_LIBRARY (a path); the build
tree (this package is configured into <build>/client/python/feeder and the
library is <build>/client/libfeeder.so); the install's libdir recorded by
Meson in _paths.py; for a pip-installed package (no _paths.py), libdirs
under /usr/local and /usr; then the dynamic linker's search for
"libfeeder.so.0". If none loads, ImportError lists every place tried.
"""
import os

from cffi import FFI

# ---- Must match client/feeder.h ----------------------------------------
CDEF = """
enum {
    FEEDER_EBASE = 10000,
    FEEDER_ECORRUPT = -10001,
    FEEDER_EVERSION = -10002,
    FEEDER_EFORMAT = -10003,
    FEEDER_EPROTO = -10004,
    FEEDER_EDECODE = -10005,
    FEEDER_EQUOTA = -10006,
    FEEDER_ENODATASET = -10007,
    FEEDER_EBADNAME = -10008,
    FEEDER_EINVAL = -10009,
    FEEDER_ECLOSED = -10010,
    FEEDER_ETIMEDOUT = -10011,
    FEEDER_EEND = -10012,
    FEEDER_ENODEV = -10013,
    FEEDER_EDENIED = -10014,
    FEEDER_ESTREAM = -10015,
};
enum feeder_pipeline { FEEDER_PIPE_JPEG = 1, FEEDER_PIPE_FEATURES = 2, FEEDER_PIPE_WAVE = 3 };
enum feeder_wave_features { FEEDER_WAVE_FBANK = 1, FEEDER_WAVE_MFCC = 2 };
enum feeder_speed_labels { FEEDER_SPEED_SAME = 0, FEEDER_SPEED_NEW = 1 };
enum feeder_dtype { FEEDER_DTYPE_U8 = 1, FEEDER_DTYPE_F16 = 2, FEEDER_DTYPE_F32 = 3 };
enum feeder_layout { FEEDER_LAYOUT_NCHW = 1, FEEDER_LAYOUT_NHWC = 2 };
enum feeder_on_error { FEEDER_ON_ERROR_REPLACE = 0, FEEDER_ON_ERROR_FAIL = 1 };
enum feeder_feat_pad { FEEDER_FEAT_PAD_REPEAT = 1, FEEDER_FEAT_PAD_SKIP = 2 };
enum feeder_feat_cmn { FEEDER_FEAT_CMN_NONE = 0, FEEDER_FEAT_CMN_UTT = 1,
                       FEEDER_FEAT_CMN_SLIDING = 2 };
enum feeder_placement { FEEDER_PLACEMENT_CPU = 0, FEEDER_PLACEMENT_GPU = 1,
                        FEEDER_PLACEMENT_AUTO = 2 };
enum feeder_memory { FEEDER_MEMORY_HOST = 0, FEEDER_MEMORY_DEVICE = 1 };
#define FEEDER_STAGES 5

#define FEEDER_DATASET_MAX 64
#define FEEDER_SAMPLE_NAME_MAX 256

struct feeder_jpeg_opts {
    uint32_t height, width;
    uint32_t train;
    float scale_min, scale_max;
    float ratio_min, ratio_max;
    float flip_p;
    float resize_ratio;
    float mean[3], std[3];
};

struct feeder_features_opts {
    uint32_t chunk_len;
    uint32_t pad;
    uint32_t cmn;
    uint32_t cmn_window;
    uint32_t cvn;
    uint32_t train;
};

struct feeder_wave_opts {
    uint32_t chunk_len;
    uint32_t train;
    uint32_t pad;
    uint32_t features;
    uint32_t bins;
    uint32_t ceps;
    float dither;
    uint32_t cmn;
    uint32_t cmn_window;
    uint32_t cvn;
    char noise[64];
    float noise_p;
    float snr_noise_min, snr_noise_max;
    float snr_music_min, snr_music_max;
    float snr_babble_min, snr_babble_max;
    uint32_t babble_min, babble_max;
    char rir[64];
    float reverb_p;
    float speed_p;
    uint32_t speed_labels;
    float gain_p;
    float gain_min_db, gain_max_db;
    float specaug_p;
    uint32_t time_masks, time_mask_max;
    uint32_t freq_masks, freq_mask_max;
};

struct feeder_stream_opts {
    char dataset[64];
    uint32_t pipeline;
    uint32_t batch;
    uint64_t seed;
    uint64_t epoch;
    uint32_t epochs;
    uint32_t shuffle;
    uint64_t start_batch;
    uint64_t start_sample;
    uint32_t rank, world;
    uint32_t drop_last;
    uint32_t slots;
    uint32_t dtype;
    uint32_t layout;
    uint32_t on_error;
    uint32_t names;
    uint32_t placement;
    uint32_t device_batches;
    struct feeder_jpeg_opts jpeg;
    struct feeder_features_opts features;
    struct feeder_wave_opts wave;
};

struct feeder_status {
    uint64_t uptime_ms;
    uint32_t clients, streams, workers, datasets;
    uint64_t memory_used, memory_limit;
    uint64_t batches, samples;
    uint64_t replacements;
    uint64_t decode_errors;
    uint64_t protocol_errors;
    double samples_per_s;
    double workers_busy;
    double stage_s[5];
};

struct feeder;
struct feeder_stream;

struct feeder_stream_info {
    uint32_t id;
    uint32_t slots, batch;
    uint32_t dtype, layout;
    uint32_t ndim, shape[4];
    uint64_t batches;
    uint64_t batches_per_epoch;
    uint64_t samples;
    uint32_t classes;
    void *ring;
    size_t ring_size;
    size_t slot_size;
    uint32_t placement;
    uint32_t memory;
    int device;
};

struct feeder_batch {
    void *data;
    size_t bytes;
    uint32_t ndim;
    uint32_t shape[4];
    uint32_t dtype, layout;
    const int32_t *labels;
    const uint64_t *indices;
    const char *names;
    uint32_t count;
    uint64_t epoch;
    uint64_t batch_index;
    uint32_t replacements;
    uint32_t slot;
    uint32_t stream;
    uint32_t memory;
    int device;
};

int feeder_connect(const char *path, int timeout_ms, struct feeder **out);
void feeder_disconnect(struct feeder *f);
const char *feeder_last_error(const struct feeder *f);
const char *feeder_strerror(int code);
int feeder_fd(const struct feeder *f);
int feeder_set_reconnect(struct feeder *f, int timeout_ms);
uint32_t feeder_get_reconnects(const struct feeder *f);
int feeder_get_status(struct feeder *f, int timeout_ms, struct feeder_status *out);
void feeder_stream_opts_init(struct feeder_stream_opts *o);
int feeder_stream_opts_set_dataset(struct feeder_stream_opts *o, const char *name);
int feeder_stream_open(struct feeder *f, const struct feeder_stream_opts *o, int timeout_ms,
                       struct feeder_stream **out);
void feeder_stream_info(const struct feeder_stream *s, struct feeder_stream_info *info);
int feeder_stream_next(struct feeder_stream *s, int timeout_ms, struct feeder_batch *b);
int feeder_batch_release(struct feeder_stream *s, struct feeder_batch *b);
int feeder_stream_close(struct feeder_stream *s);
int feeder_stream_pin(struct feeder_stream *s);
int feeder_batch_wait(struct feeder_stream *s, const struct feeder_batch *b, void *cuda_stream);
int feeder_batch_release_on(struct feeder_stream *s, struct feeder_batch *b, void *cuda_stream);
"""
# ---- end of the part that must match client/feeder.h -------------------

ffi = FFI()
ffi.cdef(CDEF)


def _candidates():
    env = os.environ.get("FEEDER_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    out = [os.path.join(here, "..", "..", "libfeeder.so.0")]
    try:
        from . import _paths
        out.append(os.path.join(_paths.LIBDIR, "libfeeder.so.0"))
    except ImportError:
        pass
    # pip-installed (no _paths.py): meson install's usual places, then the
    # dynamic linker's own search
    import sysconfig
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    for prefix in ("/usr/local", "/usr"):
        for lib in ("lib/" + multiarch if multiarch else "lib", "lib64", "lib"):
            p = os.path.join(prefix, lib, "libfeeder.so.0")
            if p not in out:
                out.append(p)
    out.append("libfeeder.so.0")
    return out


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (missing)")
            continue
        try:
            return ffi.dlopen(path), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("feeder: cannot load libfeeder; tried " + "; ".join(tried)
                      + " (set FEEDER_LIBRARY to the library's path)")


lib, library_path = _load()
