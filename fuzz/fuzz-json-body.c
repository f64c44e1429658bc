/* fuzz-json-body.c -- request body decoding and field validation, and
 * query-string decoding: everything a client controls before a handler
 * looks at the request. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "http/json.h"
#include "users/users.h"

static void check_fields(const json_t *obj)
{
    static const char *const fields[] = {"email", "name", "password", NULL};
    http_err e;
    const char *s;
    int64_t i;
    bool present;
    http_json_only(obj, fields, &e);
    if (http_json_str(obj, "email", true, 254, &s, &e) == 0 && s) {
        users_email em;
        char why[160];
        users_email_valid(s);
        users_email_normalize(s, &em, why, sizeof why);
    }
    http_json_text(obj, "name", false, 200, TEXT_LINE, &s, &e);
    http_json_int(obj, "count", false, -5, 5000, &i, &present, &e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    http_err e;
    json_t *obj = http_json_decode((const char *)data, size, &e);
    if (obj) {
        check_fields(obj);
        json_decref(obj);
    }
    http_req r;
    memset(&r, 0, sizeof r);
    r.query.ptr = (const char *)data;
    r.query.len = size;
    char buf[64];
    http_query(&r, "from", buf, sizeof buf);
    http_query(&r, "", buf, sizeof buf);
    return 0;
}
