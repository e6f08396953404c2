/*
 * signature_content.c — the signed bytes of a request, rendered from the
 * spec's template: the body, the timestamp, the URL (HubSpot's reserved
 * characters decoded), the method, named headers, JSON fields and Twilio's
 * sorted form fields. The content is kept as segments, the body and other
 * borrowed bytes by reference, so that an HMAC never copies the body. Also
 * the request readers (a header, a JSON field) and the span and buffer
 * helpers the module's tokenizers share, and sig_template_check() for the
 * config's `signed =`.
 */
#include "signature_internal.h"

#include "encoding.h"
#include "errbuf.h"
#include "jsonpath.h"
#include "xmalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

/* ---- spans and buffers ---------------------------------------------------- */

static int is_ows(char c)
{
    return c == ' ' || c == '\t';
}

struct sig_span sig_span_trim(struct sig_span s)
{
    while (s.n > 0 && is_ows(s.p[0])) {
        s.p++;
        s.n--;
    }
    while (s.n > 0 && is_ows(s.p[s.n - 1]))
        s.n--;
    return s;
}

struct sig_span sig_span_of(const char *s)
{
    return (struct sig_span){s, s != NULL ? strlen(s) : 0};
}

/* Strips a case-insensitive literal prefix; returns 1 if it was there. */
int sig_span_strip_prefix(struct sig_span *s, const char *prefix)
{
    size_t n = prefix != NULL ? strlen(prefix) : 0;

    if (s->n < n || (n > 0 && strncasecmp(s->p, prefix, n) != 0))
        return 0;
    s->p += n;
    s->n -= n;
    return 1;
}

static int is_sep(const char *seps, char c)
{
    for (; *seps; seps++)
        if (*seps == c)
            return 1;
    return 0;
}

/* Splits the next token off *rest at any character of seps (trimmed);
 * empty tokens are skipped. Returns 0 when *rest holds no further token. */
int sig_span_next_token(struct sig_span *rest, const char *seps, struct sig_span *tok)
{
    while (rest->n > 0) {
        size_t len = 0;

        if (seps[0] != '\0' && seps[1] == '\0') {
            const char *end = memchr(rest->p, seps[0], rest->n);

            len = end != NULL ? (size_t)(end - rest->p) : rest->n;
        } else {
            while (len < rest->n && !is_sep(seps, rest->p[len]))
                len++;
        }
        tok->p = rest->p;
        tok->n = len;
        rest->p += len;
        rest->n -= len;
        if (rest->n > 0) { /* step over the separator */
            rest->p++;
            rest->n--;
        }
        *tok = sig_span_trim(*tok);
        if (tok->n > 0)
            return 1;
    }
    return 0;
}

void sig_buf_add(struct sig_buf *b, const void *data, size_t n)
{
    if (n == 0)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        b->p = xrealloc(b->p, cap);
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

void sig_buf_free(struct sig_buf *b)
{
    if (b->p != NULL)
        OPENSSL_cleanse(b->p, b->n);
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}


/* ---- segments of the signed content -------------------------------------- */

/* Appends rendered text to the signed content. */
void sig_content_add(struct sig_verify_state *st, const void *data, size_t n)
{
    struct sig_seg *last = st->nsegs > 0 ? &st->segs[st->nsegs - 1] : NULL;

    if (n == 0)
        return;
    if (last != NULL && last->ext == NULL && last->off + last->n == st->content.n) {
        last->n += n;
    } else if (st->nsegs < SIG_MAX_SEGS) {
        st->segs[st->nsegs++] = (struct sig_seg){NULL, st->content.n, n};
    } else { /* out of segments: extend the last one, copying */
        HOOKD_ASSERT(last != NULL);
        if (last->ext != NULL) {
            size_t off = st->content.n;

            sig_buf_add(&st->content, last->ext, last->n);
            *last = (struct sig_seg){NULL, off, last->n};
        }
        last->n += n;
    }
    sig_buf_add(&st->content, data, n);
}

/* Appends borrowed bytes (valid for the whole verification) by reference. */
void sig_content_add_ref(struct sig_verify_state *st, const void *data, size_t n)
{
    if (n == 0)
        return;
    if (st->nsegs + 1 >= SIG_MAX_SEGS) {
        sig_content_add(st, data, n);
        return;
    }
    st->segs[st->nsegs++] = (struct sig_seg){data, 0, n};
}

struct sig_span sig_seg_span(const struct sig_verify_state *st, size_t i)
{
    const struct sig_seg *g = &st->segs[i];
    return (struct sig_span){(const char *)(g->ext != NULL ? g->ext : st->content.p + g->off), g->n};
}

/* The signed content in one piece (public-key verifiers take it whole):
 * borrowed when it is one segment, else a copy the caller frees (*owned). */
const unsigned char *sig_content_whole(const struct sig_verify_state *st, size_t *len, unsigned char **owned)
{
    size_t n = 0;

    *owned = NULL;
    if (st->nsegs == 1) {
        *len = st->segs[0].n;
        return (const unsigned char *)sig_seg_span(st, 0).p;
    }
    for (size_t i = 0; i < st->nsegs; i++)
        n += st->segs[i].n;
    *owned = xmalloc(n + 1);
    n = 0;
    for (size_t i = 0; i < st->nsegs; i++) {
        struct sig_span sp = sig_seg_span(st, i);

        memcpy(*owned + n, sp.p, sp.n);
        n += sp.n;
    }
    *len = n;
    return *owned;
}

/* SHA-256 of the signed content, streamed over its segments. */
static void content_sha256(const struct sig_verify_state *st, unsigned char out[SIG_DIGEST_LEN])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int n = 0;
    int ok = ctx != NULL && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);

    for (size_t i = 0; ok && i < st->nsegs; i++) {
        struct sig_span sp = sig_seg_span(st, i);

        ok = EVP_DigestUpdate(ctx, sp.p, sp.n);
    }
    ok = ok && EVP_DigestFinal_ex(ctx, out, &n) && n == SIG_DIGEST_LEN;
    EVP_MD_CTX_free(ctx);
    HOOKD_ASSERT(ok); /* fails only when OpenSSL cannot allocate */
}

