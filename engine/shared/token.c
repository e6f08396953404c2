/* Random tokens and their digests; see token.h. The database keeps only
 * digests, so neither a backup nor a log line can open a portal or the
 * API. */
#include "token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

#include "encoding.h"
#include "rand.h"

int token_new(const char *prefix, char out[TOKEN_LEN], char sha[TOKEN_SHA_HEX])
{
    size_t plen = strlen(prefix);
    if (plen > 12)
        return -1;
    memcpy(out, prefix, plen);
    if (rand_hex(out + plen, 32) != 0)
        return -1;
    token_digest(out, sha);
    return 0;
}

int token_whsec_new(char *out, size_t outlen)
{
    unsigned char raw[24];
    if (outlen < TOKEN_WHSEC_LEN || rand_bytes(raw, sizeof raw) != 0)
        return -1;
    memcpy(out, "whsec_", 6);
    int rc = enc_base64_encode(raw, sizeof raw, out + 6, outlen - 6);
    OPENSSL_cleanse(raw, sizeof raw);
    return rc;
}

void token_digest(const char *token, char sha[TOKEN_SHA_HEX])
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)token, strlen(token), md);
    if (enc_hex_encode(md, sizeof md, sha, TOKEN_SHA_HEX) != 0)
        sha[0] = '\0';
    OPENSSL_cleanse(md, sizeof md);
}

void token_csrf(const char *session_token, char out[TOKEN_SHA_HEX])
{
    static const char label[] = "hookd-portal-csrf-v1";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    HMAC(EVP_sha256(), session_token, (int)strlen(session_token), (const unsigned char *)label, sizeof label - 1, md,
         &n);
    if (enc_hex_encode(md, n > 32 ? 32 : n, out, TOKEN_SHA_HEX) != 0)
        out[0] = '\0';
    OPENSSL_cleanse(md, sizeof md);
}

bool token_csrf_check(const char *session_token, const char *given)
{
    char want[TOKEN_SHA_HEX];
    if (!given || strlen(given) != 64)
        return false;
    token_csrf(session_token, want);
    bool ok = want[0] && CRYPTO_memcmp(want, given, 64) == 0;
    OPENSSL_cleanse(want, sizeof want);
    return ok;
}
