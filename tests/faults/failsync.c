/* failsync.c -- a disk that fails its syncs, for the API tests: preloaded
 * into chime (LD_PRELOAD), it answers EIO to every fdatasync and fsync of
 * a file whose name ends in "-wal" while the file named by
 * CHIME_FAILSYNC exists, and passes every other call to the C library.
 * A real failed write-back looks the same to chime: the sync says EIO. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failing(int fd)
{
    const char *flag = getenv("CHIME_FAILSYNC");
    if (!flag || access(flag, F_OK) != 0) return 0;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    return n > 4 && memcmp(path + n - 4, "-wal", 4) == 0;
}

int fdatasync(int fd)
{
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    if (failing(fd)) {
        errno = EIO;
        return -1;
    }
    return real(fd);
}

int fsync(int fd)
{
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    if (failing(fd)) {
        errno = EIO;
        return -1;
    }
    return real(fd);
}