/* ---- the request ----------------------------------------------------------- */

/* Fetches a required header, trimmed. Absent -> SIG_MISSING_HEADER; present
 * but blank -> SIG_MALFORMED_HEADER. */
enum sig_result sig_request_header(const struct sig_request *req, const char *name, struct sig_span *out, char *err,
                                   size_t errlen)
{
    const char *v = req->header != NULL ? req->header(req->header_arg, name) : NULL;

    if (v == NULL) {
        err_set(err, errlen, "missing %s header", name);
        return SIG_MISSING_HEADER;
    }
    *out = sig_span_trim(sig_span_of(v));
    if (out->n == 0) {
        err_set(err, errlen, "%s header is empty", name);
        return SIG_MALFORMED_HEADER;
    }
    return SIG_OK;
}

/* A field of the JSON body as text into buf. Absent -> SIG_MISSING_HEADER;
 * a body that is not JSON -> SIG_MALFORMED_HEADER. */
enum sig_result sig_request_json(struct sig_verify_state *st, const char *path, char *buf, size_t buflen, char *err,
                                 size_t errlen)
{
    if (!st->doc_loaded) {
        json_error_t jerr;

        st->doc_loaded = 1;
        st->doc = st->req->body_len > 0 ? jsonpath_load_body((const char *)st->req->body, st->req->body_len, &jerr)
                                        : NULL;
    }
    if (st->doc == NULL) {
        err_set(err, errlen, "the body is not JSON, so json:%s (signed) cannot be read", path);
        return SIG_MALFORMED_HEADER;
    }
    if (jsonpath_get_text(st->doc, path, buf, buflen) != 0 || buf[0] == '\0') {
        err_set(err, errlen, "missing json:%s (empty, absent or over %zu characters)", path, buflen - 1);
        return SIG_MISSING_HEADER;
    }
    return SIG_OK;
}

/* ---- the signed content ---------------------------------------------------- */

/* application/x-www-form-urlencoded decoding of s ('+' is a space, %XX a
 * byte; a stray '%' stays as it is) into out, which has room for s.n bytes
 * (decoding never lengthens); returns the decoded length. */
static size_t form_decode(struct sig_span s, char *out)
{
    size_t n = 0;

    for (size_t i = 0; i < s.n; i++) {
        if (s.p[i] == '+') {
            out[n++] = ' ';
        } else if (s.p[i] == '%' && i + 2 < s.n && enc_hex_value(s.p[i + 1]) >= 0 && enc_hex_value(s.p[i + 2]) >= 0) {
            out[n++] = (char)(enc_hex_value(s.p[i + 1]) * 16 + enc_hex_value(s.p[i + 2]));
            i += 2;
        } else {
            out[n++] = s.p[i];
        }
    }
    return n;
}

