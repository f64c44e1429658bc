/* testutil.h -- shared includes for the cmocka unit tests. */
#ifndef CHIME_TESTUTIL_H
#define CHIME_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <cmocka.h>

/* Sleeps ms milliseconds (tests that wait for a thread or a timer). */
static inline void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

#endif
