/* jpeg_resize.c — DCT-scaled decode, antialiased resize, re-encode (see
 * jpeg_resize.h). Decoding, resizing and tiled encoding are media's
 * (jpeg_decode.c, resize_image.c, jpeg_tiles.c); this file picks the scale
 * and the output size. */
#include "jpeg_resize.h"

#include "jpeg_decode.h"
#include "resize.h"
#include "status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct jpeg_resizer {
	struct jpeg_decoder *dec;
	struct jpeg_tiler *enc;
};

int jpeg_resizer_create(struct jpeg_resizer **out, char *err, size_t errlen)
{
	struct jpeg_resizer *z = calloc(1, sizeof(*z));
	if (!z)
		return status_fail(err, errlen, -ENOMEM, "JPEG resizer: out of memory");
	int rc = jpeg_decoder_create(&z->dec, err, errlen);
	if (!rc)
		rc = jpeg_tiler_create(&z->enc, err, errlen);
	if (rc) {
		jpeg_resizer_destroy(z);
		return rc;
	}
	*out = z;
	return 0;
}

void jpeg_resizer_destroy(struct jpeg_resizer *z)
{
	if (!z)
		return;
	jpeg_decoder_destroy(z->dec);
	jpeg_tiler_destroy(z->enc);
	free(z);
}

/* Output size: shorter side exactly `shorter`, aspect ratio kept. */
static void target_size(unsigned w, unsigned h, unsigned shorter, unsigned *dw, unsigned *dh)
{
	if (w <= h) {
		*dw = shorter;
		*dh = (unsigned)((double)h * shorter / w + 0.5);
	} else {
		*dh = shorter;
		*dw = (unsigned)((double)w * shorter / h + 0.5);
	}
	if (*dw < 1)
		*dw = 1;
	if (*dh < 1)
		*dh = 1;
}

int jpeg_resize(struct jpeg_resizer *z, const uint8_t *src, size_t len, unsigned shorter,
		int quality, const struct jpeg_tiles_policy *p, struct jpeg_resize_result *r,
		char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	if (shorter == 0 || quality < 1 || quality > 100)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "resize to %u at quality %d is out of range", shorter, quality);
	struct jpeg_info info;
	int rc = jpeg_decode_info(z->dec, src, len, &info, err, errlen);
	if (rc)
		return rc;
	r->src_width = info.width;
	r->src_height = info.height;
	unsigned sshort = info.width < info.height ? info.width : info.height;
	if (sshort <= shorter) {
		/* Kept, but only if all of it decodes; tiled without a loss. */
		rc = jpeg_decode_rgbx(z->dec, src, len, 8, NULL, NULL, NULL, err, errlen);
		if (rc || (!p->mcus && !p->bytes))
			return rc ? rc : 1;
		struct jpeg_tiles_result t;
		rc = jpeg_tiles_transcode(z->enc, src, len, p, &t, err, errlen);
		if (rc == 0) {
			r->data = t.data;
			r->len = t.len;
			r->restart = t.restart;
		}
		return rc < 0 ? rc : 1; /* 1 from transcode: kept byte for byte */
	}
	/* Smallest M/8 whose scaled shorter side still reaches the target. */
	unsigned m = 8;
	for (unsigned k = 1; k <= 8; k++) {
		if (((uint64_t)sshort * k + 7) / 8 >= shorter) {
			m = k;
			break;
		}
	}
	uint8_t *pix = NULL, *out = NULL;
	uint32_t sw, sh;
	if ((rc = jpeg_decode_rgbx(z->dec, src, len, m, &pix, &sw, &sh, err, errlen)))
		return rc;
	unsigned dw, dh, comps = info.gray ? 1 : 3;
	target_size(info.width, info.height, shorter, &dw, &dh);
	/* The decoded image covers width * m / 8 source pixels, a little less
	 * than sw when the scaling rounded up: resize that extent, so the
	 * output stays aligned with the original instead of stretched. */
	double ew = (double)info.width * m / 8, eh = (double)info.height * m / 8;
	out = malloc((size_t)dw * dh * comps);
	if (!out || resize_image_u8(pix, (size_t)sw * 4, sw, sh, ew, eh, out, dw, dh, comps) != 0) {
		rc = status_fail(err, errlen, -ENOMEM, "out of memory resizing to %ux%u", dw, dh);
		goto done;
	}
	struct jpeg_tiles_result t;
	if ((rc = jpeg_tiles_encode(z->enc, out, (size_t)dw * comps, dw, dh, comps, quality, p, &t,
				    err, errlen)))
		goto done;
	r->data = t.data;
	r->len = t.len;
	r->restart = t.restart;
	r->width = dw;
	r->height = dh;
done:
	free(pix);
	free(out);
	return rc;
}