struct form_field {
    const char *name, *value; /* in render_form()'s arena */
    size_t name_len, value_len;
};

static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c != 0 ? c : (an > bn) - (an < bn);
}

static int cmp_field(const void *a, const void *b)
{
    const struct form_field *x = a, *y = b;
    int c = cmp_bytes(x->name, x->name_len, y->name, y->name_len);
    return c != 0 ? c : cmp_bytes(x->value, x->value_len, y->value, y->value_len);
}

bool sig_is_form_type(const char *content_type)
{
    static const char form[] = "application/x-www-form-urlencoded";
    return content_type != NULL && strncasecmp(content_type, form, sizeof form - 1) == 0 &&
           (content_type[sizeof form - 1] == '\0' || content_type[sizeof form - 1] == ';' ||
            content_type[sizeof form - 1] == ' ');
}

/* Twilio's {form}: every field of a form body, sorted by name (then
 * value), an exact repeat of a name=value pair once, each as name then
 * value. Nothing for a body that is not a form. The fields are decoded into
 * one arena of the body's size (a hostile form of a million one-byte
 * fields costs no million allocations). */
static void render_form(struct sig_verify_state *st, const struct sig_request *req)
{
    struct sig_span rest = {(const char *)req->body, req->body_len}, tok;
    struct form_field *fields = NULL;
    size_t n = 0, cap = 0, used = 0;
    char *arena;

    if (!sig_is_form_type(req->content_type))
        return;
    arena = xmalloc(req->body_len + 1);
    while (sig_span_next_token(&rest, "&", &tok)) {
        const char *eq = memchr(tok.p, '=', tok.n);
        struct sig_span name = {tok.p, eq != NULL ? (size_t)(eq - tok.p) : tok.n};
        struct sig_span value = eq != NULL ? (struct sig_span){eq + 1, tok.n - name.n - 1} : (struct sig_span){"", 0};

        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            fields = xrealloc(fields, cap * sizeof *fields);
        }
        fields[n].name = arena + used;
        fields[n].name_len = form_decode(name, arena + used);
        used += fields[n].name_len;
        fields[n].value = arena + used;
        fields[n].value_len = form_decode(value, arena + used);
        used += fields[n].value_len;
        n++;
    }
    if (n > 0)
        qsort(fields, n, sizeof *fields, cmp_field);
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || cmp_field(&fields[i - 1], &fields[i]) != 0) {
            sig_content_add(st, fields[i].name, fields[i].name_len);
            sig_content_add(st, fields[i].value, fields[i].value_len);
        }
    }
    free(arena);
    free(fields);
}

/* {url}: as received, or with HubSpot's reserved characters decoded. */
static void render_url(struct sig_verify_state *st, const char *url)
{
    static const char reserved[] = ":/?@!$'()*,;";
    const char *run = url, *p;

    if (!st->spec->url_decode_reserved) {
        sig_content_add_ref(st, url, strlen(url));
        return;
    }
    for (p = url; *p; p++) {
        int hi, lo;
        char c;

        if (p[0] != '%' || (hi = enc_hex_value(p[1])) < 0 || (lo = enc_hex_value(p[2])) < 0)
            continue;
        c = (char)(hi * 16 + lo);
        if (c == '\0' || strchr(reserved, c) == NULL)
            continue;
        sig_content_add(st, run, (size_t)(p - run));
        sig_content_add(st, &c, 1);
        p += 2;
        run = p + 1;
    }
    sig_content_add(st, run, (size_t)(p - run));
}

/* The placeholder starting at tpl ("{...}"): its length including braces,
 * or 0 if there is no closing brace. */
static size_t placeholder_len(const char *tpl)
{
    const char *end = strchr(tpl, '}');
    return end != NULL ? (size_t)(end - tpl) + 1 : 0;
}

