/* test_mapguard.c — the SIGBUS guard (daemon/mapguard.h) catches exactly
 * what it must and nothing else.
 *
 * A file of 4 pages is mapped and then truncated to 1 page, so touching
 * pages 2..4 raises SIGBUS, as a failed disk does under a dataset mapping.
 *   caught   registered mapping, guard armed: the read returns to the guard,
 *            many times in a row, on several threads at once, and the fault
 *            address is reported; a good page still reads its bytes.
 *   crash    each of these must still kill the process with SIGBUS (run in
 *            a child): the mapping not registered; registered but no guard
 *            armed; a guard armed but the mapping unregistered again;
 *            SIGBUS sent with kill() while a guard is armed.
 * Exit 0 pass, 1 fail. */
#include "mapguard.h"

#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static size_t page;
static uint8_t *map;
static size_t map_len;

/* Map a 4-page file whose first page holds 0..255 repeated, then cut it to
 * one page. */
static void make_mapping(void)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	map_len = 4 * page;
	FILE *tf = tmpfile();
	CHECKF(tf, "tmpfile: %s", strerror(errno));
	int fd = fileno(tf);
	uint8_t *buf = malloc(map_len);
	CHECK(buf);
	for (size_t i = 0; i < map_len; i++)
		buf[i] = (uint8_t)i;
	CHECK(write(fd, buf, map_len) == (ssize_t)map_len);
	free(buf);
	map = mmap(NULL, map_len, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(map != MAP_FAILED);
	CHECK(ftruncate(fd, (off_t)page) == 0);
	fclose(tf);
}

/* Read one byte at off under the guard: the byte, or -1 after a fault. */
static int guarded_read(size_t off)
{
	sigjmp_buf env;
	if (sigsetjmp(env, 0) == 0) {
		mapguard_arm(&env);
		int v = ((volatile uint8_t *)map)[off];
		mapguard_disarm();
		return v;
	}
	CHECKF(mapguard_fault_addr() == map + off, "fault at %p, read at %p", mapguard_fault_addr(),
	       (void *)(map + off));
	return -1;
}

static void *reader(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++) {
		CHECK(guarded_read(2 * page + (size_t)i) == -1);
		CHECK(guarded_read((size_t)i) == (i & 255));
	}
	return NULL;
}

/* Run fn in a child: it must die of SIGBUS. */
static void expect_crash(const char *what, void (*fn)(void))
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* No core file from a child that must crash. */
		struct rlimit no_core = { 0, 0 };
		setrlimit(RLIMIT_CORE, &no_core);
		fn();
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECKF(WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS, "%s: child %s %d, expected SIGBUS", what,
	       WIFSIGNALED(st) ? "killed by signal" : "exited",
	       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	printf("crash: %s -> SIGBUS, as without the guard\n", what);
}

static void touch_unregistered(void)
{
	mapguard_unregister(map);
	guarded_read(3 * page);
}

static void touch_unguarded(void)
{
	(void)((volatile uint8_t *)map)[3 * page];
}

static void send_sigbus(void)
{
	sigjmp_buf env;
	if (sigsetjmp(env, 0) == 0) {
		mapguard_arm(&env);
		kill(getpid(), SIGBUS);
	}
}

int main(void)
{
	char err[256];
	CHECKF(mapguard_install(err, sizeof err) == 0, "%s", err);
	make_mapping();
	CHECK(mapguard_register(map, map_len) == 0);

	CHECK(guarded_read(5) == 5);
	CHECK(guarded_read(page + 7) == -1);
	CHECK(guarded_read(4 * page - 1) == -1);
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&th[i], NULL, reader, NULL) == 0);
	for (int i = 0; i < 4; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
	printf("caught: 4003 faults on a registered mapping returned to their guard, 4 threads\n");

	expect_crash("mapping unregistered", touch_unregistered);
	expect_crash("no guard armed", touch_unguarded);
	expect_crash("SIGBUS sent by kill()", send_sigbus);
	mapguard_unregister(map);
	munmap(map, map_len);
	printf("ok: mapguard: 4003 faults caught, 3 foreign SIGBUS still fatal\n");
	return 0;
}
