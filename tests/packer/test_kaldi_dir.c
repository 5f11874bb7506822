/* test_kaldi_dir — Kaldi data directories as `packer pack audio --kaldi`
 * reads them (packer/kaldi_dir.c): good directories, with and without
 * segments, come back with the utterances sorted by id, the speakers sorted
 * into class ids, pipes told from paths, CRLF lines accepted; every bad
 * line (fields, numbers, duplicates, ids missing from another file, ark
 * offsets, empty lines, control characters) is FEEDER_EFORMAT with an error
 * "DIR/FILE:LINE: ..." naming the earliest bad line; commands run by
 * kaldi_pipe_read hand back their output or fail with their exit status,
 * their signal, their size or their silence; segment times become the
 * sample ranges Kaldi's extract-segments cuts. */
#include "check.h"
#include "kaldi_dir.h"
#include "status.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char root[] = "/tmp/feeder-test-kaldi-XXXXXX";
static char err[1024];

static void put(const char *dir, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	CHECKF(f && fputs(text, f) >= 0 && fclose(f) == 0, "%s: %s", path, strerror(errno));
}

/* A data directory root/name with the files given (NULL: absent). */
static const char *make_dir(const char *name, const char *wav, const char *utt2spk,
			    const char *segments, const char *utt2dur)
{
	static char dir[256];
	snprintf(dir, sizeof(dir), "%s/%s", root, name);
	CHECKF(mkdir(dir, 0755) == 0, "%s: %s", dir, strerror(errno));
	const char *files[] = { "wav.scp", "utt2spk", "segments", "utt2dur" },
		   *texts[] = { wav, utt2spk, segments, utt2dur };
	for (int i = 0; i < 4; i++)
		if (texts[i])
			put(dir, files[i], texts[i]);
	return dir;
}

/* The directory must be refused with FEEDER_EFORMAT and an error that
 * starts with "DIR/FILE:LINE: " and says WHY; want is "FILE:LINE: WHY". */
static void bad(const char *wav, const char *utt2spk, const char *segments, const char *utt2dur,
		const char *want)
{
	static int count;
	char name[32], where[512];
	snprintf(name, sizeof(name), "bad%d", count++);
	const char *dir = make_dir(name, wav, utt2spk, segments, utt2dur);
	const char *why = strstr(want, ": ") + 2;
	snprintf(where, sizeof(where), "%s/%.*s", dir, (int)(why - want), want);
	struct kaldi_dir d;
	int rc = kaldi_dir_load(dir, &d, err, sizeof(err));
	CHECKF(rc == FEEDER_EFORMAT, "%s: rc %d (%s), err '%s'", want, rc, status_str(rc),
	       rc ? err : "");
	CHECKF(d.utts == NULL && d.nutts == 0, "%s: a refused directory leaves nothing", want);
	CHECKF(strncmp(err, where, strlen(where)) == 0, "'%s' does not start with '%s'", err,
	       where);
	CHECKF(strstr(err, why), "'%s' does not say '%s'", err, why);
	kaldi_dir_free(&d);
}

static void good_without_segments(void)
{
	/* Unsorted, tabs and runs of spaces, a pipe with spaces and trailing
	 * blanks, CRLF endings, no newline at the end. */
	const char *dir =
		make_dir("good1",
			 "rB  /data/b.wav\r\n"
			 "rA\t/data/a.wav\n"
			 "rC sox /data/c.flac -t wav -r 16000 - |  \r\n"
			 "  rD /data/d.wav",
			 "rD spk2\r\nrA spk1\nrC spk1\nrB spk0\n", NULL, "rC 3.25\nrA 1e1\r\n");
	struct kaldi_dir d;
	CHECKF(kaldi_dir_load(dir, &d, err, sizeof(err)) == 0, "%s", err);
	CHECK(!d.has_segments);
	CHECK(d.nutts == 4 && d.nrecos == 4 && d.nspeakers == 3);
	CHECK(strcmp(d.speakers[0], "spk0") == 0 && strcmp(d.speakers[1], "spk1") == 0 &&
	      strcmp(d.speakers[2], "spk2") == 0);
	static const char *ids[] = { "rA", "rB", "rC", "rD" };
	static const uint32_t spk[] = { 1, 0, 1, 2 };
	static const char *src[] = { "/data/a.wav", "/data/b.wav",
				     "sox /data/c.flac -t wav -r 16000 -", "/data/d.wav" };
	static const double dur[] = { 10, -1, 3.25, -1 };
	for (size_t i = 0; i < 4; i++) {
		const struct kaldi_utt *u = &d.utts[i];
		CHECKF(strcmp(u->id, ids[i]) == 0, "utt %zu is '%s'", i, u->id);
		CHECK(u->speaker == spk[i] && strcmp(u->speaker_name, d.speakers[spk[i]]) == 0);
		CHECKF(strcmp(u->source, src[i]) == 0, "utt %zu source '%s'", i, u->source);
		CHECK(u->is_pipe == (i == 2));
		CHECK(u->reco == i && strcmp(d.recos[i].id, ids[i]) == 0);
		CHECK(d.recos[i].source == u->source && d.recos[i].is_pipe == u->is_pipe);
		CHECK(u->start == 0 && u->end == -1);
		CHECKF(u->dur == dur[i], "utt %zu dur %g", i, u->dur);
	}
	kaldi_dir_free(&d);
	CHECK(d.utts == NULL && d.speakers == NULL && d.text[0] == NULL);
	kaldi_dir_free(&d); /* twice is harmless */
}

