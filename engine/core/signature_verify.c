/*
 * signature_verify.c — verification of inbound webhook signatures, for any
 * row of the preset table (signature.c) or a spec written in the config.
 *
 * Every scheme reduces to one plan (struct sig_spec, see signature.h): the
 * text that holds the candidate signatures (a header, or a JSON field), a
 * tokenizer that yields each candidate after its prefix, decoded from hex or
 * base64; optionally a timestamp (a header, an element of the signature
 * header, or a JSON field) to hold against the tolerance; and a template
 * that renders the signed bytes from the body, the timestamp, the URL, the
 * method, named headers, JSON fields and Twilio's sorted form fields.
 * sig_verify() refuses a request without a single usable candidate as
 * malformed, renders the signed content once, computes the MAC once per
 * configured key (key rotation) and compares it with every candidate using
 * CRYPTO_memcmp on the raw bytes; a shared token is compared through its
 * SHA-256 (so neither its bytes nor its length leak through timing); a
 * public-key scheme hands the content and each candidate to the algorithm
 * of signature_pk.c. Header text is never copied into error messages; only
 * names, counts and clock differences are. The rendering lives in
 * signature_content.c, the MAC and the keys in signature_mac.c.
 */
#include "signature_internal.h"

#include "encoding.h"
#include "errbuf.h"
#include "xmalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>
#include <openssl/crypto.h>

/* Timestamps have at most this many digits: enough for any real clock and
 * far from int64 overflow, so arithmetic on them needs no checks. */
#define TIMESTAMP_MAX_DIGITS 18
/* Candidates looked at per request; more is an attack, not key rotation. */
#define MAX_CANDIDATES 16

/* ---- candidates ------------------------------------------------------------ */

/* Separators between candidates of a multiple-signature header: ',', ';'
 * and ' ', less those the prefix contains (Standard Webhooks' "v1,"). */
static void candidate_separators(const struct sig_spec *spec, char seps[4])
{
    size_t n = 0;

    if (spec->separators != NULL) {
        for (; n < 3 && spec->separators[n]; n++)
            seps[n] = spec->separators[n];
        seps[n] = '\0';
        return;
    }
    for (const char *c = ",; "; *c; c++)
        if (spec->signature_prefix == NULL || strchr(spec->signature_prefix, *c) == NULL)
            seps[n++] = *c;
    seps[n] = '\0';
}

/* Decodes one candidate's text per the spec's encoding into out (of
 * SIG_MAX_SIG_LEN bytes); 1 if it is a usable candidate. HMACs must have
 * their exact length; a token is its text; a public-key signature any
 * length that fits. */
static int decode_candidate(const struct sig_spec *spec, struct sig_span s, unsigned char *out, size_t *outlen)
{
    size_t want = sig_alg_mac_len(spec->alg), n = 0;
    enum sig_encoding enc = spec->encoding;

    if (spec->alg == SIG_ALG_TOKEN || enc == SIG_ENC_RAW) {
        /* The token is compared through its digest, whatever its length. */
        sig_content_digest((const unsigned char *)s.p, s.n, out);
        *outlen = SIG_DIGEST_LEN;
        return s.n > 0;
    }
    if (enc == SIG_ENC_HEX_OR_BASE64)
        enc = want > 0 && s.n == ENC_HEX_LEN(want) ? SIG_ENC_HEX : SIG_ENC_BASE64;
    if (enc == SIG_ENC_HEX) {
        if (s.n % 2 != 0 || s.n / 2 > SIG_MAX_SIG_LEN || enc_hex_decode(s.p, s.n, out, SIG_MAX_SIG_LEN, &n) != 0)
            return 0;
    } else if (enc_base64_decode(s.p, s.n, out, SIG_MAX_SIG_LEN, &n) != 0) {
        return 0;
    }
    if (n == 0 || (want > 0 && n != want))
        return 0;
    *outlen = n;
    return 1;
}

/* The next usable candidate of *rest (advanced past it); 0 when none is
 * left. */
