/* schema.c -- see schema.h. Versions are global: a new domain takes
 * numbers no other domain uses. */
#include "schema.h"

#include <string.h>

#include "base/base.h"
#include "calendar/calendar.h"
#include "chat/chat.h"
#include "feed/feed.h"
#include "jobs/jobs.h"
#include "notify/notify.h"
#include "users/users.h"

int chime_schema(store_schema *out)
{
    memset(out, 0, sizeof *out);
    if (users_schema_add(out) != 0 || cal_schema_add(out) != 0 || jobs_schema_add(out) != 0 ||
        notify_schema_add(out) != 0 || chat_schema_add(out) != 0 ||
        feed_schema_add(out) != 0) {
        log_error("schema: two domains claim one version, or too many steps");
        return -1;
    }
    return 0;
}
