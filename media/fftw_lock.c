/* fftw_lock.c — the planner lock (see fftw_lock.h). */
#include "fftw_lock.h"

#include <pthread.h>

static pthread_mutex_t fftw_planner = PTHREAD_MUTEX_INITIALIZER;

void fftw_lock(void)
{
	pthread_mutex_lock(&fftw_planner);
}
void fftw_unlock(void)
{
	pthread_mutex_unlock(&fftw_planner);
}