static int next_candidate(const struct sig_spec *spec, struct sig_span *rest, unsigned char *out, size_t *outlen)
{
    char seps[4];
    struct sig_span tok;

    if (!spec->multiple) {
        tok = sig_span_trim(*rest);
        rest->n = 0;
        if (tok.n == 0)
            return 0;
        if (!sig_span_strip_prefix(&tok, spec->signature_prefix) && !spec->prefix_optional)
            return 0;
        return decode_candidate(spec, tok, out, outlen);
    }
    candidate_separators(spec, seps);
    while (sig_span_next_token(rest, seps, &tok)) {
        if (!sig_span_strip_prefix(&tok, spec->signature_prefix) && !spec->prefix_optional)
            continue;
        if (decode_candidate(spec, tok, out, outlen))
            return 1;
    }
    return 0;
}

static size_t count_candidates(const struct sig_spec *spec, struct sig_span sigs)
{
    unsigned char scratch[SIG_MAX_SIG_LEN];
    size_t n = 0, len;

    while (n < MAX_CANDIDATES && next_candidate(spec, &sigs, scratch, &len))
        n++;
    OPENSSL_cleanse(scratch, sizeof scratch);
    return n;
}

static int has_candidate(const struct sig_spec *spec, struct sig_span sigs)
{
    unsigned char scratch[SIG_MAX_SIG_LEN];
    size_t len;
    int found = next_candidate(spec, &sigs, scratch, &len);

    OPENSSL_cleanse(scratch, sizeof scratch);
    return found;
}

/* "sha256=<64 hex digits>", "<base64 of 32 bytes>", for messages. */
static void describe_candidate(const struct sig_spec *spec, char *out, size_t outlen)
{
    size_t want = sig_alg_mac_len(spec->alg);
    const char *prefix = spec->signature_prefix != NULL ? spec->signature_prefix : "";
    const char *opt = spec->prefix_optional ? "optional " : "";

    switch (spec->encoding) {
    case SIG_ENC_HEX:
        if (want > 0)
            snprintf(out, outlen, "%s%s<%zu hex digits>", opt, prefix, ENC_HEX_LEN(want));
        else
            snprintf(out, outlen, "%s%s<hex>", opt, prefix);
        return;
    case SIG_ENC_BASE64:
        if (want > 0)
            snprintf(out, outlen, "%s%s<base64 of %zu bytes>", opt, prefix, want);
        else
            snprintf(out, outlen, "%s%s<base64>", opt, prefix);
        return;
    case SIG_ENC_HEX_OR_BASE64:
        snprintf(out, outlen, "%s%s<%zu hex digits or base64 of %zu bytes>", opt, prefix, ENC_HEX_LEN(want), want);
        return;
    case SIG_ENC_RAW: snprintf(out, outlen, "the shared token"); return;
    }
    snprintf(out, outlen, "?");
}

/* ---- timestamps ------------------------------------------------------------ */

/* Decimal digits only; -1 if s is anything else. */
static int parse_decimal(struct sig_span s, int64_t *out)
{
    int64_t v = 0;

    if (s.n == 0 || s.n > TIMESTAMP_MAX_DIGITS)
        return -1;
    for (size_t i = 0; i < s.n; i++) {
        if (s.p[i] < '0' || s.p[i] > '9')
            return -1;
        v = v * 10 + (s.p[i] - '0');
    }
    *out = v;
    return 0;
}

static int digits(const char *p, int n, int *out)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 0;
}

/* RFC 3339 ("2019-11-16T09:11:12.634234626Z", "…+01:00") to unix seconds
 * (the fraction is dropped); -1 for anything else. */
