/* The API's ids of UUIDs; see api_id.h. */
#include "api_id.h"

#include "encoding.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rand.h"
#include "xmalloc.h"

static const char api_id_alphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/* The 16 bytes of a UUID's text form (32 hex digits, dashes anywhere
 * ignored): 0, or -1 when uuid is not one. */
static int uuid_bytes(const char *uuid, unsigned char b[16])
{
    int nibbles = 0;
    for (const char *p = uuid; *p; p++) {
        if (*p == '-')
            continue;
        int v = enc_hex_value(*p);
        if (v < 0 || nibbles == 32)
            return -1;
        b[nibbles / 2] = (unsigned char)(nibbles % 2 ? (b[nibbles / 2] << 4) | v : v);
        nibbles++;
    }
    return nibbles == 32 ? 0 : -1;
}

/* ndigits base62 digits of the big-endian number num[0..n), zero-padded on
 * the left; num is consumed (divided down to zero). */
static void b62_encode(unsigned char *num, size_t n, char *digits, size_t ndigits)
{
    for (size_t d = ndigits; d-- > 0;) { /* the number divided by 62, the remainder a digit */
        unsigned rem = 0;
        for (size_t i = 0; i < n; i++) {
            unsigned cur = (rem << 8) | num[i];
            num[i] = (unsigned char)(cur / 62);
            rem = cur % 62;
        }
        digits[d] = api_id_alphabet[rem];
    }
}

/* The big-endian number num[0..n) of ndigits base62 digits: 0, or -1 for a
 * character outside the alphabet or a number of more than n bytes. */
static int b62_decode(const char *digits, size_t ndigits, unsigned char *num, size_t n)
{
    memset(num, 0, n);
    for (size_t d = 0; d < ndigits; d++) {
        const char *at = digits[d] ? strchr(api_id_alphabet, digits[d]) : NULL;
        if (!at)
            return -1;
        unsigned carry = (unsigned)(at - api_id_alphabet);
        for (size_t i = n; i-- > 0;) {
            unsigned cur = num[i] * 62u + carry;
            num[i] = (unsigned char)(cur & 0xff);
            carry = cur >> 8;
        }
        if (carry)
            return -1;
    }
    return 0;
}

/* The seconds since the KSUID epoch that an id of this UUID carries: a
 * version 7 UUID's clock, clamped to 32 bits; 0 for other versions (their
 * bits tell no time). */
static uint32_t uuid_ksuid_seconds(const unsigned char b[16])
{
    if (b[6] >> 4 != 7)
        return 0;
    int64_t ms = 0;
    for (int i = 0; i < 6; i++)
        ms = (ms << 8) | b[i];
    int64_t s = ms / 1000 - API_ID_KSUID_EPOCH;
    return s < 0 ? 0 : s > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)s;
}

/* prefix "_" and the digits into out, when it holds them and a NUL. */
static int write_id(const char *prefix, unsigned char *num, size_t n, size_t ndigits, char *out, size_t outlen)
{
    size_t plen = strlen(prefix);
    if (outlen < plen + 1 + ndigits + 1)
        return -1;
    memcpy(out, prefix, plen);
    out[plen] = '_';
    b62_encode(num, n, out + plen + 1, ndigits);
    out[plen + 1 + ndigits] = '\0';
    return 0;
}

int api_id_of_uuid(const char *prefix, const char *uuid, char *out, size_t outlen)
{
    unsigned char k[API_ID_KSUID_BYTES];
    if (uuid_bytes(uuid, k + 4) != 0)
        return -1;
    uint32_t s = uuid_ksuid_seconds(k + 4);
    for (int i = 0; i < 4; i++)
        k[i] = (unsigned char)(s >> (8 * (3 - i)));
    return write_id(prefix, k, sizeof k, API_ID_DIGITS, out, outlen);
}

int api_id_legacy_of_uuid(const char *prefix, const char *uuid, char *out, size_t outlen)
{
    unsigned char b[16];
    if (uuid_bytes(uuid, b) != 0)
        return -1;
    return write_id(prefix, b, sizeof b, API_ID_LEGACY_DIGITS, out, outlen);
}

/* The UUID's text form of 16 bytes into out (37 bytes). */
static void uuid_text(const unsigned char b[16], char out[37])
{
    char hex[ENC_HEX_LEN(16) + 1];
    HOOKD_ASSERT(enc_hex_encode(b, 16, hex, sizeof hex) == 0);
    size_t o = 0;
    for (size_t i = 0; i < ENC_HEX_LEN(16); i++) {
        if (i == 8 || i == 12 || i == 16 || i == 20)
            out[o++] = '-';
        out[o++] = hex[i];
    }
    out[o] = '\0';
}

int api_id_to_uuid(const char *prefix, const char *id, char out[37])
{
    size_t plen = strlen(prefix), dlen;
    if (strncmp(id, prefix, plen) != 0 || id[plen] != '_')
        return -1;
    const char *digits = id + plen + 1;
    dlen = strlen(digits);
    unsigned char k[API_ID_KSUID_BYTES];
    if (dlen == API_ID_DIGITS) {
        if (b62_decode(digits, dlen, k, sizeof k) != 0)
            return -1;
        uint32_t s = (uint32_t)k[0] << 24 | (uint32_t)k[1] << 16 | (uint32_t)k[2] << 8 | k[3];
        if (s != uuid_ksuid_seconds(k + 4)) /* not an id hookd made: one UUID, one id */
            return -1;
    } else if (dlen != API_ID_LEGACY_DIGITS || b62_decode(digits, dlen, k + 4, 16) != 0) {
        return -1;
    }
    uuid_text(k + 4, out);
    return 0;
}

void api_id_uuid7(int64_t ms, const unsigned char rnd[10], char out[37])
{
    api_id_uuid(ms, 7, rnd, out);
}

void api_id_uuid(int64_t ms, int version, const unsigned char rnd[10], char out[37])
{
    unsigned char b[16];
    for (int i = 0; i < 6; i++)
        b[i] = (unsigned char)((uint64_t)ms >> (8 * (5 - i)));
    memcpy(b + 6, rnd, 10);
    b[6] = (unsigned char)((b[6] & 0x0f) | (version << 4));
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 9562 variant */
    uuid_text(b, out);
}

int api_id_uuid7_ms(const char *uuid, int64_t *ms)
{
    if (strlen(uuid) != 36 || uuid[14] != '7')
        return -1;
    int64_t v = 0;
    int n = 0;
    for (const char *c = uuid; *c && n < 12; c++) {
        if (*c == '-')
            continue;
        int d = enc_hex_value(*c);
        if (d < 0)
            return -1;
        v = v * 16 + d;
        n++;
    }
    *ms = v;
    return 0;
}

int api_id_batch_init(struct api_id_batch *b, size_t n, int64_t ms)
{
    b->rnd = xmalloc(10 * n + 1);
    b->n = n;
    b->ms = ms;
    if (rand_bytes(b->rnd, 10 * n) != 0) {
        free(b->rnd);
        b->rnd = NULL;
        return -1;
    }
    return 0;
}

void api_id_batch_uuid(const struct api_id_batch *b, size_t i, const char *like, char out[37])
{
    HOOKD_ASSERT(i < b->n);
    int64_t ms = b->ms;
    if (like && api_id_uuid7_ms(like, &ms) != 0)
        api_id_uuid(b->ms, 4, b->rnd + 10 * i, out);
    else
        api_id_uuid7(ms, b->rnd + 10 * i, out);
}

void api_id_batch_release(struct api_id_batch *b)
{
    free(b->rnd);
    b->rnd = NULL;
    b->n = 0;
}
