/* packer_push_none.c — `packer push` in a build without libcurl (-Ds3):
 * one line saying so, exit 2. */
#include "packer_push.h"

#include "pack_msg.h"
#include "packer.h"

int packer_push_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	pack_error("push: this packer was built without object storage support (libcurl)");
	return PACK_EXIT_USAGE;
}