static int parse_rfc3339(struct sig_span s, int64_t *out)
{
    char text[64];
    int year, mon, day, hour, min, sec, oh = 0, om = 0, sign = 0;
    size_t i = 19;
    struct tm tm;

    if (s.n < 20 || s.n >= sizeof text)
        return -1;
    memcpy(text, s.p, s.n);
    text[s.n] = '\0';
    if (digits(text, 4, &year) || text[4] != '-' || digits(text + 5, 2, &mon) || text[7] != '-' ||
        digits(text + 8, 2, &day) || (text[10] != 'T' && text[10] != 't' && text[10] != ' ') ||
        digits(text + 11, 2, &hour) || text[13] != ':' || digits(text + 14, 2, &min) || text[16] != ':' ||
        digits(text + 17, 2, &sec))
        return -1;
    if (text[i] == '.') {
        i++;
        if (text[i] < '0' || text[i] > '9')
            return -1;
        while (text[i] >= '0' && text[i] <= '9')
            i++;
    }
    if ((text[i] == 'Z' || text[i] == 'z') && text[i + 1] == '\0') {
        sign = 0;
    } else if ((text[i] == '+' || text[i] == '-') && s.n == i + 6 && !digits(text + i + 1, 2, &oh) &&
               text[i + 3] == ':' && !digits(text + i + 4, 2, &om)) {
        sign = text[i] == '+' ? 1 : -1;
    } else {
        return -1;
    }
    if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60 || oh > 23 || om > 59)
        return -1;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = year - 1900;
    tm.tm_mon = mon - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = min;
    tm.tm_sec = sec;
    *out = (int64_t)timegm(&tm) - sign * (int64_t)(oh * 3600 + om * 60);
    return 0;
}

/* ---- one verification ------------------------------------------------------ */

#define TS_LABEL(st) (st)->tl[0], (st)->tl[1], (st)->tl[2]

/* Why st->sigs holds no usable candidate. */
static void malformed_message(const struct sig_verify_state *st, char *err, size_t errlen)
{
    const struct sig_spec *spec = st->spec;
    const char *prefix = spec->signature_prefix;
    char want[96], seps[4];
    struct sig_span rest = st->sigs, tok;
    size_t with_prefix = 0;

    describe_candidate(spec, want, sizeof want);
    if (!spec->multiple || prefix == NULL || prefix[0] == '\0' || spec->prefix_optional) {
        err_set(err, errlen, "%s is not %s (%zu characters)", st->sig_label, want, st->sigs.n);
        return;
    }
    candidate_separators(spec, seps);
    while (sig_span_next_token(&rest, seps, &tok))
        if (sig_span_strip_prefix(&tok, prefix))
            with_prefix++;
    if (with_prefix == 0)
        err_set(err, errlen, "%s has no %s element", st->sig_label, prefix);
    else {
        struct sig_spec bare = *spec;

        bare.signature_prefix = NULL;
        describe_candidate(&bare, want, sizeof want); /* "<64 hex digits>" */
        want[strlen(want) - 1] = '\0';
        err_set(err, errlen, "%s has %zu %s element%s but none is %s", st->sig_label, with_prefix, prefix,
                with_prefix == 1 ? "" : "s", want + 1);
    }
}

/* The candidates' text: the signature header or JSON field. */
static enum sig_result find_signatures(struct sig_verify_state *st, char *err, size_t errlen)
{
    const struct sig_spec *spec = st->spec;
    const char *header = spec->signature_header;
    enum sig_result r;

    if (spec->signature_json != NULL) {
        snprintf(st->sig_label_buf, sizeof st->sig_label_buf, "json:%s", spec->signature_json);
        st->sig_label = st->sig_label_buf;
        if ((r = sig_request_json(st, spec->signature_json, st->json_sig, sizeof st->json_sig, err, errlen)) != SIG_OK)
            return r;
        st->sigs = sig_span_of(st->json_sig);
    } else {
        if (header == NULL)
            header = st->params->header_name;
        if (header == NULL || header[0] == '\0') {
            err_set(err, errlen, "%s needs the name of the signature header in the config",
                    sig_scheme_name(st->params->scheme));
            return SIG_MISSING_HEADER;
        }
        st->sig_label = header;
        if ((r = sig_request_header(st->req, header, &st->sigs, err, errlen)) != SIG_OK)
            return r;
    }
    if (!has_candidate(spec, st->sigs)) {
        malformed_message(st, err, errlen);
        return SIG_MALFORMED_HEADER;
    }
    return SIG_OK;
}

/* The timestamp's text: its own header, an element of the signature
 * header, or a JSON field. */
