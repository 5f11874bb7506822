/* jpeg_rules.c — the error manager and header checks shared by every JPEG
 * decoder in Feeder (see jpeg_rules.h). */
#include "jpeg_rules.h"

#include "image_limit.h"
#include "status.h"

static void on_error(j_common_ptr ci)
{
	struct jpeg_rules_err *e = (struct jpeg_rules_err *)ci->err;
	(*ci->err->format_message)(ci, e->msg);
	longjmp(e->jump, 1);
}

/* Level -1 is a warning about corrupt data: an error here. Trace messages
 * (level >= 0) are ignored. */
static void on_message(j_common_ptr ci, int level)
{
	if (level < 0)
		on_error(ci);
}

static void on_output(j_common_ptr ci)
{
	(void)ci;
}

/* Called by libjpeg between scans of a buffered-image or progressive decode. */
static void on_progress(j_common_ptr ci)
{
	if (ci->is_decompressor &&
	    ((j_decompress_ptr)ci)->input_scan_number > JPEG_RULES_MAX_SCANS) {
		struct jpeg_rules_err *e = (struct jpeg_rules_err *)ci->err;
		snprintf(e->msg, sizeof(e->msg), "progressive JPEG with more than %d scans",
			 JPEG_RULES_MAX_SCANS);
		longjmp(e->jump, 1);
	}
}

void jpeg_rules_create(struct jpeg_decompress_struct *ci, struct jpeg_rules_err *e)
{
	ci->err = jpeg_std_error(&e->pub);
	e->pub.error_exit = on_error;
	e->pub.emit_message = on_message;
	e->pub.output_message = on_output;
	jpeg_create_decompress(ci);
	e->progress.progress_monitor = on_progress;
	ci->progress = &e->progress;
}

int jpeg_rules_check_header(const struct jpeg_decompress_struct *ci, const char *prefix, char *err,
			    size_t errlen)
{
	const char *sep = prefix ? ": " : "";
	prefix = prefix ? prefix : "";
	if (ci->jpeg_color_space == JCS_CMYK || ci->jpeg_color_space == JCS_YCCK)
		return status_fail(err, errlen, FEEDER_EDECODE, "%s%sCMYK images are not supported",
				   prefix, sep);
	char why[160];
	int rc = image_limit_check(ci->image_width, ci->image_height, why, sizeof why);
	if (rc)
		return status_fail(err, errlen, rc, "%s%s%s", prefix, sep, why);
	return 0;
}
