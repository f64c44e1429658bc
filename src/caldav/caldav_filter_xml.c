/* caldav_filter_xml.c -- a calendar-query's C:filter (RFC 4791 9.7) into
 * a caldav_filter. chime keeps VEVENTs only, so the tree it understands is
 *
 *   comp-filter VCALENDAR
 *     comp-filter VEVENT (or VTODO, ...: those match nothing stored)
 *       is-not-defined | time-range | prop-filter* | comp-filter VALARM
 *
 * A time-range or prop-filter right under VCALENDAR is read as if under
 * the component (python-caldav writes them there when it is not told the
 * component). What it cannot evaluate (param-filter, a time-range on a
 * property or an alarm, two components) is refused with supported-filter
 * rather than answered wrongly. */
#include <string.h>

#include "caldav/caldav_xml_int.h"

#define VALID CALDAV_NS_CAL, "valid-filter"
#define SUPPORTED CALDAV_NS_CAL, "supported-filter"

unsigned cx_component_bit(const char *name)
{
    if (strcmp(name, "VEVENT") == 0) return CALDAV_COMP_VEVENT;
    if (strcmp(name, "VTODO") == 0) return CALDAV_COMP_VTODO;
    if (strcmp(name, "VJOURNAL") == 0) return CALDAV_COMP_VJOURNAL;
    return CALDAV_COMP_OTHER;
}

static int text_match(cx_parser *p, xmlNode *n, caldav_prop_filter *pf)
{
    const char *coll = cx_attr(p, n, "collation"), *neg = cx_attr(p, n, "negate-condition");
    if (!coll || !neg || !(pf->text = cx_text(p, n, CALDAV_TEXT_MAX, false))) return -1;
    if (coll[0] && strcmp(coll, "i;ascii-casemap") != 0 && strcmp(coll, "i;octet") != 0)
        return cx_fail(p, 403, CALDAV_NS_CAL, "supported-collation", "collation %.64s is not supported", coll);
    if (neg[0] && strcmp(neg, "yes") != 0 && strcmp(neg, "no") != 0)
        return cx_fail(p, 403, VALID, "negate-condition is yes or no");
    pf->octet = strcmp(coll, "i;octet") == 0;
    pf->negate = strcmp(neg, "yes") == 0;
    return 0;
}

static int prop_filter(cx_parser *p, xmlNode *n)
{
    caldav_filter *f = &p->rq->filter;
    if (f->nprops == CALDAV_MAX_PROP_FILTERS)
        return cx_fail(p, 403, SUPPORTED, "at most %d prop-filters", CALDAV_MAX_PROP_FILTERS);
    caldav_prop_filter *pf = &f->props[f->nprops];
    memset(pf, 0, sizeof *pf);
    if (!(pf->name = cx_attr(p, n, "name"))) return -1;
    if (!pf->name[0] || strlen(pf->name) > 64) return cx_fail(p, 403, VALID, "a prop-filter needs a name");
    for (xmlNode *c = cx_next(n->children); c; c = cx_next(c->next)) {
        if (cx_is(c, CALDAV_NS_CAL, "is-not-defined")) pf->is_not_defined = true;
        else if (cx_is(c, CALDAV_NS_CAL, "text-match")) {
            if (pf->text) return cx_fail(p, 403, SUPPORTED, "one text-match per prop-filter");
            if (text_match(p, c, pf) != 0) return -1;
        } else if (c->ns && c->ns->href && xmlStrEqual(c->ns->href, BAD_CAST CALDAV_NS_CAL))
            return cx_fail(p, 403, SUPPORTED, "<%s> in a prop-filter is not supported", (const char *)c->name);
    }
    f->nprops++;
    return 0;
}

static int time_range(cx_parser *p, xmlNode *n)
{
    caldav_filter *f = &p->rq->filter;
    if (f->has_range) return cx_fail(p, 403, VALID, "one time-range per component");
    f->has_range = true;
    return cx_range(p, n, false, &f->from_ms, &f->to_ms);
}

/* A VALARM comp-filter inside the component: present or not, nothing more. */
static int alarm_filter(cx_parser *p, xmlNode *n, const char *name)
{
    if (strcmp(name, "VALARM") != 0) return cx_fail(p, 403, SUPPORTED, "only VALARM can be nested in a component");
    p->rq->filter.alarm = 1;
    for (xmlNode *c = cx_next(n->children); c; c = cx_next(c->next)) {
        if (cx_is(c, CALDAV_NS_CAL, "is-not-defined")) p->rq->filter.alarm = -1;
        else if (c->ns && c->ns->href && xmlStrEqual(c->ns->href, BAD_CAST CALDAV_NS_CAL))
            return cx_fail(p, 403, SUPPORTED, "<%s> in a VALARM filter is not supported", (const char *)c->name);
    }
    return 0;
}

/* level 0: VCALENDAR; 1: the component; 2: an alarm in it. */
static int comp_filter(cx_parser *p, xmlNode *n, int level)
{
    caldav_filter *f = &p->rq->filter;
    const char *name = cx_attr(p, n, "name");
    if (!name) return -1;
    if (level == 0 && strcmp(name, "VCALENDAR") != 0)
        return cx_fail(p, 403, VALID, "the filter's comp-filter is VCALENDAR");
    if (level == 2) return alarm_filter(p, n, name);
    if (level == 1) {
        if (f->comp) return cx_fail(p, 403, SUPPORTED, "one component per query");
        f->comp = cx_component_bit(name);
    }
    for (xmlNode *c = cx_next(n->children); c; c = cx_next(c->next)) {
        int rc = 0;
        if (cx_is(c, CALDAV_NS_CAL, "is-not-defined")) f->comp_not_defined = true;
        else if (cx_is(c, CALDAV_NS_CAL, "time-range")) rc = time_range(p, c);
        else if (cx_is(c, CALDAV_NS_CAL, "prop-filter")) rc = prop_filter(p, c);
        else if (cx_is(c, CALDAV_NS_CAL, "comp-filter")) rc = comp_filter(p, c, level + 1);
        else if (c->ns && c->ns->href && xmlStrEqual(c->ns->href, BAD_CAST CALDAV_NS_CAL))
            rc = cx_fail(p, 403, SUPPORTED, "<%s> in a comp-filter is not supported", (const char *)c->name);
        if (rc != 0) return -1;
    }
    return 0;
}

int cx_filter(cx_parser *p, xmlNode *filter)
{
    xmlNode *top = cx_next(filter->children);
    if (!cx_is(top, CALDAV_NS_CAL, "comp-filter") || cx_next(top->next))
        return cx_fail(p, 403, VALID, "a filter holds one comp-filter, VCALENDAR");
    return comp_filter(p, top, 0);
}