static enum sig_result find_timestamp_text(struct sig_verify_state *st, struct sig_span *text, char *json_buf,
                                           size_t json_len, char *err, size_t errlen)
{
    const struct sig_spec *spec = st->spec;
    const char *th = spec->timestamp_header;

    if (spec->timestamp_json != NULL) {
        st->tl[0] = "json:", st->tl[1] = spec->timestamp_json, st->tl[2] = "";
        enum sig_result r = sig_request_json(st, spec->timestamp_json, json_buf, json_len, err, errlen);
        if (r == SIG_OK) /* on an error json_buf was never written */
            *text = sig_span_of(json_buf);
        return r;
    }
    if (spec->timestamp_prefix != NULL && spec->timestamp_prefix[0] != '\0') {
        struct sig_span rest, tok, value = {NULL, 0};
        size_t count = 0;
        enum sig_result r = sig_request_header(st->req, th, &rest, err, errlen);

        st->tl[0] = th, st->tl[1] = " ", st->tl[2] = spec->timestamp_prefix;
        if (r != SIG_OK)
            return r;
        char seps[4];

        candidate_separators(spec, seps);
        while (sig_span_next_token(&rest, seps, &tok))
            if (sig_span_strip_prefix(&tok, spec->timestamp_prefix)) {
                value = tok;
                count++;
            }
        if (count != 1) {
            if (count == 0)
                err_set(err, errlen, "%s has no %s element", th, spec->timestamp_prefix);
            else
                err_set(err, errlen, "%s has %zu %s elements, expected one", th, count, spec->timestamp_prefix);
            return SIG_MALFORMED_HEADER;
        }
        *text = value;
        return SIG_OK;
    }
    st->tl[0] = th, st->tl[1] = st->tl[2] = "";
    return sig_request_header(st->req, th, text, err, errlen);
}

static enum sig_result find_timestamp(struct sig_verify_state *st, char *err, size_t errlen)
{
    const struct sig_spec *spec = st->spec;
    char json_buf[64];
    struct sig_span text;
    int64_t v;
    enum sig_result r;

    if (spec->timestamp_header == NULL && spec->timestamp_json == NULL)
        return SIG_OK;
    if ((r = find_timestamp_text(st, &text, json_buf, sizeof json_buf, err, errlen)) != SIG_OK)
        return r;
    switch (spec->timestamp_format) {
    case SIG_TS_UNIX:
    case SIG_TS_UNIX_MS:
        if (parse_decimal(text, &v) < 0) {
            err_set(err, errlen, "%s%s%s is not a decimal unix time%s (%zu characters)", TS_LABEL(st),
                    spec->timestamp_format == SIG_TS_UNIX_MS ? " in milliseconds" : "", text.n);
            return SIG_MALFORMED_HEADER;
        }
        /* The SDKs sign the timestamp re-formatted from its parsed value. */
        snprintf(st->ts_text, sizeof st->ts_text, "%" PRId64, v);
        st->ts = spec->timestamp_format == SIG_TS_UNIX_MS ? v / 1000 : v;
        break;
    case SIG_TS_RFC3339:
        if (text.n >= sizeof st->ts_text || parse_rfc3339(text, &st->ts) < 0) {
            err_set(err, errlen, "%s%s%s is not an RFC 3339 time (%zu characters)", TS_LABEL(st), text.n);
            return SIG_MALFORMED_HEADER;
        }
        memcpy(st->ts_text, text.p, text.n);
        st->ts_text[text.n] = '\0';
        break;
    }
    st->has_ts = 1;
    return SIG_OK;
}

/* ---- verification ---------------------------------------------------------- */

/* 1 if some key's signature over the content equals (or verifies) some
 * candidate, 0 if none does, -1 if it could not be computed. */
