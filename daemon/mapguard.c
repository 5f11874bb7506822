/* mapguard.c — the SIGBUS handler and the registered dataset mappings (see
 * mapguard.h).
 *
 * The handler may run at any instruction of a worker, so it only reads
 * lock-free state: its own thread's guard (thread-local) and a fixed table
 * of address ranges read with atomic loads. Writers of the table (the event
 * loop, when datasets open and close) serialize on a mutex among themselves;
 * a range is published end first, start last, and retracted by clearing its
 * start, so the handler never sees a half-written range as valid. A dataset
 * is unregistered only when no stream holds it, so no worker can fault in a
 * range while it is being retracted. */
#include "mapguard.h"

#include "status.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

struct range {
	_Atomic uintptr_t start, end;
};

static struct range ranges[MAPGUARD_MAX];
static _Atomic size_t ranges_used; /* entries at or past it were never used */
static pthread_mutex_t ranges_lock = PTHREAD_MUTEX_INITIALIZER;

/* volatile: the handler of this very thread reads it between any two
 * instructions of the guarded code. */
static _Thread_local sigjmp_buf *volatile guard;
static _Thread_local const void *volatile fault_addr;

static int in_mapping(uintptr_t a)
{
	size_t n = atomic_load_explicit(&ranges_used, memory_order_acquire);
	for (size_t i = 0; i < n; i++) {
		uintptr_t s = atomic_load_explicit(&ranges[i].start, memory_order_acquire);
		if (s && a >= s && a < atomic_load_explicit(&ranges[i].end, memory_order_relaxed))
			return 1;
	}
	return 0;
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	sigjmp_buf *env = guard;
	/* si_code > 0: raised by the kernel for a memory access, not sent. */
	if (env && si->si_code > 0 && in_mapping((uintptr_t)si->si_addr)) {
		guard = NULL;
		fault_addr = si->si_addr;
		siglongjmp(*env, 1);
	}
	/* Not a dataset read: die the way SIGBUS always does. A fault returns
	 * to the instruction, which faults again without a handler; a signal
	 * that was sent is raised again (SA_NODEFER: delivered at once). */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	if (si->si_code <= 0)
		raise(sig);
}

int mapguard_install(char *err, size_t errlen)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) != 0)
		return status_fail(err, errlen, -errno, "installing the SIGBUS handler failed: %s",
				   strerror(errno));
	return 0;
}

int mapguard_register(const void *addr, size_t len)
{
	if (!addr || !len)
		return 0;
	int rc = -ENOSPC;
	pthread_mutex_lock(&ranges_lock);
	for (size_t i = 0; i < MAPGUARD_MAX; i++) {
		if (atomic_load_explicit(&ranges[i].start, memory_order_relaxed) != 0)
			continue;
		atomic_store_explicit(&ranges[i].end, (uintptr_t)addr + len, memory_order_relaxed);
		atomic_store_explicit(&ranges[i].start, (uintptr_t)addr, memory_order_release);
		if (i >= atomic_load_explicit(&ranges_used, memory_order_relaxed))
			atomic_store_explicit(&ranges_used, i + 1, memory_order_release);
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&ranges_lock);
	return rc;
}

void mapguard_unregister(const void *addr)
{
	if (!addr)
		return;
	pthread_mutex_lock(&ranges_lock);
	for (size_t i = 0; i < MAPGUARD_MAX; i++)
		if (atomic_load_explicit(&ranges[i].start, memory_order_relaxed) ==
		    (uintptr_t)addr) {
			atomic_store_explicit(&ranges[i].start, 0, memory_order_release);
			break;
		}
	pthread_mutex_unlock(&ranges_lock);
}

void mapguard_arm(sigjmp_buf *env)
{
	guard = env;
}

void mapguard_disarm(void)
{
	guard = NULL;
}

const void *mapguard_fault_addr(void)
{
	return fault_addr;
}