static void good_with_segments(void)
{
	/* Bytewise order: "S-b" < "S_a" < "s1" ('-' 0x2d < '_' 0x5f < 's');
	 * speakers likewise "Zed" < "alice" < "bob". rec3 has no segment. */
	const char *dir = make_dir(
		"good2/", /* a trailing slash: no "//" in messages */
		"rec2 cat /data/rec2.wav |\nrec1 /data/rec1.wav\nrec3 /data/rec3.wav\n",
		"s1 bob\nS_a alice\nS-b Zed\nx9 alice\n",
		"x9 rec1 0 -1\r\ns1 rec2 1.5 2.75\nS_a rec1 0.0 1e0\nS-b rec2 3 -1.0\n", NULL);
	struct kaldi_dir d;
	CHECKF(kaldi_dir_load(dir, &d, err, sizeof(err)) == 0, "%s", err);
	CHECK(d.has_segments && d.nutts == 4 && d.nrecos == 3 && d.nspeakers == 3);
	CHECK(strcmp(d.speakers[0], "Zed") == 0 && strcmp(d.speakers[1], "alice") == 0 &&
	      strcmp(d.speakers[2], "bob") == 0);
	CHECK(strcmp(d.recos[0].id, "rec1") == 0 && strcmp(d.recos[1].id, "rec2") == 0 &&
	      strcmp(d.recos[2].id, "rec3") == 0 && d.recos[1].is_pipe && !d.recos[0].is_pipe);
	static const char *ids[] = { "S-b", "S_a", "s1", "x9" };
	static const uint32_t spk[] = { 0, 1, 2, 1 };
	static const size_t reco[] = { 1, 0, 1, 0 };
	static const double start[] = { 3, 0, 1.5, 0 }, end[] = { -1, 1, 2.75, -1 };
	for (size_t i = 0; i < 4; i++) {
		const struct kaldi_utt *u = &d.utts[i];
		CHECKF(strcmp(u->id, ids[i]) == 0, "utt %zu is '%s'", i, u->id);
		CHECK(u->speaker == spk[i] && u->reco == reco[i]);
		CHECK(u->source == d.recos[reco[i]].source && u->is_pipe == (reco[i] == 1));
		CHECKF(u->start == start[i] && u->end == end[i], "utt %zu %g..%g", i, u->start,
		       u->end);
		CHECK(u->dur == -1);
	}
	CHECK(strcmp(d.recos[1].source, "cat /data/rec2.wav") == 0);
	kaldi_dir_free(&d);
}

/* UTF-8 beyond ASCII is a speaker like any other; a path need not be
 * UTF-8 (file names are bytes). */
static void good_utf8(void)
{
	const char *dir = make_dir("good_utf8", "r1 /data/\xe9.wav\nr2 /b.wav\n",
				   "r1 Jos\xc3\xa9\nr2 \xe6\x9d\x8e\xf0\x9f\x8e\xa4\n", NULL, NULL);
	struct kaldi_dir d;
	CHECKF(kaldi_dir_load(dir, &d, err, sizeof(err)) == 0, "%s", err);
	CHECK(d.nspeakers == 2 && strcmp(d.speakers[0], "Jos\xc3\xa9") == 0 &&
	      strcmp(d.speakers[1], "\xe6\x9d\x8e\xf0\x9f\x8e\xa4") == 0);
	CHECK(strcmp(d.recos[0].source, "/data/\xe9.wav") == 0);
	kaldi_dir_free(&d);
}

