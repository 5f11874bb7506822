/* test_detrand.c — augmentation randomness: keys are pure functions of
 * (seed, epoch, index) and sensitive to each; the generator is repeatable,
 * uniform enough, and detrand_range stays in bounds. */
#include "check.h"
#include "detrand.h"

#include <math.h>
#include <stdint.h>

int main(void)
{
	CHECK(detrand_key(1, 2, 3) == detrand_key(1, 2, 3));
	CHECK(detrand_key(1, 2, 3) != detrand_key(1, 2, 4));
	CHECK(detrand_key(1, 2, 3) != detrand_key(1, 3, 3));
	CHECK(detrand_key(1, 2, 3) != detrand_key(2, 2, 3));
	CHECK(detrand_key(1, 2, 3) != detrand_key(3, 2, 1));
	CHECK(detrand_key(0, 0, 1) != detrand_key(0, 1, 0));

	struct detrand a, b, c;
	detrand_init(&a, 77);
	detrand_init(&b, 77);
	detrand_init(&c, 78);
	int differ = 0;
	for (int i = 0; i < 100; i++) {
		uint64_t x = detrand_u64(&a);
		CHECK(x == detrand_u64(&b));
		differ += x != detrand_u64(&c);
	}
	CHECK(differ == 100);

	/* Mean and spread of the uniform draws, and bucket counts. */
	detrand_init(&a, 0);
	const int n = 200000;
	double sum = 0, sum2 = 0;
	int buckets[10] = { 0 };
	for (int i = 0; i < n; i++) {
		double u = detrand_uniform(&a);
		CHECK(u >= 0.0 && u < 1.0);
		sum += u;
		sum2 += u * u;
		buckets[(int)(u * 10)]++;
	}
	double mean = sum / n, var = sum2 / n - mean * mean;
	CHECKF(fabs(mean - 0.5) < 0.005, "mean %f", mean);
	CHECKF(fabs(var - 1.0 / 12) < 0.002, "variance %f", var);
	for (int i = 0; i < 10; i++)
		CHECKF(abs(buckets[i] - n / 10) < n / 100, "bucket %d has %d", i, buckets[i]);

	int hits[7] = { 0 };
	for (int i = 0; i < 70000; i++) {
		int64_t v = detrand_range(&a, -3, 3);
		CHECK(v >= -3 && v <= 3);
		hits[v + 3]++;
	}
	for (int i = 0; i < 7; i++)
		CHECKF(abs(hits[i] - 10000) < 600, "value %d drawn %d times", i - 3, hits[i]);
	CHECK(detrand_range(&a, 5, 5) == 5);
	(void)detrand_range(&a, INT64_MIN, INT64_MAX);
	return 0;
}
