/* mapguard.h — survive I/O errors on memory-mapped datasets.
 *
 * feederd reads datasets through LMDB's read-only mmap, so a disk that fails
 * (or a data.mdb truncated under the daemon, which is what the kernel makes
 * of lost pages) does not show up as EIO from read(): the thread that touches
 * the lost page gets SIGBUS, which would kill the whole daemon and every
 * client with it.
 *
 * The guard turns such a SIGBUS into an error value for the one sample that
 * was being read. The registry registers each dataset's mapping
 * (mapguard_register); a worker arms its thread's guard around the few lines
 * that read a mapping (MAPGUARD_TRY ... mapguard_disarm). The SIGBUS handler
 * jumps back to the armed guard only when the faulting thread has one armed
 * AND the faulting address lies inside a registered mapping; any other
 * SIGBUS (a bug, a signal sent with kill) restores the default action and
 * re-raises, so real bugs still crash with a core dump.
 *
 * Only code that owns no locks and allocates nothing while armed may be
 * guarded: the jump abandons whatever it was doing (for LMDB, a read-only
 * lookup whose transaction the caller then ends). */
#ifndef FEEDER_MAPGUARD_H
#define FEEDER_MAPGUARD_H

#include <setjmp.h>
#include <stddef.h>

/* Install the process's SIGBUS handler. Call once, before worker threads
 * start. Returns 0 or a negative errno with a sentence. */
int mapguard_install(char *err, size_t errlen);

/* Register [addr, addr + len) as a dataset mapping, or forget it again
 * (before it is unmapped). Thread-safe. Register returns 0, or -ENOSPC when
 * MAPGUARD_MAX mappings are registered already (faults there then crash). */
#define MAPGUARD_MAX 4096
int mapguard_register(const void *addr, size_t len);
void mapguard_unregister(const void *addr);

/* Arm this thread's guard at env; disarm when the guarded code is done. The
 * handler disarms before it jumps. */
void mapguard_arm(sigjmp_buf *env);
void mapguard_disarm(void);
/* The address of this thread's last caught fault (for messages). */
const void *mapguard_fault_addr(void);

/* Usage, in a function whose locals read after a fault are volatile (the
 * standard allows sigsetjmp only as the whole controlling expression of an
 * if, or compared with a constant there):
 *
 *	sigjmp_buf env;
 *	if (sigsetjmp(env, 0) == 0) {
 *		mapguard_arm(&env);
 *		... read the mapping ...
 *		mapguard_disarm();
 *	} else {
 *		... the mapping faulted: an I/O error ...
 *	}
 *
 * The signal mask need not be saved: the handler runs with SA_NODEFER, so
 * SIGBUS is never left blocked, and arming costs no system call. */

#endif
