/* kaldi_dir.h — a Kaldi data directory read as a list of utterances, for
 * `packer pack audio --kaldi DATA_DIR DEST`.
 *
 * A Kaldi data directory (Kaldi's "Data preparation" page) is a set of text
 * files, one record per line, fields separated by runs of spaces and tabs:
 *
 *   wav.scp   "<recording> <path>" or "<recording> <command ... |>": the
 *             rest of the line after the id is the source; when it ends
 *             with '|' it is a shell command whose stdout is a WAV stream
 *             (kaldi_pipe_read runs it), else one path (no spaces).
 *   utt2spk   "<utterance> <speaker>".
 *   segments  optional, "<utterance> <recording> <start> <end>" in seconds,
 *             end -1 meaning the end of the recording. Without it every
 *             recording is one utterance with the recording's id.
 *   utt2dur   optional, "<utterance> <seconds>".
 *
 * What Kaldi's own readers refuse is refused here too, with one sentence
 * "DIR/FILE:LINE: reason" and FEEDER_EFORMAT: a line that does not parse,
 * an empty line (Kaldi's scp reader rejects them), a duplicate id, a segment
 * of a recording not in wav.scp, an utt2spk or utt2dur line for an
 * utterance that does not exist, an utterance without a speaker, an ark
 * offset ("file.ark:1234"), standard input ("-"), a segment channel (the
 * optional fifth field). A line may end in CRLF (the \r is dropped, as
 * Kaldi's whitespace splitting does); any other control character is
 * refused. Beyond Kaldi, an id or speaker that is not UTF-8 is refused:
 * they become the dataset's names and label table, which are UTF-8. Unlike
 * Kaldi, the files need not be sorted: they are sorted here.
 *
 * Paths and commands are kept as written. Kaldi resolves a relative path
 * against the working directory of the program reading it, not against the
 * data directory, and so must the caller.
 *
 * The strings handed out point into the files' text, which the kaldi_dir
 * holds until kaldi_dir_free. */
#ifndef FEEDER_KALDI_DIR_H
#define FEEDER_KALDI_DIR_H

#include <stddef.h>
#include <stdint.h>

/* One line of wav.scp. */
struct kaldi_reco {
	const char *id;
	const char *source; /* the path, or the command without its final '|' */
	int is_pipe;
};

/* One utterance: a whole recording, or a segment of one. */
struct kaldi_utt {
	const char *id;
	const char *speaker_name; /* == speakers[speaker] */
	uint32_t speaker;         /* class id: the speaker's rank in speakers */
	size_t reco;              /* index in recos */
	const char *source;       /* recos[reco].source, .is_pipe */
	int is_pipe;
	double start, end; /* seconds; a whole recording is 0, -1 */
	double dur;        /* from utt2dur, or -1 */
};

struct kaldi_dir {
	struct kaldi_utt *utts; /* sorted by id (bytewise) */
	size_t nutts;
	struct kaldi_reco *recos; /* every line of wav.scp, sorted by id */
	size_t nrecos;
	const char **speakers; /* distinct speakers sorted bytewise: the class table */
	uint32_t nspeakers;
	int has_segments;
	char *text[3]; /* private: the files the strings point into */
};

/* How far a segment's end may lie after the end of its recording, in
 * seconds, and be cut to it (extract-segments' --max-overshoot default). */
#define KALDI_MAX_OVERSHOOT 0.5

/* Read the data directory dir into *out (zeroed here). 0, or
 * FEEDER_EFORMAT with err "DIR/FILE:LINE: reason" for a bad line, or
 * "DIR/FILE: ..." for a missing wav.scp or utt2spk or a file with no lines;
 * a negative errno when dir or a file cannot be read, -ENOMEM. On error
 * *out holds nothing (kaldi_dir_free is still harmless). */
int kaldi_dir_load(const char *dir, struct kaldi_dir *out, char *err, size_t errlen);

/* Free everything d holds and zero it. */
void kaldi_dir_free(struct kaldi_dir *d);

/* Run cmd with /bin/sh -c (stdin /dev/null, stderr inherited, signals at
 * their defaults, in a process group of its own) and read its stdout into
 * *buf (malloc'd; free it) of *len bytes. Fails, with a sentence naming the
 * command (its first 80 bytes), with -EFBIG when it writes more than
 * max_bytes (the process group is killed), -EIO when it exits with a
 * non-zero status, is killed by a signal or writes nothing, or a negative
 * errno when it cannot be started. On error *buf is NULL and *len 0. */
int kaldi_pipe_read(const char *cmd, size_t max_bytes, uint8_t **buf, size_t *len, char *err,
		    size_t errlen);

/* The samples [*first, *first + *count) of the segment start..end (seconds;
 * end < 0: to the end) of a recording of total samples at rate Hz, as
 * Kaldi's extract-segments cuts it: both ends rounded to the nearest sample,
 * an end up to KALDI_MAX_OVERSHOOT seconds after the recording's end cut to
 * it. FEEDER_EFORMAT, with a sentence giving the segment's times and the
 * recording's length, when the segment starts after the recording, ends
 * further after it, or holds no sample; FEEDER_EINVAL for rate 0 or an end
 * not after the start. (extract-segments also skips segments shorter than
 * its --min-segment-length, 0.1 s: that is the caller's choice here.) */
int kaldi_segment_samples(double start, double end, uint32_t rate, size_t total, size_t *first,
			  size_t *count, char *err, size_t errlen);

#endif