static void bad_dirs(void)
{
	const char *w2 = "r1 /a.wav\nr2 /b.wav\n", *s2 = "r1 s\nr2 s\n";

	/* wav.scp */
	bad("r1 /a.wav\nr2\n", s2, NULL, NULL,
	    "wav.scp:2: expected \"recording path\", got 1 field");
	bad("r1 /a.wav\nr2 /b.wav\nr3 /c d.wav\n", "r1 s\nr2 s\nr3 s\n", NULL, NULL,
	    "wav.scp:3: got 3 fields (a command must end with \"|\")");
	bad("r1 /a.wav\nr2 /x/feats.ark:1234\n", s2, NULL, NULL,
	    "wav.scp:2: ark offsets are not supported");
	bad("r1 -\nr2 /b.wav\n", s2, NULL, NULL, "wav.scp:1: standard input");
	bad("r1 /a.wav\nr2 | gzip > x\n", s2, NULL, NULL, "wav.scp:2: output pipe");
	bad("r1 | cat |\nr2 /b.wav\n", s2, NULL, NULL, "wav.scp:1: output pipe");
	bad("r1 /a|b.wav\nr2 /b.wav\n", s2, NULL, NULL, "wav.scp:1: \"|\" inside path");
	bad("r1 /a.wav\nr2   |\n", s2, NULL, NULL, "wav.scp:2: no command before");
	bad("r1 /a.wav\n\nr2 /b.wav\n", s2, NULL, NULL, "wav.scp:2: empty line");
	bad("r1 /a.wav\r\n \t\r\nr2 /b.wav\n", s2, NULL, NULL, "wav.scp:2: empty line");
	bad("r1 /a.wav\nr2 /b.wav\n\n", s2, NULL, NULL, "wav.scp:3: empty line");
	bad("r1 /a.wav\nr2 /b\r.wav\n", s2, NULL, NULL, "wav.scp:2: control character 0x0d");
	/* The earliest repeated line is reported, whatever the sort order. */
	bad("r2 /a.wav\nr1 /b.wav\nr2 /c.wav\nr1 /d.wav\nr1 /e.wav\n", s2, NULL, NULL,
	    "wav.scp:3: duplicate recording \"r2\" (also on line 1)");
	bad("r1 /a.wav\nr2 /b.wav\nr2 /c.wav\nr2 /d.wav\nr1 /e.wav\n", s2, NULL, NULL,
	    "wav.scp:3: duplicate recording \"r2\" (also on line 2)");

	/* utt2spk */
	bad(w2, "r1 s\nr2 s x\n", NULL, NULL,
	    "utt2spk:2: expected \"utterance speaker\", got 3 fields");
	bad(w2, "r1\nr2 s\n", NULL, NULL, "utt2spk:1: got 1 field");
	bad(w2, "r2 s\nr1 s\nr2 t\n", NULL, NULL,
	    "utt2spk:3: duplicate utterance \"r2\" (also on line 1)");
	/* Two lines name no recording: the earlier line is reported, though "a"
	 * sorts before "z". */
	bad(w2, "r1 s\nr2 s\nz0 s\na0 s\n", NULL, NULL,
	    "utt2spk:3: utterance \"z0\" is not in wav.scp");
	bad(w2, "u1 s\nr1 s\n", "u1 r1 0 1\n", NULL,
	    "utt2spk:2: utterance \"r1\" is not in segments");
	bad("r1 /a.wav\nr2 /b.wav\nr3 /c.wav\n", "r1 s\n", NULL, NULL,
	    "wav.scp:2: utterance \"r2\" has no speaker in utt2spk");
	bad(w2, "u2 s\n", "u2 r1 0 1\nu1 r2 0 1\n", NULL,
	    "segments:2: utterance \"u1\" has no speaker in utt2spk");
	bad(w2, "r1 s\r\nr2 s\r\nr3 a b\r\n", NULL, NULL, "utt2spk:3: got 3 fields");
	/* Speakers and ids become the label table and the names, which are
	 * UTF-8: Latin-1, an overlong '/', a surrogate, a cut sequence. */
	bad(w2, "r1 s\nr2 Jos\xe9\n", NULL, NULL,
	    "utt2spk:2: the speaker is not UTF-8 (byte 0xe9 at column 4)");
	bad(w2,
	    "r1 a\xc0\xaf"
	    "b\nr2 s\n",
	    NULL, NULL, "utt2spk:1: byte 0xc0 at column 2");
	bad(w2, "r1 s\nr2 \xed\xa0\x80\n", NULL, NULL, "utt2spk:2: byte 0xed at column 1");
	bad(w2, "r1 s\nr2 ab\xe2\x82\n", NULL, NULL, "utt2spk:2: byte 0xe2 at column 3");
	bad("r1 /a.wav\nr\xe9"
	    "2 /b.wav\n",
	    s2, NULL, NULL, "wav.scp:2: the recording id is not UTF-8");
	bad(w2, "u1 s\n",
	    "u\xb9"
	    "1 r1 0 1\n",
	    NULL, "segments:1: the utterance id is not UTF-8");

	/* segments */
	const char *u2 = "u1 s\nu2 s\nu3 s\nu4 s\n";
	bad(w2, u2, "u1 r1 0 1\nu2 r1 0\n", NULL,
	    "segments:2: expected \"utterance recording start end\", got 3 fields");
	bad(w2, u2, "u1 r1 0 1 0\n", NULL, "segments:1: channel");
	bad(w2, u2, "u1 r1 abc 1\n", NULL, "segments:1: start \"abc\" is not a number");
	bad(w2, u2, "u1 r1 0 1\nu2 r1 1.5x 2\n", NULL,
	    "segments:2: start \"1.5x\" is not a number");
	bad(w2, u2, "u1 r1 0 nan\n", NULL, "segments:1: end \"nan\" is not a number");
	bad(w2, u2, "u1 r1 0 inf\n", NULL, "segments:1: end \"inf\" is not a number");
	bad(w2, u2, "u1 r1 0 0x10\n", NULL, "segments:1: end \"0x10\" is not a number");
	bad(w2, u2, "u1 r1 0 1e999\n", NULL, "segments:1: end \"1e999\" is not a number");
	bad(w2, u2, "u1 r1 -0.5 1\n", NULL, "segments:1: start -0.5 is negative");
	bad(w2, u2, "u1 r1 0 1\nu2 r1 3 2\n", NULL, "segments:2: end 2 is not after start 3");
	bad(w2, u2, "u1 r1 2.5 2.5\n", NULL, "segments:1: end 2.5 is not after start 2.5");
	bad(w2, u2, "u1 r1 0 -0.5\n", NULL, "segments:1: end -0.5 is not after start 0");
	bad(w2, u2, "u1 r1 0 0\n", NULL, "segments:1: is not after start");
	bad(w2, u2, "u1 r1 0 1\nu2 r2 0 1\nu3 r1 1 2\nu4 rec9 0 1\n", NULL,
	    "segments:4: recording \"rec9\" is not in wav.scp");
	bad(w2, u2, "u1 r1 0 1\nu2 r1 0 1\nu1 r2 0 1\n", NULL,
	    "segments:3: duplicate utterance \"u1\" (also on line 1)");
	bad(w2, u2, "u1 r1 0 1\n\n", NULL, "segments:2: empty line");

	/* utt2dur */
	bad(w2, s2, NULL, "r1 1\nr2\n", "utt2dur:2: expected \"utterance seconds\", got 1 field");
	bad(w2, s2, NULL, "r1 1.5s\n", "utt2dur:1: duration \"1.5s\" is not a positive number");
	bad(w2, s2, NULL, "r1 0\n", "utt2dur:1: is not a positive number");
	bad(w2, s2, NULL, "r1 1\nr9 2\n", "utt2dur:2: utterance \"r9\" is not in wav.scp");
	bad(w2, s2, NULL, "r1 1\nr1 2\n", "utt2dur:2: duplicate utterance \"r1\" (also on line 1)");
}

