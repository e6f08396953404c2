/*
 * encoding.c — bounded hex and strict base64 for signature.c. Hex is done by
 * hand (it is a few lines and needs no int-sized lengths). Base64 uses
 * OpenSSL's EVP_EncodeBlock/EVP_DecodeBlock for the transform, but never on
 * unchecked input: EVP_DecodeBlock silently skips leading and trailing
 * whitespace, accepts '=' inside the text, and reports the length *including*
 * the zero bytes that padding stands for, and it writes those bytes too. So
 * the input is validated here first, the exact length is computed from the
 * padding, and the last 4-character group is decoded into a scratch buffer so
 * that a caller's buffer sized for the real length is never overrun.
 */
#include "encoding.h"

#include <limits.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

int enc_hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int enc_hex_encode(const unsigned char *in, size_t len, char *out, size_t outcap)
{
    static const char digits[] = "0123456789abcdef";

    if (out == NULL || (in == NULL && len > 0))
        return -1;
    /* len * 2 + 1 must not wrap, and must fit. */
    if (len > (SIZE_MAX - 1) / 2 || outcap < ENC_HEX_LEN(len) + 1)
        return -1;
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 0x0f];
    }
    out[ENC_HEX_LEN(len)] = '\0';
    return 0;
}

int enc_hex_decode(const char *in, size_t inlen, unsigned char *out, size_t outcap, size_t *outlen)
{
    if (outlen == NULL)
        return -1;
    *outlen = 0;
    if ((in == NULL && inlen > 0) || inlen % 2 != 0 || outcap < inlen / 2)
        return -1;
    if (out == NULL && inlen > 0)
        return -1;
    for (size_t i = 0; i < inlen / 2; i++) {
        int hi = enc_hex_value(in[2 * i]);
        int lo = enc_hex_value(in[2 * i + 1]);

        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    *outlen = inlen / 2;
    return 0;
}

int enc_base64_encode(const unsigned char *in, size_t len, char *out, size_t outcap)
{
    /* EVP_EncodeBlock takes and returns int: keep both in range. */
    if (out == NULL || (in == NULL && len > 0) || len > (size_t)INT_MAX / 4 * 3 - 3)
        return -1;
    if (outcap < ENC_BASE64_LEN(len) + 1)
        return -1;
    if (len == 0) {
        out[0] = '\0';
        return 0;
    }
    /* Writes exactly ENC_BASE64_LEN(len) characters plus a NUL. */
    if (EVP_EncodeBlock((unsigned char *)out, in, (int)len) != (int)ENC_BASE64_LEN(len))
        return -1;
    return 0;
}

static int is_base64_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

/* Number of trailing '=' (0..2) if in[0..inlen) is well-formed padded
 * base64, else -1. inlen is a positive multiple of 4. */
static int base64_padding(const char *in, size_t inlen)
{
    int pad = 0;

    if (in[inlen - 1] == '=') {
        pad = 1;
        if (in[inlen - 2] == '=')
            pad = 2;
    }
    for (size_t i = 0; i < inlen - (size_t)pad; i++)
        if (!is_base64_char(in[i]))
            return -1;
    return pad;
}

int enc_base64_decode(const char *in, size_t inlen, unsigned char *out, size_t outcap, size_t *outlen)
{
    unsigned char last[3];
    size_t head_chars, head_bytes, exact;
    int pad, rc = -1;

    if (outlen == NULL)
        return -1;
    *outlen = 0;
    if (inlen == 0)
        return 0;
    if (in == NULL || out == NULL || inlen % 4 != 0 || inlen > (size_t)INT_MAX)
        return -1;
    pad = base64_padding(in, inlen);
    if (pad < 0)
        return -1;
    exact = ENC_BASE64_DECODED_MAX(inlen) - (size_t)pad;
    if (outcap < exact)
        return -1;

    /* All groups but the last decode to exactly 3 bytes each, which fit in
     * out because the last group yields at least one more byte. */
    head_chars = inlen - 4;
    head_bytes = head_chars / 4 * 3;
    if (head_chars > 0 && EVP_DecodeBlock(out, (const unsigned char *)in, (int)head_chars) != (int)head_bytes)
        goto done;
    if (EVP_DecodeBlock(last, (const unsigned char *)in + head_chars, 4) != 3)
        goto done;
    memcpy(out + head_bytes, last, 3 - (size_t)pad);
    *outlen = exact;
    rc = 0;
done:
    /* The scratch group may hold secret key bytes. */
    OPENSSL_cleanse(last, sizeof last);
    return rc;
}
