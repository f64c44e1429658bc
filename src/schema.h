/* schema.h -- chime's whole schema: every domain's steps in one ordered
 * list (wiring, like app.c: the one place that knows every domain). */
#ifndef CHIME_SCHEMA_H
#define CHIME_SCHEMA_H

#include "store/store.h"

/* Fills *out (zeroed first) with every domain's steps. 0, or -1 when two
 * domains claim one version (a programming error, logged). */
int chime_schema(store_schema *out);

#endif
