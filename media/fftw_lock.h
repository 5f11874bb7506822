/* fftw_lock.h — the one lock around FFTW's planner in this process.
 *
 * FFTW's planner (plan creation and destruction) is not thread-safe, and
 * two modules make plans on worker threads: fbank (per extractor) and
 * reverb (per FFT size). Each locking its own mutex would let a feederd
 * worker plan an fbank while another plans a reverb; they share this one.
 * Executing a plan needs no lock. */
#ifndef FEEDER_FFTW_LOCK_H
#define FEEDER_FFTW_LOCK_H

void fftw_lock(void);
void fftw_unlock(void);

#endif
