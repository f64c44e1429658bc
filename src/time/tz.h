/* tz.h -- IANA time zones from the system's TZif files.
 *
 * A tz_db loads zones on first use from a zoneinfo directory (default
 * /usr/share/zoneinfo) and keeps them until tz_db_free; lookups are
 * thread-safe and a loaded zone is immutable, so a `const tz_zone *` may be
 * used from any thread without locking. Seconds are Unix seconds (UTC) or
 * "local seconds": a wall-clock time run through civil_to_seconds.
 *
 * Local -> UTC follows RFC 5545 3.3.5: a wall time inside a DST gap takes the
 * offset in force before the gap (02:30 on a spring-forward day is 03:30 after
 * the shift); a wall time repeated by an overlap is the first of the two.
 *
 * Floating times (RFC 5545 local times with no TZID) are a NULL zone: every
 * lookup function accepts z == NULL and treats it as offset 0, so local and
 * UTC seconds are the same number and the abbreviation is "".
 *
 * Leap seconds are not modelled: TZif files with a leap-second table (the
 * right/ tree) are rejected. Instants are clamped to about +-300,000 years
 * where a rule has to be evaluated; results saturate instead of overflowing.
 */
#ifndef CHIME_TIME_TZ_H
#define CHIME_TIME_TZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tz_db tz_db;
typedef struct tz_zone tz_zone;

/* dir NULL means /usr/share/zoneinfo. Returns NULL only when out of memory. */
tz_db *tz_db_new(const char *dir);
/* The release of the zone data, from the directory's tzdata.zi ("2025b"),
 * read once at tz_db_new; "" when the directory has none. Whatever is
 * written from the zones changes with it (CalDAV's ETags carry it). */
const char *tz_db_version(const tz_db *db);
/* The zoneinfo directory the zones are read from. */
const char *tz_db_dir(const tz_db *db);
void tz_db_free(tz_db *db);

/* The zone named `name` ("America/New_York", "UTC", "Etc/GMT+5"), or NULL
 * when there is no such zone or its file is malformed. Names with "..",
 * a leading '/', or characters outside [A-Za-z0-9/_+-] are rejected. */
const tz_zone *tz_db_get(tz_db *db, const char *name);
/* The name the zone was loaded under; "" for the floating (NULL) zone. */
const char *tz_zone_name(const tz_zone *z);

/* UTC offset in seconds (east positive) in force at a UTC instant. */
int32_t tz_offset_at(const tz_zone *z, int64_t utc_secs);
/* UTC instant for a local wall time, with the RFC 5545 gap/overlap rule. */
int64_t tz_local_to_utc(const tz_zone *z, int64_t local_secs);
/* Local wall time (as local seconds) at a UTC instant. */
int64_t tz_utc_to_local(const tz_zone *z, int64_t utc_secs);
/* Abbreviation in force at a UTC instant ("EST", "CEST"). */
const char *tz_abbrev_at(const tz_zone *z, int64_t utc_secs);

/* Parse a TZif file (RFC 8536, versions 1-4) held in memory, validating
 * every count and index against len, and its POSIX TZ footer. The result is
 * owned by the caller (tz_zone_free); NULL when malformed or out of memory.
 * tz_db_get uses this; it is public for the fuzz target and for tests.
 * name (copied; NULL means "") is what tz_zone_name will return. */
tz_zone *tz_zone_parse(const char *name, const uint8_t *data, size_t len);
void tz_zone_free(tz_zone *z);

/* A zone defined by its changes (an iCalendar VTIMEZONE's STANDARD and
 * DAYLIGHT observances, expanded): offset `first` before utc[0], offsets[i]
 * from utc[i] on; utc strictly ascending, at most TZ_MAX_CHANGES. Owned by
 * the caller (tz_zone_free); NULL when malformed or out of memory. */
#define TZ_MAX_CHANGES 4096
tz_zone *tz_zone_from_changes(const char *name, int32_t first, const int64_t *utc, const int32_t *offsets,
                              size_t n);
/* The first instant after `after` at which the zone's UTC offset changes
 * (changes of abbreviation alone do not count); false when none comes. */
bool tz_next_change(const tz_zone *z, int64_t after, int64_t *at);

/* The IANA zones of the Windows zone table, one by one (NULL past the
 * end): what an iCalendar file's own zone definition is compared with. */
const char *tz_windows_iana_at(size_t i);

/* Is the zone's name a known Windows zone name ("Eastern Standard Time")?
 * Returns the IANA name for it, or NULL. For iCalendar import. */
const char *tz_windows_to_iana(const char *windows_name);

#endif