static int match_any_key(struct sig_verify_state *st)
{
    const struct sig_spec *spec = st->spec;
    const struct sig_params *params = st->params;
    const struct sig_pk_ops *pk = spec->alg == SIG_ALG_PUBLIC_KEY ? sig_pk_ops_for(spec->pk) : NULL;
    unsigned char expected[SIG_MAX_SIG_LEN], got[SIG_MAX_SIG_LEN];
    size_t elen = 0, glen = 0;
    struct sig_span parts[SIG_MAX_SEGS];
    unsigned char *owned = NULL;
    const unsigned char *whole = NULL;
    size_t whole_len = 0;
    int found = 0;

    if (spec->alg == SIG_ALG_PUBLIC_KEY && (pk == NULL || pk->verify == NULL))
        return -1;
    for (size_t i = 0; i < st->nsegs; i++)
        parts[i] = sig_seg_span(st, i);
    if (pk != NULL)
        whole = sig_content_whole(st, &whole_len, &owned);
    for (size_t k = 0; k < params->nkeys && found == 0; k++) {
        struct sig_span rest = st->sigs;
        size_t seen = 0;

        if (spec->alg == SIG_ALG_TOKEN) {
            sig_content_digest(params->keys[k].bytes, params->keys[k].len, expected);
            elen = SIG_DIGEST_LEN;
        } else if (spec->alg != SIG_ALG_PUBLIC_KEY &&
                   sig_hmac_parts(spec->alg, &params->keys[k], parts, st->nsegs, expected, &elen) < 0) {
            found = -1;
            break;
        }
        /* Every candidate is compared in constant time; stopping at a match
         * reveals only that the request is authentic. */
        while (found == 0 && seen++ < MAX_CANDIDATES && next_candidate(spec, &rest, got, &glen)) {
            if (pk != NULL) {
                int v = pk->verify(&params->keys[k], whole, whole_len, got, glen);
                found = v < 0 ? -1 : v;
            } else if (glen == elen && CRYPTO_memcmp(expected, got, elen) == 0) {
                found = 1;
            }
        }
    }
    OPENSSL_cleanse(expected, sizeof expected);
    OPENSSL_cleanse(got, sizeof got);
    free(owned);
    return found;
}

static enum sig_result check_timestamp(const struct sig_verify_state *st, int64_t now, int64_t tolerance, char *err,
                                       size_t errlen)
{
    int64_t age;

    if (tolerance < 0) {
        err_set(err, errlen, "%s%s%s cannot be checked: tolerance is negative (%" PRId64 "s)", TS_LABEL(st),
                tolerance);
        return SIG_TIMESTAMP_OUT_OF_TOLERANCE;
    }
    /* st->ts is below 10^18, so only an absurd `now` can overflow; the
     * INT64_MIN case is excluded so that -age below is defined. */
    if (__builtin_sub_overflow(now, st->ts, &age) || age == INT64_MIN) {
        err_set(err, errlen, "%s%s%s is out of range of the current time", TS_LABEL(st));
        return SIG_TIMESTAMP_OUT_OF_TOLERANCE;
    }
    if (age > tolerance) {
        err_set(err, errlen, "%s%s%s is %" PRId64 "s in the past (tolerance %" PRId64 "s)", TS_LABEL(st), age,
                tolerance);
        return SIG_TIMESTAMP_OUT_OF_TOLERANCE;
    }
    if (age < -tolerance) {
        err_set(err, errlen, "%s%s%s is %" PRId64 "s in the future (tolerance %" PRId64 "s)", TS_LABEL(st), -age,
                tolerance);
        return SIG_TIMESTAMP_OUT_OF_TOLERANCE;
    }
    return SIG_OK;
}

/* Twilio's JSON variant: the signed URL carries bodySHA256=<hex>, which
 * must be the SHA-256 of the body. A form body is signed field by field;
 * any other body needs bodySHA256, else nothing signs it (as twilio-node's
 * validateRequestWithBody). */
static enum sig_result check_body_sha256(const struct sig_request *req, char *err, size_t errlen)
{
    const char *q = req->url != NULL ? strchr(req->url, '?') : NULL;
    unsigned char d[SIG_DIGEST_LEN], want[SIG_DIGEST_LEN];
    struct sig_span rest, tok;
    size_t n = 0;

