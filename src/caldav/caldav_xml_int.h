/* caldav_xml_int.h -- what the request parser's two files share
 * (caldav_xml.c: bodies and properties; caldav_filter_xml.c: the
 * calendar-query filter). Nothing outside them includes it. */
#ifndef CHIME_CALDAV_XML_INT_H
#define CHIME_CALDAV_XML_INT_H

#include <libxml/tree.h>

#include "caldav/caldav_xml.h"

typedef struct cx_parser {
    caldav_request *rq;
    caldav_xml_err *err;
} cx_parser;

/* Fills the error; returns -1. */
int cx_fail(cx_parser *p, int status, const char *cond_ns, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* A copy of n bytes of s in the request's arena (NULL when out of memory). */
const char *cx_keep(cx_parser *p, const char *s, size_t n);
bool cx_is(const xmlNode *n, const char *ns, const char *name);
/* n or the first element after it. */
xmlNode *cx_next(xmlNode *n);
const char *cx_text(cx_parser *p, xmlNode *n, size_t max, bool trim);
const char *cx_attr(cx_parser *p, xmlNode *n, const char *name);
int cx_range(cx_parser *p, xmlNode *n, bool need_both, int64_t *from, int64_t *to);
/* VEVENT -> CALDAV_COMP_VEVENT, ...; CALDAV_COMP_OTHER for the rest. */
unsigned cx_component_bit(const char *name);
/* C:filter into rq->filter (caldav_filter_xml.c). */
int cx_filter(cx_parser *p, xmlNode *filter);

#endif
