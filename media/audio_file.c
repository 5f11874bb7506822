/* audio_file.c — libsndfile over a memory buffer, one channel, resampled
 * (see audio_file.h). */
#include "audio_file.h"

#include "resample.h"
#include "status.h"

#include <errno.h>
#include <limits.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int audio_file_sniff(const void *head, size_t len)
{
	const uint8_t *p = head;
	if (len < 12)
		return 0;
	return (memcmp(p, "RIFF", 4) == 0 && memcmp(p + 8, "WAVE", 4) == 0) ||
	       (memcmp(p, "RF64", 4) == 0 && memcmp(p + 8, "WAVE", 4) == 0) ||
	       (memcmp(p, "FORM", 4) == 0 &&
		(memcmp(p + 8, "AIFF", 4) == 0 || memcmp(p + 8, "AIFC", 4) == 0)) ||
	       memcmp(p, "fLaC", 4) == 0 || memcmp(p, "OggS", 4) == 0 ||
	       memcmp(p, ".snd", 4) == 0 || memcmp(p, "caff", 4) == 0 ||
	       memcmp(p, "riff", 4) == 0; /* Sony Wave64 */
}

/* A RIFF/WAVE chunk other than "data" that claims more bytes than the file
 * has: libsndfile 1.2.0's header parser loops (minutes of CPU on a 126-byte
 * file whose LIST chunk claims 4 GB; found by fuzz_audio). Such a file is
 * damaged whatever it holds, so the chunk list is walked here first, only
 * for bounds: libsndfile reads everything else. A data chunk may claim
 * more than there is (streaming writers; a cut file is caught after
 * decoding, wav_short_of). Returns 0 or FEEDER_EFORMAT with a sentence. */
static int riff_bounds(const uint8_t *p, size_t len, char *err, size_t errlen)
{
	if (len < 12 || memcmp(p, "RIFF", 4) != 0 || memcmp(p + 8, "WAVE", 4) != 0)
		return 0;
	for (size_t off = 12; len - off >= 8;) {
		uint32_t size = (uint32_t)p[off + 4] | (uint32_t)p[off + 5] << 8 |
				(uint32_t)p[off + 6] << 16 | (uint32_t)p[off + 7] << 24;
		if (memcmp(p + off, "data", 4) == 0)
			return 0;
		if (size > len - off - 8)
			return status_fail(err, errlen, FEEDER_EFORMAT,
					   "chunk '%.4s' at byte %zu declares %u bytes, %zu remain "
					   "(damaged)",
					   (const char *)p + off, off, size, len - off - 8);
		off += 8 + (size_t)size + (size & 1);
		if (off > len)
			return 0;
	}
	return 0;
}

/* libsndfile's virtual I/O over a read-only buffer. */
struct membuf {
	const uint8_t *p;
	sf_count_t len, pos;
};

static sf_count_t mb_len(void *u)
{
	return ((struct membuf *)u)->len;
}
static sf_count_t mb_tell(void *u)
{
	return ((struct membuf *)u)->pos;
}

static sf_count_t mb_seek(sf_count_t off, int whence, void *u)
{
	struct membuf *m = u;
	sf_count_t at = whence == SEEK_SET ? off : whence == SEEK_CUR ? m->pos + off : m->len + off;
	if (at < 0 || at > m->len)
		return -1;
	return m->pos = at;
}

static sf_count_t mb_read(void *dst, sf_count_t n, void *u)
{
	struct membuf *m = u;
	if (n > m->len - m->pos)
		n = m->len - m->pos;
	if (n <= 0)
		return 0;
	memcpy(dst, m->p + m->pos, (size_t)n);
	m->pos += n;
	return n;
}

static sf_count_t mb_write(const void *src, sf_count_t n, void *u)
{
	(void)src, (void)n, (void)u;
	return 0;
}

/* A WAV file cut short: libsndfile shortens the data chunk to what is there
 * and says so only in its log ("data : 32000 (should be 19956)"). A size of
 * 0x7FFFF000 or more is what a writer that cannot seek back (sox or ffmpeg
 * writing to a pipe) puts when the length is not known yet: it claims
 * nothing. Returns the declared bytes when the file is short of
 * them, else 0. */
static unsigned long long wav_short_of(SNDFILE *sf, unsigned long long *present)
{
	char log[4096] = "";
	sf_command(sf, SFC_GET_LOG_INFO, log, sizeof(log));
	const char *d = strstr(log, "\ndata : ");
	unsigned long long declared, have;
	if (!d || sscanf(d, "\ndata : %llu (should be %llu)", &declared, &have) != 2)
		return 0;
	if (declared >= 0x7FFFF000ull || declared <= have)
		return 0;
	*present = have;
	return declared;
}

static void describe(const SF_INFO *si, char *out, size_t len)
{
	SF_FORMAT_INFO f = { .format = si->format & SF_FORMAT_TYPEMASK };
	const char *major = sf_command(NULL, SFC_GET_FORMAT_INFO, &f, sizeof(f)) == 0 && f.name
				    ? f.name
				    : "audio";
	SF_FORMAT_INFO s = { .format = si->format & SF_FORMAT_SUBMASK };
	const char *sub =
		sf_command(NULL, SFC_GET_FORMAT_INFO, &s, sizeof(s)) == 0 && s.name ? s.name : "?";
	/* "WAV (Microsoft)", "Signed 16 bit PCM": the first word of each. */
	snprintf(out, len, "%.*s %s", (int)strcspn(major, " "), major, sub);
}

