/* cli_rrule.h -- `chime rrule`: JSON lines or a human command line. */
#ifndef CHIME_CLI_RRULE_H
#define CHIME_CLI_RRULE_H

/* argv[0] is "rrule". Returns the process exit status. */
int cli_rrule_main(int argc, char **argv);

#endif
