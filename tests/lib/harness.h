/* harness.h — the C test fixture: a real feederd on a private socket, the
 * small datasets it serves, and the raw-wire helpers of the clients that
 * speak the protocol themselves.
 *
 * One process-wide fixture (`harness`): harness_init makes a private work
 * folder (removed at exit, with the daemon killed and its log shown if the
 * test did not pass), harness_start runs the build's feederd there on its
 * own socket and datasets folder and returns once it listens on its socket,
 * harness_stop stops it with SIGTERM and checks that it exits 0. Tests on
 * private folders run in parallel. Failures exit through check.h (1), a
 * missing build through SKIP (77). The client commands that a shell script
 * drives (its daemon, not ours) fill harness.sock and harness.datasets from
 * their arguments and use the dataset and wire helpers alone. */
#ifndef FEEDER_TEST_HARNESS_H
#define FEEDER_TEST_HARNESS_H

#include "dsstore.h"
#include "protocol.h"

#include <stdint.h>
#include <sys/types.h>

struct harness {
	char dir[256];      /* the private work folder */
	char sock[320];     /* feederd's socket */
	char datasets[320]; /* feederd's datasets folder */
	char log[320];      /* feederd's stderr, and the tools' */
	char build[256];    /* FEEDER_BUILD */
	pid_t pid;          /* the running feederd, or 0 */
};
extern struct harness harness;

/* The work folder /tmp/feeder-NAME-XXXXXX (mode 0755: other users' clients
 * reach the socket), its datasets/ folder, and the cleanup at exit. Skips
 * (77) unless FEEDER_BUILD names a build with feederd in it. */
void harness_init(const char *name);
/* The test passed: the exit shows no daemon log. */
void harness_passed(void);

/* Start feederd: a configuration of "workers = 2", "log_level = debug" and
 * the lines conf (or NULL), then the command-line flags (NULL-terminated
 * array, or NULL). Returns once it listens on its socket; fails with the
 * daemon's log if it exits first or takes over 10 s. */
void harness_start(const char *conf, const char *const *flags);
/* SIGTERM; feederd must exit 0 within 3 s, its socket file gone. */
void harness_stop(void);
/* A line of the daemon's log containing text, within 3 s. */
void harness_expect_log(const char *text);
/* How many lines of the daemon's log contain text. */
unsigned harness_count_log(const char *text);

/* Datasets, written into harness.datasets. */
/* N photos by gen-images (CLASSES classes, SEED), packed by packer with a
 * shorter side of 64 pixels: the datasets users make. Skips without them. */
void harness_pack_images(const char *name, unsigned n, unsigned classes, unsigned seed);
/* N small synthetic JPEGs (jpeg_synth), label i % 3, written directly. */
void harness_synth_images(const char *name, unsigned n);
/* Dataset dst, a copy of src with record 1 failing its CRC and record 4
 * not a JPEG (with a valid CRC). */
void harness_corrupt_copy(const char *src, const char *dst);
#define HARNESS_FEAT_N 7
#define HARNESS_FEAT_DIM 8
/* Feature matrix i of harness_features_dataset (frames x HARNESS_FEAT_DIM
 * floats, label 100 + i); the caller frees it. */
float *harness_features_matrix(unsigned i, uint32_t *frames);
void harness_features_dataset(const char *name);
#define HARNESS_WAVE_N 8
/* HARNESS_WAVE_N tones of 0.75 s at 16 kHz (s16), label i % 2. */
void harness_wave_dataset(const char *name);
/* Dataset NAME of harness.datasets opened for reading, with a transaction. */
struct dsstore *harness_ds_open(const char *name, struct dsstore_txn **txn);

/* The raw wire, for clients that speak the protocol without libfeeder. */
int harness_connect_raw(const char *path);
/* One message within 10 s (fails if none comes): 0 or the negative code of
 * sockmsg_recv_msg, whose sentence is in harness_err. */
int harness_recv(int fd, struct proto_msg *m, int *mfd);
/* The same within ms milliseconds, and 1 if none came. */
int harness_recv_within(int fd, struct proto_msg *m, int *mfd, int ms);
void harness_send(int fd, const struct proto_msg *m);
/* Connect and say HELLO as agent; the fd once WELCOME came. */
int harness_hello(const char *path, const char *agent, struct proto_welcome *welcome);
extern char harness_err[512];

#endif
