/* text.c -- see text.h. */
#include "base/text.h"

ptrdiff_t text_find_control(const char *s, size_t len, text_kind kind, uint32_t *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len; i++) {
        uint32_t c = p[i];
        /* C1 controls are the two-byte sequences C2 80 .. C2 9F. */
        if (c == 0xC2 && i + 1 < len && p[i + 1] >= 0x80 && p[i + 1] <= 0x9F) c = p[i + 1];
        else if (c >= 0x20 && c != 0x7F) continue;
        if (kind != TEXT_IDENT && (c == '\t' || (c == '\n' && kind == TEXT_MULTILINE))) continue;
        *cp = c;
        return (ptrdiff_t)i;
    }
    return -1;
}
