/* time_err.c -- see time_err.h. */
#include "time/time_err.h"

#include <stdarg.h>
#include <stdio.h>

int time_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}
