/* testutil.h -- shared includes for the cmocka unit tests. */
#ifndef CHIME_TESTUTIL_H
#define CHIME_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#endif
