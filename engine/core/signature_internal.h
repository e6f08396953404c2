/*
 * signature_internal.h — what the files of the signature module share, and
 * nothing outside engine/core/signature_*.c includes. The module is one
 * public header (signature.h) over four files:
 *   - signature.c: the preset table, scheme names, and what a spec signs
 *     (it needs nothing from here);
 *   - signature_verify.c: one verification (candidates, timestamps,
 *     matching a key, the tolerance);
 *   - signature_content.c: reading the request (headers, JSON fields) and
 *     rendering the signed content from a template, plus the span and
 *     buffer helpers the rendering and the tokenizers use;
 *   - signature_mac.c: the HMAC primitive, secrets and public keys, and the
 *     outbound Standard Webhooks signature.
 * Every name here carries the module's prefix `sig_`.
 */
#ifndef HOOKD_SIGNATURE_INTERNAL_H
#define HOOKD_SIGNATURE_INTERNAL_H

#include "signature.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A JSON field read for a template or a signature: longer is refused. */
#define SIG_JSON_FIELD_MAX 1024
/* Segments of rendered signed content kept apart (a template has a few). */
#define SIG_MAX_SEGS 24

/* ---- spans and buffers (signature_content.c) ---- */

/* A borrowed byte range of a header value or of signed content. */
struct sig_span {
    const char *p;
    size_t n;
};

/* s without leading and trailing blanks and tabs. */
struct sig_span sig_span_trim(struct sig_span s);
/* The span of a NUL-terminated string (NULL: empty). */
struct sig_span sig_span_of(const char *s);
/* Strips a case-insensitive literal prefix; returns 1 if it was there. */
int sig_span_strip_prefix(struct sig_span *s, const char *prefix);
/* Splits the next token off *rest at any character of seps (trimmed);
 * empty tokens are skipped. Returns 0 when *rest holds no further token. */
int sig_span_next_token(struct sig_span *rest, const char *seps, struct sig_span *tok);

/* A growable byte buffer: the rendered signed content. */
struct sig_buf {
    unsigned char *p;
    size_t n, cap;
};

/* Appends n bytes (allocation failure aborts). */
void sig_buf_add(struct sig_buf *b, const void *data, size_t n);
/* Cleanses and frees the bytes; the buffer is empty and reusable after. */
void sig_buf_free(struct sig_buf *b);

/* ---- one verification's state ---- */

struct sig_verify_state {
    const struct sig_params *params;
    const struct sig_request *req;
    const struct sig_spec *spec;
    const char *sig_label; /* header name or "json:PATH", for messages */
    char sig_label_buf[96];
    struct sig_span sigs; /* the text holding the candidates */
    json_t *doc;          /* the body, parsed once if the spec reads JSON */
    int doc_loaded;
    char json_sig[SIG_JSON_FIELD_MAX + 1]; /* a signature read from the body */
    int has_ts;
    int64_t ts;       /* unix seconds */
    char ts_text[64]; /* {timestamp} */
    /* the timestamp's name in messages, in three pieces so that it is
     * only formatted on an error: "Stripe-Signature" " " "t=" */
    const char *tl[3];
    struct sig_request alt_req; /* Twilio's other URL form; alt_req.url owned */
    bool without_timestamp;     /* rendering for sig_event_digest() */
    /* The rendered signed bytes, as segments: the body (and any other
     * borrowed bytes) by reference, rendered text in `content`, so that
     * the body is never copied for an HMAC. */
    struct sig_buf content;
    struct sig_seg {
        const unsigned char *ext; /* borrowed bytes, or NULL: content.p + off */
        size_t off, n;
    } segs[SIG_MAX_SEGS];
    size_t nsegs;
};

/* ---- the request and the signed content (signature_content.c) ---- */

/* Fetches a required header, trimmed. Absent -> SIG_MISSING_HEADER; present
 * but blank -> SIG_MALFORMED_HEADER. */
enum sig_result sig_request_header(const struct sig_request *req, const char *name, struct sig_span *out, char *err,
                                   size_t errlen);
/* A field of the JSON body as text into buf (the body is parsed once per
 * verification). Absent -> SIG_MISSING_HEADER; a body that is not JSON ->
 * SIG_MALFORMED_HEADER. */
enum sig_result sig_request_json(struct sig_verify_state *st, const char *path, char *buf, size_t buflen, char *err,
                                 size_t errlen);
/* application/x-www-form-urlencoded (with or without parameters). */
bool sig_is_form_type(const char *content_type);

/* Appends rendered text to the signed content (copied). */
void sig_content_add(struct sig_verify_state *st, const void *data, size_t n);
/* Appends borrowed bytes (valid for the whole verification) by reference. */
void sig_content_add_ref(struct sig_verify_state *st, const void *data, size_t n);
/* Segment i of the signed content. */
struct sig_span sig_seg_span(const struct sig_verify_state *st, size_t i);
/* The signed content in one piece (public-key verifiers take it whole):
 * borrowed when it is one segment, else a copy the caller frees (*owned). */
const unsigned char *sig_content_whole(const struct sig_verify_state *st, size_t *len, unsigned char **owned);
/* Renders the spec's template into st's segments (the timestamp, when the
 * spec has one, must be found first). */
enum sig_result sig_render_content(struct sig_verify_state *st, char *err, size_t errlen);
/* The identity of the event a verified request carries: the SHA-256 of its
 * signed content rendered again without the timestamp ({timestamp}, and a
 * {json:…} naming the spec's timestamp field). A provider re-signs every
 * retry of an event with a new timestamp, so a digest that covered it would
 * name the delivery attempt, and each retry would be stored as a new event;
 * the tolerance check has already held the timestamp. What stays (body, URL,
 * method, signed headers such as an event type) names the event. Replaces
 * st's rendered content. */
void sig_event_digest(struct sig_verify_state *st, unsigned char out[SIG_DIGEST_LEN]);

/* ---- MACs (signature_mac.c) ---- */

/* Bytes of the MAC of an HMAC algorithm; 0 for the others. */
size_t sig_alg_mac_len(enum sig_alg alg);
/* "HMAC-SHA256", "token", …: for messages. */
const char *sig_alg_label(enum sig_alg alg);
/* HMAC over the concatenation of parts. Returns -1 if OpenSSL fails (no
 * HMAC provider, out of memory) or alg is not an HMAC. */
int sig_hmac_parts(enum sig_alg alg, const struct sig_key *key, const struct sig_span *parts, size_t nparts,
                   unsigned char *mac, size_t *maclen);

#endif
