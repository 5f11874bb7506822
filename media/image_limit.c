/* image_limit.c — the decoded-image size check (see image_limit.h). */
#include "image_limit.h"

#include "status.h"

int image_limit_check(uint64_t width, uint64_t height, char *err, size_t errlen)
{
	if (width == 0 || height == 0)
		return status_fail(err, errlen, FEEDER_EDECODE, "%llux%llu image has no pixels",
				   (unsigned long long)width, (unsigned long long)height);
	/* Each side alone first, so that the product cannot overflow. */
	if (width > IMAGE_MAX_PIXELS || height > IMAGE_MAX_PIXELS ||
	    width * height > IMAGE_MAX_PIXELS)
		return status_fail(err, errlen, FEEDER_EDECODE,
				   "%llux%llu image is over the %llu-pixel limit",
				   (unsigned long long)width, (unsigned long long)height,
				   (unsigned long long)IMAGE_MAX_PIXELS);
	return 0;
}
