/* time_err.h -- the one error helper of the time room: its parsers (RRULE,
 * cron) report why text was refused into a caller's buffer. (src/time
 * depends on nothing, not even src/base, so it keeps its own copy of
 * base_errf.) */
#ifndef CHIME_TIME_ERR_H
#define CHIME_TIME_ERR_H

#include <stddef.h>

/* Formats into err (when err and errlen are set) and returns -1, so a
 * parser can `return time_errf(err, errlen, "...", ...)`. */
int time_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
