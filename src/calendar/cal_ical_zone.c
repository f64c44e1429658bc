/* cal_ical_zone.c -- the TZIDs iCalendar producers write, mapped to IANA zones.
 *
 * Google and Apple write IANA names; Outlook and Exchange write Windows names
 * ("Eastern Standard Time") or, in files saved from the desktop client, the
 * zone's display name ("(UTC-05:00) Eastern Time (US & Canada)"); Thunderbird
 * and other libical users prefix the IANA name with a vendor path
 * ("/mozilla.org/20050126_1/America/New_York") and name it again in the
 * VTIMEZONE's X-LIC-LOCATION. The VTIMEZONE rules themselves are not read:
 * the system's zone data of the same name is current, theirs a snapshot. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "calendar/cal_ical.h"

typedef struct display_name {
    const char *display; /* after the "(UTC+hh:mm) " prefix */
    const char *iana;
} display_name;

/* Windows display names of the zones people most often use. */
static const display_name display_names[] = {
    {"International Date Line West", "Etc/GMT+12"},
    {"Coordinated Universal Time-11", "Etc/GMT+11"},
    {"Hawaii", "Pacific/Honolulu"},
    {"Alaska", "America/Anchorage"},
    {"Pacific Time (US & Canada)", "America/Los_Angeles"},
    {"Pacific Time (US and Canada)", "America/Los_Angeles"},
    {"Arizona", "America/Phoenix"},
    {"Mountain Time (US & Canada)", "America/Denver"},
    {"Mountain Time (US and Canada)", "America/Denver"},
    {"Central Time (US & Canada)", "America/Chicago"},
    {"Central Time (US and Canada)", "America/Chicago"},
    {"Saskatchewan", "America/Regina"},
    {"Guadalajara, Mexico City, Monterrey", "America/Mexico_City"},
    {"Central America", "America/Guatemala"},
    {"Eastern Time (US & Canada)", "America/New_York"},
    {"Eastern Time (US and Canada)", "America/New_York"},
    {"Indiana (East)", "America/Indiana/Indianapolis"},
    {"Bogota, Lima, Quito, Rio Branco", "America/Bogota"},
    {"Bogota, Lima, Quito", "America/Bogota"},
    {"Atlantic Time (Canada)", "America/Halifax"},
    {"Santiago", "America/Santiago"},
    {"Newfoundland", "America/St_Johns"},
    {"Brasilia", "America/Sao_Paulo"},
    {"City of Buenos Aires", "America/Argentina/Buenos_Aires"},
    {"Buenos Aires", "America/Argentina/Buenos_Aires"},
    {"Azores", "Atlantic/Azores"},
    {"Coordinated Universal Time", "UTC"},
    {"Dublin, Edinburgh, Lisbon, London", "Europe/London"},
    {"Greenwich Mean Time : Dublin, Edinburgh, Lisbon, London", "Europe/London"},
    {"Monrovia, Reykjavik", "Atlantic/Reykjavik"},
    {"Amsterdam, Berlin, Bern, Rome, Stockholm, Vienna", "Europe/Berlin"},
    {"Belgrade, Bratislava, Budapest, Ljubljana, Prague", "Europe/Budapest"},
    {"Brussels, Copenhagen, Madrid, Paris", "Europe/Paris"},
    {"Sarajevo, Skopje, Warsaw, Zagreb", "Europe/Warsaw"},
    {"West Central Africa", "Africa/Lagos"},
    {"Athens, Bucharest", "Europe/Bucharest"},
    {"Cairo", "Africa/Cairo"},
    {"Helsinki, Kyiv, Riga, Sofia, Tallinn, Vilnius", "Europe/Helsinki"},
    {"Helsinki, Kiev, Riga, Sofia, Tallinn, Vilnius", "Europe/Helsinki"},
    {"Jerusalem", "Asia/Jerusalem"},
    {"Harare, Pretoria", "Africa/Johannesburg"},
    {"Istanbul", "Europe/Istanbul"},
    {"Moscow, St. Petersburg", "Europe/Moscow"},
    {"Moscow, St. Petersburg, Volgograd", "Europe/Moscow"},
    {"Kuwait, Riyadh", "Asia/Riyadh"},
    {"Nairobi", "Africa/Nairobi"},
    {"Tehran", "Asia/Tehran"},
    {"Abu Dhabi, Muscat", "Asia/Dubai"},
    {"Kabul", "Asia/Kabul"},
    {"Islamabad, Karachi", "Asia/Karachi"},
    {"Chennai, Kolkata, Mumbai, New Delhi", "Asia/Kolkata"},
    {"Kathmandu", "Asia/Kathmandu"},
    {"Dhaka", "Asia/Dhaka"},
    {"Bangkok, Hanoi, Jakarta", "Asia/Bangkok"},
    {"Beijing, Chongqing, Hong Kong, Urumqi", "Asia/Shanghai"},
    {"Kuala Lumpur, Singapore", "Asia/Singapore"},
    {"Perth", "Australia/Perth"},
    {"Taipei", "Asia/Taipei"},
    {"Osaka, Sapporo, Tokyo", "Asia/Tokyo"},
    {"Seoul", "Asia/Seoul"},
    {"Adelaide", "Australia/Adelaide"},
    {"Darwin", "Australia/Darwin"},
    {"Brisbane", "Australia/Brisbane"},
    {"Canberra, Melbourne, Sydney", "Australia/Sydney"},
    {"Hobart", "Australia/Hobart"},
    {"Auckland, Wellington", "Pacific/Auckland"},
};

/* "(UTC-05:00) Eastern Time" -> "Eastern Time"; also "(GMT-05.00) ..." and
 * "(UTC) ...". NULL when there is no such prefix. */
static const char *after_offset_prefix(const char *s)
{
    if (s[0] != '(' || (strncasecmp(s + 1, "UTC", 3) && strncasecmp(s + 1, "GMT", 3))) return NULL;
    const char *close = strchr(s, ')');
    if (!close || close - s > 12) return NULL;
    close++;
    while (*close == ' ') close++;
    return close;
}

const char *ical_zone_map(tz_db *tz, const char *tzid, const char *location)
{
    if (location && location[0] && tz_db_get(tz, location)) return tz_zone_name(tz_db_get(tz, location));
    if (!tzid || !tzid[0]) return NULL;
    const tz_zone *z = tz_db_get(tz, tzid);
    if (z) return tz_zone_name(z);
    const char *iana = tz_windows_to_iana(tzid);
    if (iana && tz_db_get(tz, iana)) return tz_zone_name(tz_db_get(tz, iana));
    /* The longest tail after a '/' that names a zone: vendor prefixes. */
    for (const char *p = strchr(tzid, '/'); p; p = strchr(p + 1, '/'))
        if (p[1] && (z = tz_db_get(tz, p + 1))) return tz_zone_name(z);
    const char *disp = after_offset_prefix(tzid);
    if (disp)
        for (size_t i = 0; i < sizeof display_names / sizeof display_names[0]; i++)
            if (strcasecmp(disp, display_names[i].display) == 0 && (z = tz_db_get(tz, display_names[i].iana)))
                return tz_zone_name(z);
    return NULL;
}
