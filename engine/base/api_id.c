/* The API's ids of UUIDs; see api_id.h. */
#include "api_id.h"

#include "encoding.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rand.h"
#include "xmalloc.h"

int api_id_of_uuid(const char *prefix, const char *uuid, char *out, size_t outlen)
{
    static const char alphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    uint32_t limb[4] = {0, 0, 0, 0}; /* big-endian: limb[0] the most significant */
    int nibbles = 0;
    for (const char *p = uuid; *p; p++) {
        if (*p == '-')
            continue;
        int v = enc_hex_value(*p);
        if (v < 0 || nibbles == 32)
            return -1;
        limb[nibbles / 8] = (limb[nibbles / 8] << 4) | (uint32_t)v;
        nibbles++;
    }
    size_t plen = strlen(prefix);
    if (nibbles != 32 || outlen < plen + 1 + API_ID_DIGITS + 1)
        return -1;
    memcpy(out, prefix, plen);
    out[plen] = '_';
    char *digits = out + plen + 1;
    for (int d = API_ID_DIGITS - 1; d >= 0; d--) { /* the number divided by 62, the remainder a digit */
        uint64_t rem = 0;
        for (int i = 0; i < 4; i++) {
            uint64_t cur = (rem << 32) | limb[i];
            limb[i] = (uint32_t)(cur / 62);
            rem = cur % 62;
        }
        digits[d] = alphabet[rem];
    }
    digits[API_ID_DIGITS] = '\0';
    return 0;
}

void api_id_uuid7(int64_t ms, const unsigned char rnd[10], char out[37])
{
    api_id_uuid(ms, 7, rnd, out);
}

void api_id_uuid(int64_t ms, int version, const unsigned char rnd[10], char out[37])
{
    unsigned char b[16];
    char hex[ENC_HEX_LEN(sizeof b) + 1];
    for (int i = 0; i < 6; i++)
        b[i] = (unsigned char)((uint64_t)ms >> (8 * (5 - i)));
    memcpy(b + 6, rnd, 10);
    b[6] = (unsigned char)((b[6] & 0x0f) | (version << 4));
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 9562 variant */
    HOOKD_ASSERT(enc_hex_encode(b, sizeof b, hex, sizeof hex) == 0);
    size_t o = 0;
    for (size_t i = 0; i < ENC_HEX_LEN(sizeof b); i++) {
        if (i == 8 || i == 12 || i == 16 || i == 20)
            out[o++] = '-';
        out[o++] = hex[i];
    }
    out[o] = '\0';
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