    if (req->body_len == 0 || sig_is_form_type(req->content_type))
        return SIG_OK;
    rest = q != NULL ? sig_span_of(q + 1) : sig_span_of(NULL);
    while (sig_span_next_token(&rest, "&#", &tok)) {
        if (!sig_span_strip_prefix(&tok, "bodySHA256="))
            continue;
        sig_content_digest(req->body, req->body_len, d);
        if (tok.n != ENC_HEX_LEN(SIG_DIGEST_LEN) || enc_hex_decode(tok.p, tok.n, want, sizeof want, &n) != 0 ||
            n != SIG_DIGEST_LEN || CRYPTO_memcmp(d, want, SIG_DIGEST_LEN) != 0) {
            err_set(err, errlen, "the body's SHA-256 is not the signed URL's bodySHA256");
            return SIG_MISMATCH;
        }
        return SIG_OK;
    }
    err_set(err, errlen, "the signed URL has no bodySHA256, so the body is not signed");
    return SIG_MISMATCH;
}

/* url with its authority's port removed, or the scheme's default port
 * (https 443, http 80) added; NULL if url is not scheme://authority…
 * Caller frees. */
static char *url_port_variant(const char *url)
{
    const char *sep = strstr(url, "://"), *auth, *end, *colon = NULL, *p;
    bool https;
    char *out;

    if (sep == NULL)
        return NULL;
    https = (size_t)(sep - url) == 5 && strncasecmp(url, "https", 5) == 0;
    if (!https && !((size_t)(sep - url) == 4 && strncasecmp(url, "http", 4) == 0))
        return NULL;
    auth = sep + 3;
    end = auth + strcspn(auth, "/?#");
    for (p = auth; p < end; p++) {
        if (*p == '@')
            colon = NULL, auth = p + 1; /* user info: the port comes after it */
        else if (*p == ']')
            colon = NULL;
        else if (*p == ':')
            colon = p;
    }
    if (colon != NULL) {
        out = xmalloc(strlen(url) + 1);
        memcpy(out, url, (size_t)(colon - url));
        strcpy(out + (colon - url), end);
        return out;
    }
    out = xmalloc(strlen(url) + 5);
    memcpy(out, url, (size_t)(end - url));
    strcpy(out + (end - url), https ? ":443" : ":80");
    strcat(out, end);
    return out;
}

/* Twilio: the signed content again with the URL's other port form; 1 if
 * it matches (st->req then points to *alt, whose url the caller frees). */
static int match_port_variant(struct sig_verify_state *st, struct sig_request *alt, char *err, size_t errlen)
{
    char *url = st->req->url != NULL ? url_port_variant(st->req->url) : NULL;

    if (url == NULL)
        return 0;
    *alt = *st->req;
    alt->url = url;
    st->req = alt;
    sig_buf_free(&st->content);
    st->nsegs = 0;
    if (sig_render_content(st, err, errlen) != SIG_OK)
        return 0;
    return match_any_key(st) == 1;
}

static enum sig_result verify_state_run(struct sig_verify_state *st, char *err, size_t errlen)
{
    enum sig_result r;
    int found;

    if ((r = find_timestamp(st, err, errlen)) != SIG_OK || (r = find_signatures(st, err, errlen)) != SIG_OK ||
        (r = sig_render_content(st, err, errlen)) != SIG_OK)
        return r;
    found = match_any_key(st);
    if (found == 0 && st->spec->url_port_variants)
        found = match_port_variant(st, &st->alt_req, err, errlen);
    if (found < 0) {
        err_set(err, errlen, "%s could not be computed (%s)", sig_alg_label(st->spec->alg),
                st->spec->alg == SIG_ALG_PUBLIC_KEY ? "the algorithm is not available or failed" : "OpenSSL error");
        return SIG_MISMATCH;
    }
    if (!found) {
        size_t ncand = count_candidates(st->spec, st->sigs);

        err_set(err, errlen, "no signature in %s matches the request (%zu candidate%s, %zu key%s)", st->sig_label,
                ncand, ncand == 1 ? "" : "s", st->params->nkeys, st->params->nkeys == 1 ? "" : "s");
        return SIG_MISMATCH;
    }
    if (st->spec->body_sha256_query && (r = check_body_sha256(st->req, err, errlen)) != SIG_OK)
        return r;
    if (st->has_ts)
        return check_timestamp(st, st->req->now, st->params->tolerance_s, err, errlen);
    return SIG_OK;
}

/* Twilio's X-Twilio-Webhooks-Signature-Settings: `algorithm=HMAC_SHA256`
 * selects SHA-256 (into *eff, which st->spec then points to). */