int audio_file_decode(const void *buf, size_t len, uint32_t channel, uint32_t rate,
		      uint64_t max_frames, float **samples, size_t *n, struct audio_file_info *info,
		      char *err, size_t errlen)
{
	*samples = NULL;
	*n = 0;
	if (len > (size_t)INT64_MAX)
		return status_fail(err, errlen, FEEDER_EFORMAT, "file too large");
	int brc = riff_bounds(buf, len, err, errlen);
	if (brc)
		return brc;
	struct membuf m = { .p = buf, .len = (sf_count_t)len };
	SF_VIRTUAL_IO io = { mb_len, mb_seek, mb_read, mb_write, mb_tell };
	SF_INFO si = { 0 };
	SNDFILE *sf = sf_open_virtual(&io, SFM_READ, &si, &m);
	if (!sf)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "not an audio file libsndfile reads: %s", sf_strerror(NULL));
	/* SF_COUNT_MAX: a length the container does not give (OGG cut short). */
	struct audio_file_info fi = { .rate = (uint32_t)si.samplerate,
				      .channels = (uint32_t)si.channels,
				      .frames = si.frames > 0 && si.frames < SF_COUNT_MAX
							? (uint64_t)si.frames
							: 0 };
	describe(&si, fi.format, sizeof(fi.format));
	if (info)
		*info = fi;
	float *all = NULL, *one = NULL;
	int rc = 0;
	if (si.samplerate <= 0 || si.channels <= 0) {
		rc = status_fail(err, errlen, FEEDER_EFORMAT, "%s with %d channels at %d Hz",
				 fi.format, si.channels, si.samplerate);
		goto out;
	}
	unsigned long long present = 0, declared = wav_short_of(sf, &present);
	if (declared) {
		rc = status_fail(err, errlen, FEEDER_EFORMAT,
				 "truncated: the data chunk declares %llu bytes, %llu are present",
				 declared, present);
		goto out;
	}
	if (channel >= (uint32_t)si.channels) {
		rc = status_fail(err, errlen, FEEDER_EFORMAT, "%d channel%s, channel %u asked",
				 si.channels, si.channels == 1 ? "" : "s", channel + 1);
		goto out;
	}
	/* The bound is on the output: at the file's rate, the frames that
	 * resample to max_frames (a file at a higher rate may hold more);
	 * checked again after resampling. */
	if (rate == 0)
		rate = (uint32_t)si.samplerate;
	uint64_t limit = (max_frames * (uint64_t)si.samplerate + rate - 1) / rate;
	if (fi.frames > limit) {
		rc = status_fail(err, errlen, FEEDER_EQUOTA,
				 "%llu frames at %d Hz, over the limit of %llu at %u Hz",
				 (unsigned long long)fi.frames, si.samplerate,
				 (unsigned long long)max_frames, rate);
		goto out;
	}
	/* Normalised floats scaled by 32768 are the integers exactly for 16-bit
	 * PCM; float files keep their values (clipping is not ours to do). */
	sf_command(sf, SFC_SET_NORM_FLOAT, NULL, SF_TRUE);
	size_t ch = (size_t)si.channels, cap = fi.frames ? (size_t)fi.frames : 16384, got = 0;
	all = malloc(cap * ch * sizeof(float));
	if (!all) {
		rc = status_fail(err, errlen, -ENOMEM, "no memory for %zu frames", cap);
		goto out;
	}
	for (;;) {
		if (got == cap) {
			/* Only formats that do not know their length (a pipe's WAV
			 * stream, some OGG files) come here. */
			if (cap >= limit) {
				rc = status_fail(err, errlen, FEEDER_EQUOTA,
						 "more than %llu frames at %d Hz",
						 (unsigned long long)limit, si.samplerate);
				goto out;
			}
			float *grown = realloc(all, 2 * cap * ch * sizeof(float));
			if (!grown) {
				rc = status_fail(err, errlen, -ENOMEM, "no memory for %zu frames",
						 2 * cap);
				goto out;
			}
			all = grown;
			cap *= 2;
		}
		sf_count_t r = sf_readf_float(sf, all + got * ch, (sf_count_t)(cap - got));
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (sf_error(sf) != SF_ERR_NO_ERROR) {
		rc = status_fail(err, errlen, FEEDER_EFORMAT, "%s: %s after %zu frames", fi.format,
				 sf_strerror(sf), got);
		goto out;
	}
	if (fi.frames && got < fi.frames) {
		rc = status_fail(err, errlen, FEEDER_EFORMAT, "truncated: %zu of %llu frames", got,
				 (unsigned long long)fi.frames);
		goto out;
	}
	one = malloc((got ? got : 1) * sizeof(float));
	if (!one) {
		rc = status_fail(err, errlen, -ENOMEM, "no memory for %zu samples", got);
		goto out;
	}
	for (size_t i = 0; i < got; i++)
		one[i] = all[i * ch + channel] * 32768.0f;
	if ((uint32_t)si.samplerate != rate && got > 0) {
		float *res = NULL;
		size_t res_n = 0;
		rc = resample_float(one, got, (double)si.samplerate, (double)rate, &res, &res_n,
				    err, errlen);
		if (rc < 0)
			goto out;
		free(one);
		one = res;
		got = res_n;
	}
	if (got > max_frames) {
		rc = status_fail(err, errlen, FEEDER_EQUOTA,
				 "%zu frames at %u Hz, over the limit of %llu", got, rate,
				 (unsigned long long)max_frames);
		goto out;
	}
	if (got == 0) {
		free(one);
		one = NULL;
	}
	*samples = one;
	*n = got;
	one = NULL;
out:
	free(all);
	free(one);
	sf_close(sf);
	return rc;
}