static enum sig_result render_one(struct sig_verify_state *st, const char *ph, size_t n, char *err, size_t errlen)
{
    const struct sig_request *req = st->req;
    char name[JSONPATH_MAX_LEN + 1];
    struct sig_span v;
    enum sig_result r;

#define IS(lit) (n == sizeof(lit) - 1 && memcmp(ph, lit, n) == 0)
    if (IS("{body}")) {
        sig_content_add_ref(st, req->body, req->body_len);
    } else if (IS("{timestamp}")) {
        if (!st->without_timestamp)
            sig_content_add(st, st->ts_text, strlen(st->ts_text));
    } else if (IS("{url}")) {
        render_url(st, req->url != NULL ? req->url : "");
    } else if (IS("{method}")) {
        const char *m = req->method != NULL ? req->method : "POST";
        sig_content_add_ref(st, m, strlen(m));
    } else if (IS("{form}")) {
        render_form(st, req);
    } else if (n > 9 && n - 9 <= JSONPATH_MAX_LEN && memcmp(ph, "{header:", 8) == 0) {
        memcpy(name, ph + 8, n - 9);
        name[n - 9] = '\0';
        if ((r = sig_request_header(req, name, &v, err, errlen)) != SIG_OK)
            return r;
        sig_content_add_ref(st, v.p, v.n);
    } else if (n > 7 && n - 7 <= JSONPATH_MAX_LEN && memcmp(ph, "{json:", 6) == 0) {
        char value[SIG_JSON_FIELD_MAX + 1];

        memcpy(name, ph + 6, n - 7);
        name[n - 7] = '\0';
        if (st->without_timestamp && st->spec->timestamp_json != NULL && strcmp(name, st->spec->timestamp_json) == 0)
            return SIG_OK;
        if ((r = sig_request_json(st, name, value, sizeof value, err, errlen)) != SIG_OK)
            return r;
        sig_content_add(st, value, strlen(value));
    } else {
        err_set(err, errlen, "the signed template has an unknown placeholder");
        return SIG_MISMATCH;
    }
#undef IS
    return SIG_OK;
}

enum sig_result sig_render_content(struct sig_verify_state *st, char *err, size_t errlen)
{
    const char *tpl = st->spec->signed_template != NULL ? st->spec->signed_template : "{body}";
    enum sig_result r;

    while (*tpl) {
        const char *brace = strchr(tpl, '{');
        size_t lit = brace != NULL ? (size_t)(brace - tpl) : strlen(tpl), n;

        sig_content_add_ref(st, tpl, lit);
        tpl += lit;
        if (*tpl == '\0')
            break;
        if ((n = placeholder_len(tpl)) == 0) {
            sig_content_add_ref(st, tpl, strlen(tpl));
            break;
        }
        if ((r = render_one(st, tpl, n, err, errlen)) != SIG_OK)
            return r;
        tpl += n;
    }
    return SIG_OK;
}

void sig_event_digest(struct sig_verify_state *st, unsigned char out[SIG_DIGEST_LEN])
{
    if (st->has_ts) {
        char err[256];
        enum sig_result r;

        sig_buf_free(&st->content);
        st->nsegs = 0;
        st->without_timestamp = true;
        /* The same request rendered a moment ago: every part it reads is
         * there, so only the timestamp's absence differs. */
        r = sig_render_content(st, err, sizeof err);
        HOOKD_ASSERT(r == SIG_OK);
    }
    content_sha256(st, out);
}

int sig_template_check(const char *tpl, char *err, size_t errlen)
{
    static const char *const fixed[] = {"{body}", "{timestamp}", "{url}", "{method}", "{form}"};

    if (tpl == NULL || tpl[0] == '\0')
        return err_set(err, errlen, "the signed template is empty");
    for (const char *p = strchr(tpl, '{'); p != NULL; p = strchr(p + 1, '{')) {
        size_t n = placeholder_len(p);
        bool ok = false;

        if (n == 0)
            return err_set(err, errlen, "the signed template has a '{' without '}'");
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
            ok = ok || (n == strlen(fixed[i]) && memcmp(p, fixed[i], n) == 0);
        if (!ok && n > 9 && n - 9 <= JSONPATH_MAX_LEN && memcmp(p, "{header:", 8) == 0 &&
            memchr(p + 8, '{', n - 9) == NULL) /* render_one()'s bound */
            ok = true;
        if (!ok && n > 7 && memcmp(p, "{json:", 6) == 0) {
            char path[JSONPATH_MAX_LEN + 1];

            if (n - 7 <= JSONPATH_MAX_LEN) {
                memcpy(path, p + 6, n - 7);
                path[n - 7] = '\0';
                ok = jsonpath_valid(path) != 0;
            }
        }
        if (!ok)
            return err_set(err, errlen,
                           "unknown placeholder '%.*s' in the signed template (use {body}, {timestamp}, {url}, "
                           "{method}, {form}, {header:Name}, {json:path})",
                           (int)(n > 60 ? 60 : n), p);
    }
    return 0;
}
