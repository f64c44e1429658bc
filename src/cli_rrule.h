/* cli_rrule.h -- `chime rrule`: JSON lines or a human command line. */
#ifndef CHIME_CLI_RRULE_H
#define CHIME_CLI_RRULE_H

#include <stddef.h>

#include "time/tz.h"

/* The reply to one JSON line (without its newline), as a malloc'd string
 * the caller frees; NULL only when out of memory. */
char *cli_rrule_answer(const char *line, size_t len, tz_db *db);

/* argv[0] is "rrule". Returns the process exit status. */
int cli_rrule_main(int argc, char **argv);

#endif
