/* probit.h — the normal deviate of a probability, for what maps
 * probabilities onto a normal scale: the wave pipeline's Gaussian dither
 * table and xvec's DET plot axes. */
#ifndef FEEDER_PROBIT_H
#define FEEDER_PROBIT_H

/* The normal deviate of probability p (the inverse of the standard normal
 * CDF; Acklam's rational approximation, refined by one Halley step to full
 * double precision); -inf for p <= 0, +inf for p >= 1. Pure. */
double probit(double p);

#endif
