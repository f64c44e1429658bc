/* users_email.c -- one address, one account: the forms an e-mail address
 * is kept in (users.h, users_email), computed with ICU.
 *
 * Unicode lets one visible address be written many ways: "école" composed
 * or as "e" plus a combining accent, "ÉCOLE", a Kelvin sign for a K, a
 * Cyrillic "о" for a Latin "o", a fullwidth letter, a zero-width space at
 * the end. Accounts were told apart by their bytes (ASCII-lowered), so
 * each was a new account that looked like an existing one in attendee
 * lists and free/busy (issue 25). Now: characters nobody can see are
 * refused; the key for uniqueness is the address in NFC, case-folded
 * (RFC 8265's approach for identifiers); and a new address whose Unicode
 * TR39 skeleton (ICU's uspoof: what the address looks like, with
 * confusable characters mapped to one prototype; taken of the NFKC
 * case-folded form) equals a registered one's is refused as a look-alike. */
#include "users/users.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/uspoof.h>
#include <unicode/ustring.h>
#include <unicode/utf16.h>

#define EMAIL_U16_MAX 1024

static USpoofChecker *spoof;
static pthread_once_t spoof_once = PTHREAD_ONCE_INIT;

/* ICU: a checker, once set up, may be used by many threads at once. */
static void spoof_open(void)
{
    UErrorCode err = U_ZERO_ERROR;
    spoof = uspoof_open(&err);
    if (U_FAILURE(err)) spoof = NULL;
}

/* A character nobody sees, or that is not text: controls, format
 * characters (zero-width space and joiners, bidi overrides, the BOM),
 * other default-ignorables (variation selectors, the Hangul filler),
 * white space, and unassigned, private-use or surrogate code points. */
static bool email_char_hidden(UChar32 c)
{
    switch (u_charType(c)) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_UNASSIGNED:
    case U_PRIVATE_USE_CHAR:
    case U_SURROGATE:
    case U_SPACE_SEPARATOR:
    case U_LINE_SEPARATOR:
    case U_PARAGRAPH_SEPARATOR:
        return true;
    default:
        return u_hasBinaryProperty(c, UCHAR_DEFAULT_IGNORABLE_CODE_POINT) ||
               u_hasBinaryProperty(c, UCHAR_WHITE_SPACE);
    }
}

static int email_why(char *why, size_t whylen, const char *msg)
{
    if (why) snprintf(why, whylen, "%s", msg);
    return USERS_INVALID;
}

/* UTF-16 of the NFC form of in; USERS_INVALID with why. */
static int email_nfc16(const char *in, UChar *out, int32_t *n, char *why, size_t whylen)
{
    UErrorCode err = U_ZERO_ERROR;
    UChar raw[EMAIL_U16_MAX];
    int32_t rn = 0;
    u_strFromUTF8(raw, EMAIL_U16_MAX, &rn, in, -1, &err);
    if (U_FAILURE(err)) return email_why(why, whylen, "email is not valid UTF-8");
    for (int32_t i = 0; i < rn;) {
        UChar32 c;
        U16_NEXT(raw, i, rn, c);
        if (!email_char_hidden(c)) continue;
        if (why) snprintf(why, whylen, "email must not contain invisible or control characters (U+%04X)", (unsigned)c);
        return USERS_INVALID;
    }
    const UNormalizer2 *nfc = unorm2_getNFCInstance(&err);
    *n = U_SUCCESS(err) ? unorm2_normalize(nfc, raw, rn, out, EMAIL_U16_MAX, &err) : 0;
    return U_SUCCESS(err) ? 0 : email_why(why, whylen, "email is too long");
}

static int email_utf8(const UChar *s, int32_t n, char *out, size_t size)
{
    UErrorCode err = U_ZERO_ERROR;
    int32_t len = 0;
    u_strToUTF8(out, (int32_t)size, &len, s, n, &err);
    return U_SUCCESS(err) && err != U_STRING_NOT_TERMINATED_WARNING && (size_t)len < size ? 0 : -1;
}

/* The skeleton of the NFKC case-folded form: TR39's data leaves out
 * compatibility variants (a fullwidth "ｋ" is not listed as a "k"), which
 * NFKC maps to their plain letter first. */
static int email_skeleton(const UChar *nfc, int32_t n, users_email *out, char *why, size_t whylen)
{
    UErrorCode err = U_ZERO_ERROR;
    UChar cf[EMAIL_U16_MAX];
    char cf8[USERS_EMAIL_KEY_MAX];
    const UNormalizer2 *nfkc_cf = unorm2_getNFKCCasefoldInstance(&err);
    int32_t cn = U_SUCCESS(err) ? unorm2_normalize(nfkc_cf, nfc, n, cf, EMAIL_U16_MAX, &err) : 0;
    if (U_FAILURE(err) || email_utf8(cf, cn, cf8, sizeof cf8) != 0) return email_why(why, whylen, "email is too long");
    pthread_once(&spoof_once, spoof_open);
    if (!spoof) return USERS_ERROR;
    int32_t sn = uspoof_getSkeletonUTF8(spoof, 0, cf8, -1, out->skeleton, (int32_t)sizeof out->skeleton, &err);
    if (U_FAILURE(err) || (size_t)sn >= sizeof out->skeleton) return email_why(why, whylen, "email is too long");
    return USERS_OK;
}

int users_email_normalize(const char *in, users_email *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    if (!users_email_valid(in)) return email_why(why, whylen, "email is not a valid address");
    for (size_t i = 0; in[i]; i++) out->legacy[i] = (char)(in[i] >= 'A' && in[i] <= 'Z' ? in[i] + 32 : in[i]);
    UChar nfc[EMAIL_U16_MAX], folded[EMAIL_U16_MAX];
    int32_t n;
    if (email_nfc16(in, nfc, &n, why, whylen) != 0) return USERS_INVALID;
    UErrorCode err = U_ZERO_ERROR;
    /* Folding may leave a string that is not NFC (it can decompose). */
    UChar key16[EMAIL_U16_MAX];
    int32_t fn = u_strFoldCase(folded, EMAIL_U16_MAX, nfc, n, U_FOLD_CASE_DEFAULT, &err);
    const UNormalizer2 *norm = U_SUCCESS(err) ? unorm2_getNFCInstance(&err) : NULL;
    int32_t kn = norm ? unorm2_normalize(norm, folded, fn, key16, EMAIL_U16_MAX, &err) : 0;
    if (U_FAILURE(err) || email_utf8(nfc, n, out->nfc, sizeof out->nfc) != 0 ||
        email_utf8(key16, kn, out->key, sizeof out->key) != 0)
        return email_why(why, whylen, "email is too long once normalized");
    return email_skeleton(nfc, n, out, why, whylen);
}
