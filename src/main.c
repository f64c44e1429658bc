/* main.c -- the chime command line. */
#include <stdio.h>
#include <string.h>

#include "cli_rrule.h"

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "rrule") == 0)
        return cli_rrule_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        puts("usage: chime serve [options]");
        return 0;
    }
    fprintf(stderr, "chime: not yet\n");
    return 2;
}
