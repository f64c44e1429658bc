/* caldav_xml.h -- WebDAV and CalDAV request bodies (PROPFIND, PROPPATCH,
 * MKCOL, MKCALENDAR, REPORT) read into plain structs.
 *
 * Parsed with libxml2 the safe way (see the notes on libxml2 2.9.14):
 * XML_PARSE_NONET and none of NOENT, DTDLOAD, DTDATTR, DTDVALID, XINCLUDE
 * or HUGE; any DOCTYPE stops the parser (so no entity is ever declared,
 * and XXE and billion-laughs bodies are refused as malformed); undeclared
 * prefixes are errors; bodies are at most CALDAV_XML_MAX bytes. Elements
 * are matched by namespace URI and local name, never by prefix. Nothing
 * here touches the database or the network, so the unit tests and the
 * fuzzer drive it directly.
 */
#ifndef CHIME_CALDAV_XML_H
#define CHIME_CALDAV_XML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CALDAV_NS_DAV "DAV:"
#define CALDAV_NS_CAL "urn:ietf:params:xml:ns:caldav"
#define CALDAV_NS_CS "http://calendarserver.org/ns/"
#define CALDAV_NS_APPLE "http://apple.com/ns/ical/"

#define CALDAV_XML_MAX (256 * 1024) /* request body bytes */
#define CALDAV_MAX_PROPS 64         /* properties named in one body */
#define CALDAV_MAX_HREFS 1000       /* hrefs in one calendar-multiget */
#define CALDAV_MAX_PROP_FILTERS 16
#define CALDAV_HREF_MAX 2048
#define CALDAV_TEXT_MAX 1024        /* a text-match, a colour, an order, a sync token */
#define CALDAV_VALUE_MAX 65536      /* a property value set (calendar-timezone is the longest) */

/* The properties chime knows. Anything else keeps its namespace and name,
 * so that the answer can list it as not found. */
typedef enum caldav_prop_id {
    CALDAV_P_UNKNOWN = 0,
    CALDAV_P_RESOURCETYPE,
    CALDAV_P_DISPLAYNAME,
    CALDAV_P_GETETAG,
    CALDAV_P_GETCONTENTTYPE,
    CALDAV_P_GETCONTENTLENGTH,
    CALDAV_P_GETLASTMODIFIED,
    CALDAV_P_CURRENT_USER_PRINCIPAL,
    CALDAV_P_PRINCIPAL_URL,
    CALDAV_P_OWNER,
    CALDAV_P_SUPPORTED_REPORT_SET,
    CALDAV_P_SYNC_TOKEN,
    CALDAV_P_CURRENT_USER_PRIVILEGE_SET,
    CALDAV_P_CALENDAR_HOME_SET,
    CALDAV_P_CALENDAR_USER_ADDRESS_SET,
    CALDAV_P_CALENDAR_DATA,
    CALDAV_P_SUPPORTED_CALENDAR_COMPONENT_SET,
    CALDAV_P_SUPPORTED_CALENDAR_DATA,
    CALDAV_P_CALENDAR_TIMEZONE,
    CALDAV_P_CALENDAR_DESCRIPTION,
    CALDAV_P_MAX_RESOURCE_SIZE,
    CALDAV_P_GETCTAG,
    CALDAV_P_CALENDAR_COLOR,
    CALDAV_P_CALENDAR_ORDER,
    CALDAV_P_COUNT
} caldav_prop_id;

/* The property's namespace and local name (id must be known). */
const char *caldav_prop_ns(caldav_prop_id id);
const char *caldav_prop_name(caldav_prop_id id);
caldav_prop_id caldav_prop_lookup(const char *ns, const char *name);

typedef struct caldav_prop {
    caldav_prop_id id;
    const char *ns, *name; /* as written ("" when the element had no namespace) */
    const char *value;     /* PROPPATCH set and MKCOL: the text; NULL otherwise */
    bool remove;           /* PROPPATCH: in a DAV:remove */
} caldav_prop;

/* Components, as bits (supported-calendar-component-set, comp-filter). */
enum { CALDAV_COMP_VEVENT = 1, CALDAV_COMP_VTODO = 2, CALDAV_COMP_VJOURNAL = 4, CALDAV_COMP_OTHER = 8 };

