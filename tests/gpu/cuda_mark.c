/* cuda_mark.c — a stand-in for the CUDA driver (built as libcuda.so.1) for
 * test_host_no_cuda.sh: the CUDA runtime loads libcuda.so.1 the first time
 * a process calls it, so a copy of this one found first on
 * LD_LIBRARY_PATH tells whether a process touched CUDA at all. Loading it
 * appends a line to the file named by FEEDER_TEST_CUDA_MARK; it exports
 * nothing else, so the runtime finds no driver and carries on without one. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void cuda_mark(void)
{
	static const char line[] = "libcuda.so.1 loaded\n";
	const char *path = getenv("FEEDER_TEST_CUDA_MARK");

	if (!path)
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, line, strlen(line)) < 0) {
		/* nothing to do: the test then sees no mark and says so */
	}
	close(fd);
}
