/* fuzz-web-request.c -- what a browser's request says to the static file
 * handler: the path (must never name anything outside the root: no "..",
 * no hidden segment, no NUL or backslash once decoded), Accept-Encoding
 * and If-None-Match. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "web/web.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    char out[WEB_PATH_MAX];
    web_kind k = web_path_parse(s, size, out, sizeof out);
    if (k != WEB_NOT_FOUND) {
        size_t n = strlen(out);
        if (out[0] != '/' || n >= sizeof out || strstr(out, "/.") || strchr(out, '\\') || strstr(out, "//") ||
            strncmp(out, "/v1/", 4) == 0)
            abort();
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)out[i] < 0x20) abort();
        if (k == WEB_FILE && out[n - 1] == '/') abort();
        (void)web_content_type(out);
    }
    (void)web_accepts_gzip(s, size);
    (void)web_etag_matches(s, size, "\"0123456789abcdef\"");
    return 0;
}
