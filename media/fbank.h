/* fbank.h — Kaldi-compatible log mel filterbank and MFCC features, with
 * Kaldi's energy voice-activity detection.
 *
 * `packer pack audio` turns each utterance (float samples from audio_file.h, at
 * int16 scale, 16 kHz) into a frames x dim matrix with this module; feederd's
 * features pipeline and the x-vector trainer then consume those matrices.
 * The numbers follow Kaldi's compute-fbank-feats / compute-mfcc-feats /
 * compute-vad so that a model or a recipe tuned on Kaldi features sees the
 * same input:
 *
 *   framing   25 ms windows (400 samples) every 10 ms (160), snip-edges=true:
 *             frames = 1 + (n - 400) / 160 for n >= 400, else 0. (Kaldi's
 *             VoxCeleb mfcc.conf says --snip-edges=false; Feeder keeps the
 *             Kaldi default so that no sample outside the file is invented.)
 *   per frame DC offset removed; raw log energy taken here (Kaldi's
 *             log-energy-pre-window); pre-emphasis 0.97; Povey window
 *             (Hann to the power 0.85), Hamming optional; zero-padded to 512;
 *             power spectrum |X(k)|^2 by FFTW, frames in double (the
 *             output is float); frames 2j and 2j + 1 share one complex FFT
 *             (as its real and imaginary parts), so a frame's last bits
 *             depend on its partner: the same samples framed alike give
 *             the same bytes.
 *   mel       1127 ln(1 + f/700); triangular filters equally spaced in mel
 *             between low_freq and high_freq, over FFT bins 0..255 (Kaldi
 *             leaves out the Nyquist bin). Defaults are the VoxCeleb recipe's:
 *             low 20 Hz, high -400 (Kaldi's convention: <= 0 is an offset
 *             from Nyquist, so 7600 Hz).
 *   log       ln(max(energy, FLT_EPSILON)).
 *   fbank     the log mel energies (default 40 bins).
 *   mfcc      DCT-II of the log mel energies with Kaldi's scaling (row 0
 *             sqrt(1/N), rows k > 0 sqrt(2/N) cos(pi/N (n + 0.5) k)), first
 *             ceps rows, cepstral lifter 1 + Q/2 sin(pi i / Q) with Q = 22,
 *             then c0 replaced by the raw log energy (Kaldi's --use-energy,
 *             on by default). Default 30 bins, 30 cepstra, as the VoxCeleb
 *             x-vector recipe.
 *
 * No dither is added (Kaldi's default adds Gaussian noise of scale 1): the
 * packer must produce the same bytes every time it packs the same files.
 *
 * VAD is Kaldi's compute-vad with the VoxCeleb vad.conf: with E(t) the raw
 * log energy of frame t (the MFCC c0 that compute-vad reads) and mean(E) its
 * average over the utterance, a frame is "loud" when E(t) > 5.5 + 0.5
 * mean(E); frame t is voiced when at least 0.12 of the frames t-2..t+2 that
 * exist are loud. Unvoiced frames are dropped from the output (Kaldi's
 * select-voiced-frames), so with context 2 a silent stretch loses all but
 * the two frames next to speech on each side.
 *
 * Threads: an extractor owns its FFTW plan and scratch buffers, so use one
 * per thread. FFTW's planner is not thread-safe; fbank_create and
 * fbank_destroy serialise planning on a mutex of this module, and plans are
 * made with FFTW_ESTIMATE so that every run computes in the same order. */
#ifndef FEEDER_FBANK_H
#define FEEDER_FBANK_H

#include <stddef.h>
#include <stdint.h>

#define FBANK_RATE 16000
#define FBANK_FRAME_LEN 400
#define FBANK_FRAME_SHIFT 160
#define FBANK_FFT_LEN 512

enum fbank_kind { FBANK_KIND_FBANK = 1, FBANK_KIND_MFCC = 2 };
enum fbank_window { FBANK_WINDOW_POVEY = 0, FBANK_WINDOW_HAMMING = 1 };

struct fbank_opts {
	int kind;             /* enum fbank_kind */
	int bins;             /* mel bins, 3..FBANK_FFT_LEN/2 (each must cover an FFT bin) */
	int ceps;             /* mfcc: cepstra kept, 1..bins */
	int window;           /* enum fbank_window */
	float low_freq;       /* Hz, >= 0 */
	float high_freq;      /* Hz; <= 0 means Nyquist + high_freq (Kaldi) */
	float lifter;         /* mfcc: cepstral lifter Q; 0 = none */
	int use_energy;       /* mfcc: c0 := raw log energy */
	int vad;              /* drop unvoiced frames */
	float vad_threshold;  /* Kaldi --vad-energy-threshold */
	float vad_mean_scale; /* Kaldi --vad-energy-mean-scale */
	float vad_proportion; /* Kaldi --vad-proportion-threshold, in (0, 1) */
	int vad_context;      /* Kaldi --vad-frames-context, >= 0 */
};

struct fbank;

/* Fill *o with the defaults described above for kind (bins 40 for fbank,
 * bins 30 and ceps 30 for mfcc; VAD off but its thresholds set). */
void fbank_opts_default(struct fbank_opts *o, int kind);

/* Check *o, build the window, mel filters, DCT and FFT plan. Returns 0 and
 * sets *out, FEEDER_EINVAL with a sentence naming the option, or -ENOMEM. */
int fbank_create(const struct fbank_opts *o, struct fbank **out, char *err, size_t errlen);

/* Frames of n samples before VAD (snip-edges). */
uint32_t fbank_frames(size_t n);

/* Columns of a frame: bins for fbank, ceps for mfcc. */
uint32_t fbank_dim(const struct fbank *fb);

/* Centre frequency of mel bin i in Hz (for tests and -v output). */
float fbank_bin_center_hz(const struct fbank *fb, int i);

/* The natural log the features take of each bin's energy: branch-free so
 * that it vectorizes, error below 1e-6 plus a float rounding of the result, for positive finite x
 * (exported for its test). */
float fbank_log(float x);

/* Features of n samples. On success *out is a malloc'd row-major matrix of
 * *frames x *dim floats that the caller frees; with VAD on, unvoiced frames
 * are already removed. *frames may be 0 (too short, or all silent); then
 * *out is NULL. Returns 0, FEEDER_EQUOTA if the utterance is too long for a
 * u32 frame count, or -ENOMEM, with a sentence in err. */
int fbank_compute(struct fbank *fb, const float *samples, size_t n, float **out, uint32_t *frames,
		  uint32_t *dim, char *err, size_t errlen);

void fbank_destroy(struct fbank *fb);

#endif