/* Errors about a whole file: FEEDER_EFORMAT, "DIR/" followed by want. */
static void bad_file(const char *dir, const char *want)
{
	struct kaldi_dir d;
	char where[512];
	CHECK(kaldi_dir_load(dir, &d, err, sizeof(err)) == FEEDER_EFORMAT);
	snprintf(where, sizeof(where), "%s/%s", dir, want);
	CHECKF(strstr(err, where), "'%s' does not say '%s'", err, where);
}

static void bad_files(void)
{
	bad_file(make_dir("no_wav", NULL, "r1 s\n", NULL, NULL), "wav.scp: no such file");
	bad_file(make_dir("no_utt2spk", "r1 /a.wav\n", NULL, NULL, NULL), "utt2spk: no such file");
	bad_file(make_dir("empty_wav", "", "r1 s\n", NULL, NULL), "wav.scp: the file has no lines");
	bad_file(make_dir("empty_segments", "r1 /a.wav\n", "r1 s\n", "", NULL),
		 "segments: the file has no lines");
	const char *dir = make_dir("utt2spk_dir", "r1 /a.wav\n", NULL, NULL, NULL);
	char sub[512];
	snprintf(sub, sizeof(sub), "%s/utt2spk", dir);
	CHECK(mkdir(sub, 0755) == 0);
	bad_file(dir, "utt2spk: is a directory");

	/* A NUL byte is a control character like any other. */
	dir = make_dir("nul", NULL, "r1 s\nr2 s\n", NULL, NULL);
	snprintf(sub, sizeof(sub), "%s/wav.scp", dir);
	FILE *f = fopen(sub, "wb");
	CHECK(f && fwrite("r1 /a.wav\nr2 /b\0.wav\n", 1, 21, f) == 21 && fclose(f) == 0);
	bad_file(dir, "wav.scp:2: control character 0x00");

	struct kaldi_dir d;
	snprintf(sub, sizeof(sub), "%s/none", root);
	CHECK(kaldi_dir_load(sub, &d, err, sizeof(err)) == -ENOENT);
	CHECKF(strstr(err, sub), "'%s'", err);
	CHECK(d.utts == NULL);
}

