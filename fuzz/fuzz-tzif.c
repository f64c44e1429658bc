/* fuzz-tzif.c -- arbitrary bytes through the TZif parser, then lookups on
 * whatever it accepts (the footer rule and the local->UTC search included). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "time/tz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tz_zone *z = tz_zone_parse("Fuzz/Zone", data, size);
    if (!z) return 0;
    static const int64_t probes[] = {
        INT64_MIN, -(INT64_C(1) << 59), -INT64_C(2208988800), -1, 0, 1,
        INT64_C(1774746000), INT64_C(2147483647), INT64_C(4102444800),
        INT64_C(7258118400), INT64_C(253402300799), INT64_C(1) << 50, INT64_MAX,
    };
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        int64_t t = probes[i];
        int64_t local = tz_utc_to_local(z, t);
        (void)tz_local_to_utc(z, local);
        (void)tz_local_to_utc(z, t);
        (void)strlen(tz_abbrev_at(z, t));
    }
    tz_zone_free(z);
    return 0;
}