static enum sig_result apply_algorithm_header(struct sig_verify_state *st, struct sig_spec *eff, char *err,
                                              size_t errlen)
{
    const char *v = st->req->header != NULL ? st->req->header(st->req->header_arg, st->spec->algorithm_header) : NULL;
    struct sig_span rest = sig_span_of(v), tok;

    while (v != NULL && sig_span_next_token(&rest, ",", &tok)) {
        if (!sig_span_strip_prefix(&tok, "algorithm="))
            continue;
        tok = sig_span_trim(tok);
        *eff = *st->spec;
        if (tok.n == 11 && strncasecmp(tok.p, "HMAC_SHA256", 11) == 0)
            eff->alg = SIG_ALG_HMAC_SHA256;
        else if (tok.n == 9 && strncasecmp(tok.p, "HMAC_SHA1", 9) == 0)
            eff->alg = SIG_ALG_HMAC_SHA1;
        else if (tok.n > 0) {
            err_set(err, errlen, "%s names an algorithm hookd does not know", st->spec->algorithm_header);
            return SIG_MALFORMED_HEADER;
        }
        st->spec = eff;
        return SIG_OK;
    }
    return SIG_OK;
}

/* A request whose headers are read through sig_spec_header(). */
struct aliased {
    const struct sig_request *req;
    const struct sig_spec *spec;
};

static const char *aliased_header(void *arg, const char *name)
{
    const struct aliased *a = arg;
    return sig_spec_header(a->spec, a->req->header, a->req->header_arg, name);
}

enum sig_result sig_verify_digest(const struct sig_params *params, const struct sig_request *req,
                                  unsigned char digest[SIG_DIGEST_LEN], char *err, size_t errlen)
{
    struct sig_verify_state st;
    struct aliased alias;
    struct sig_request aliased_req;
    struct sig_spec eff;
    enum sig_result r;

    err_set(err, errlen, "%s", "");
    if (params == NULL || req == NULL || (req->body == NULL && req->body_len > 0)) {
        err_set(err, errlen, "signature verification called without a request or parameters");
        return SIG_MISMATCH;
    }
    if (params->keys == NULL || params->nkeys == 0) {
        err_set(err, errlen, "no signing secret is configured, so nothing can be verified");
        return SIG_MISMATCH;
    }
    memset(&st, 0, sizeof st);
    st.params = params;
    st.req = req;
    st.spec = params->spec;
    if (st.spec == NULL) {
        const struct sig_preset *p = sig_preset_get(params->scheme);

        if (p == NULL || params->scheme == SIG_HMAC) {
            err_set(err, errlen, "unknown signature scheme %d", (int)params->scheme);
            return SIG_MISMATCH;
        }
        st.spec = &p->spec;
    }
    if (st.spec->alias_of != NULL && req->header != NULL) {
        alias = (struct aliased){req, st.spec};
        aliased_req = *req;
        aliased_req.header = aliased_header;
        aliased_req.header_arg = &alias;
        st.req = &aliased_req;
    }
    if (st.spec->algorithm_header != NULL && (r = apply_algorithm_header(&st, &eff, err, errlen)) != SIG_OK)
        return r;
    r = verify_state_run(&st, err, errlen);
    if (r == SIG_OK && digest != NULL)
        sig_event_digest(&st, digest);
    json_decref(st.doc);
    sig_buf_free(&st.content);
    free((char *)st.alt_req.url);
    if (st.json_sig[0] != '\0')
        OPENSSL_cleanse(st.json_sig, sizeof st.json_sig);
    return r;
}

enum sig_result sig_verify(const struct sig_params *params, const struct sig_request *req, char *err, size_t errlen)
{
    return sig_verify_digest(params, req, NULL, err, errlen);
}

const char *sig_result_name(enum sig_result result)
{
    switch (result) {
    case SIG_OK: return "ok";
    case SIG_MISSING_HEADER: return "missing_header";
    case SIG_MALFORMED_HEADER: return "malformed_header";
    case SIG_MISMATCH: return "bad_signature";
    case SIG_TIMESTAMP_OUT_OF_TOLERANCE: return "timestamp_out_of_tolerance";
    }
    return "invalid";
}