/* Whether process pid exists and is no zombie (a container's init may
 * never reap the orphans it inherits). */
static int running(pid_t pid)
{
	char path[64], stat[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(stat, 1, sizeof(stat) - 1, f);
	fclose(f);
	stat[n] = 0;
	const char *p = strrchr(stat, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* kaldi_pipe_read(cmd, limit) must hand back want_len bytes. */
static uint8_t *pipe_reads(const char *cmd, size_t limit, size_t want_len)
{
	uint8_t *buf;
	size_t len;
	int rc = kaldi_pipe_read(cmd, limit, &buf, &len, err, sizeof(err));
	CHECKF(rc == 0 && len == want_len, "%s: rc %d, %zu bytes: %s", cmd, rc, len, err);
	return buf;
}

/* kaldi_pipe_read(cmd, limit) must fail with code, nothing handed back,
 * its error saying want. */
static void pipe_fails(const char *cmd, size_t limit, int code, const char *want)
{
	uint8_t *buf = (uint8_t *)err;
	size_t len = 1;
	int rc = kaldi_pipe_read(cmd, limit, &buf, &len, err, sizeof(err));
	CHECKF(rc == code && !buf && !len, "%s: rc %d, %zu bytes", cmd, rc, len);
	CHECKF(strstr(err, want), "%s: '%s' does not say '%s'", cmd, err, want);
}

static void pipes(void)
{
	uint8_t *buf = pipe_reads("printf abc", 1000, 3);
	CHECK(memcmp(buf, "abc", 3) == 0);
	free(buf);
	/* Exactly the limit is allowed; growth past the first buffer works. */
	free(pipe_reads("head -c 1000 /dev/zero", 1000, 1000));
	buf = pipe_reads("head -c 3000000 /dev/zero | tr '\\0' x", 4000000, 3000000);
	CHECK(buf[0] == 'x' && buf[3000000 - 1] == 'x');
	free(buf);

	pipe_fails("printf abc; exit 3", 1000, -EIO, "\"printf abc; exit 3\" exited with status 3");
	pipe_fails("kill -9 $$", 1000, -EIO, "killed by signal 9");
	pipe_fails("head -c 100000 /dev/zero", 1000, -EFBIG, "output larger than 1000 bytes");
	pipe_fails("true", 1000, -EIO, "\"true\" wrote nothing");

	/* The command's stdin is /dev/null, not packer's: with "leak" waiting
	 * on our stdin, cat still writes nothing. */
	int saved = dup(STDIN_FILENO), p[2];
	CHECK(saved >= 0 && pipe(p) == 0 && write(p[1], "leak", 4) == 4);
	close(p[1]);
	CHECK(dup2(p[0], STDIN_FILENO) == STDIN_FILENO);
	close(p[0]);
	pipe_fails("cat", 1000, -EIO, "wrote nothing");
	CHECK(dup2(saved, STDIN_FILENO) == STDIN_FILENO);
	close(saved);

	pipe_fails("/nonexistent/feeder-test-cmd", 1000, -EIO, "status 127 (command not found)");

	/* A long command is shown by its first 80 bytes. */
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "exit 5 # %0200d", 7);
	pipe_fails(cmd, 1000, -EIO, "...\" exited with status 5");
	CHECKF(strlen(err) < 140, "'%s'", err);

	/* Over the limit, the whole process group dies: here a background
	 * sleep the shell started, which would otherwise outlive the pack. */
	char pidfile[256];
	snprintf(pidfile, sizeof(pidfile), "%s/bg.pid", root);
	snprintf(cmd, sizeof(cmd), "sleep 30 & echo $! > %s; head -c 100000 /dev/zero", pidfile);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pipe_fails(cmd, 1000, -EFBIG, "output larger than 1000 bytes");
	FILE *f = fopen(pidfile, "r");
	CHECK(f);
	long bg = 0;
	CHECK(fscanf(f, "%ld", &bg) == 1 && bg > 1);
	fclose(f);
	int alive = 1;
	for (int i = 0; i < 200 && alive; i++) { /* up to 2 s */
		alive = running((pid_t)bg);
		if (alive)
			usleep(10000);
	}
	CHECKF(!alive, "the background sleep %ld survived", bg);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(t1.tv_sec - t0.tv_sec < 10);

	/* Every child was waited for. */
	CHECK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
}

static void seg(double start, double end, uint32_t rate, size_t total, size_t first, size_t count)
{
	size_t a = 99, n = 99;
	int rc = kaldi_segment_samples(start, end, rate, total, &a, &n, err, sizeof(err));
	CHECKF(rc == 0 && a == first && n == count,
	       "%g..%g at %u of %zu: rc %d first %zu count %zu, want %zu %zu (%s)", start, end,
	       rate, total, rc, a, n, first, count, rc ? err : "");
}

static void seg_bad(double start, double end, uint32_t rate, size_t total, int code,
		    const char *why)
{
	size_t a = 99, n = 99;
	int rc = kaldi_segment_samples(start, end, rate, total, &a, &n, err, sizeof(err));
	CHECKF(rc == code && a == 0 && n == 0, "%g..%g: rc %d", start, end, rc);
	CHECKF(strstr(err, why), "'%s' does not say '%s'", err, why);
}

static void segments(void)
{
	const size_t T = 160000; /* 10 s at 16 kHz */
	seg(1.0, 2.5, 16000, T, 16000, 24000);
	seg(0, -1, 16000, T, 0, T);
	seg(9.0, -1, 16000, T, 144000, 16000);
	seg(0, 10.0, 16000, T, 0, T);
	/* 2.01 * 16000 = 32159.999999999996: rounded, as Kaldi does since
	 * 2019 (it truncated before, giving 32159). */
	seg(2.01, 4.02, 16000, T, 32160, 32160);
	/* Halves round up: (int)(x + 0.5). 0.125 * 4 = 0.5, 0.375 * 4 = 1.5. */
	seg(0.125, 0.375, 4, 40, 1, 1);
	seg(0.1, 0.2, 4, 40, 0, 1);
	/* An end up to 0.5 s after the recording is cut to it. */
	seg(9.5, 10.3, 16000, T, 152000, 8000);
	seg(9.5, 10.5, 16000, T, 152000, 8000);
	seg_bad(9.5, 10.51, 16000, T, FEEDER_EFORMAT,
		"segment 9.500-10.510 s ends more than 0.5 s after the end of the recording (10.000 s)");
	seg_bad(10.01, -1, 16000, T, FEEDER_EFORMAT,
		"segment 10.010 s to the end starts after the end of the recording (10.000 s)");
	seg_bad(10.0, -1, 16000, T, FEEDER_EFORMAT,
		"holds no sample of the recording (160000 samples at 16000 Hz)");
	seg_bad(9.99997, 10.2, 16000, T, FEEDER_EFORMAT, "holds no sample");
	seg_bad(0.01, 0.02, 16000, 0, FEEDER_EFORMAT, "starts after the end");
	seg_bad(0, -1, 16000, 0, FEEDER_EFORMAT, "holds no sample");
	seg_bad(1, 2, 0, T, FEEDER_EINVAL, "sample rate 0");
	seg_bad(2, 1, 16000, T, FEEDER_EINVAL, "not a segment");
	seg_bad(-1, 2, 16000, T, FEEDER_EINVAL, "not a segment");
}

int main(void)
{
	CHECK(mkdtemp(root));
	good_without_segments();
	good_with_segments();
	good_utf8();
	bad_dirs();
	bad_files();
	pipes();
	segments();
	char rm[64];
	snprintf(rm, sizeof(rm), "rm -rf '%s'", root);
	CHECK(system(rm) == 0);
	printf("kaldi_dir: ok\n");
	return 0;
}
