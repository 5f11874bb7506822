/* pack_audio_none.c — `packer pack audio` in a build without FFTW (the
 * audio features need it; packer/meson.build picks this file or
 * pack_audio.c): a clear usage error instead of a missing command. */
#include "packer.h"

#include "pack_msg.h"

int pack_audio_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	pack_error("pack audio: this packer was built without audio support (FFTW was not found)");
	return PACK_EXIT_USAGE;
}