typedef struct caldav_prop_filter {
    const char *name;      /* upper case: SUMMARY, UID, ... */
    bool is_not_defined;
    const char *text;      /* text-match, or NULL */
    bool negate;
    bool octet;            /* i;octet collation (else i;ascii-casemap) */
} caldav_prop_filter;

/* A calendar-query filter, flattened: chime stores VEVENTs only, so the
 * tree VCALENDAR > component > (time-range, prop-filters, VALARM) is all
 * there is to say. Time ranges are UTC ms; an open end is 0001-01-01 or
 * 10000-01-01 (cx_range). */
typedef struct caldav_filter {
    unsigned comp;         /* the component asked for (one bit); 0: any */
    bool comp_not_defined; /* is-not-defined on it */
    bool has_range;
    int64_t from_ms, to_ms;
    caldav_prop_filter props[CALDAV_MAX_PROP_FILTERS];
    size_t nprops;
    int alarm;             /* 1: must have a VALARM, -1: must not, 0: either */
} caldav_filter;

typedef enum caldav_body {
    CALDAV_BODY_PROPFIND,
    CALDAV_BODY_PROPPATCH,
    CALDAV_BODY_MKCOL,      /* MKCOL (RFC 5689) and MKCALENDAR */
    CALDAV_BODY_REPORT,
} caldav_body;

typedef enum caldav_report {
    CALDAV_REPORT_NONE,
    CALDAV_REPORT_MULTIGET,
    CALDAV_REPORT_QUERY,
    CALDAV_REPORT_FREEBUSY,
    CALDAV_REPORT_SYNC,
} caldav_report;

typedef enum caldav_want { CALDAV_WANT_PROP, CALDAV_WANT_ALLPROP, CALDAV_WANT_PROPNAME } caldav_want;

typedef struct caldav_arena caldav_arena;

typedef struct caldav_request {
    caldav_body body;
    caldav_report report;
    caldav_want want;
    caldav_prop props[CALDAV_MAX_PROPS]; /* asked for, or set/removed */
    size_t nprops;
    /* MKCOL/MKCALENDAR */
    bool is_mkcalendar;    /* the root was C:mkcalendar */
    bool calendar_type;    /* MKCOL's resourcetype names C:calendar */
    unsigned components;   /* supported-calendar-component-set, 0 if not given */
    /* calendar-data in a report's prop */
    bool expand;
    int64_t expand_from_ms, expand_to_ms;
    /* calendar-query and free-busy-query */
    caldav_filter filter;
    int64_t range_from_ms, range_to_ms; /* free-busy-query */
    /* calendar-multiget */
    const char *hrefs[CALDAV_MAX_HREFS];
    size_t nhrefs;
    /* sync-collection */
    const char *sync_token; /* "" for an initial sync */
    bool sync_infinite;
    size_t limit;           /* DAV:limit/nresults, 0 when none */
    caldav_arena *arena;    /* owns every string above */
} caldav_request;

/* Why a body was refused: the status (400 malformed, 403 a precondition,
 * 413 too big, 415 an unsupported calendar-data type), the precondition
 * element to name in the DAV:error (ns and name, or NULL) and a message. */
typedef struct caldav_xml_err {
    int status;
    const char *cond_ns, *cond;
    char message[256];
} caldav_xml_err;

/* Must run once on the main thread before any parse (libxml2's rule). */
void caldav_xml_init(void);

/* Reads body (len bytes, possibly empty) as what `kind` expects. An empty
 * PROPFIND is allprop; an empty MKCALENDAR makes a plain calendar. 0, or -1
 * with err filled and nothing to free. On success the caller frees the
 * request with caldav_request_free. */
int caldav_xml_parse(caldav_body kind, const char *body, size_t len, caldav_request *out, caldav_xml_err *err);
void caldav_request_free(caldav_request *r);

/* "20060104T000000Z" to UTC ms; -1 when it is not a UTC date-time. */
int caldav_parse_utc(const char *s, int64_t *ms);

#endif
