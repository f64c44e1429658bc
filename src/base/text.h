/* text.h -- what text from outside may contain, one rule for every room.
 *
 * Control characters (Unicode general category Cc: C0 U+0000-U+001F, DEL
 * U+007F, C1 U+0080-U+009F) have no business in stored text: they are
 * invisible, terminals act on them, and iCalendar and e-mail cannot carry
 * most of them, so an export dropped them and a re-import no longer
 * matched (issue 25). Tab is allowed in text, newline only in multi-line
 * text (descriptions), nothing at all in identifiers. Input is UTF-8
 * (JSON and iCalendar are checked before this). */
#ifndef CHIME_BASE_TEXT_H
#define CHIME_BASE_TEXT_H

#include <stddef.h>
#include <stdint.h>

typedef enum text_kind {
    TEXT_LINE,      /* one line: tab allowed */
    TEXT_MULTILINE, /* tab and newline (LF) allowed */
    TEXT_IDENT,     /* an identifier: no control at all */
} text_kind;

/* The byte offset of the first control character a `kind` text may not
 * hold, with its code point in *cp; -1 when there is none. */
ptrdiff_t text_find_control(const char *s, size_t len, text_kind kind, uint32_t *cp);

#endif
