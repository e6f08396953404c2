/*
 * fuzz_http_request.c — libFuzzer target for what the ingest role does with
 * a raw inbound request before it touches Postgres. Driving the real
 * handler needs a live evhttp connection and a database, so this harness
 * replays its steps in-process instead:
 *
 *   1. libevent parses the input as an HTTP/1.x request head with the very
 *      functions evhttp's server uses (evhttp_parse_firstline_ and
 *      evhttp_parse_headers_, exported by libevent 2.1 and declared below
 *      from its private http-internal.h); the bytes after the blank line
 *      are the body (no Content-Length or chunked decoding).
 *   2. hookd's http_request_path() extracts and decodes the path, and the
 *      router's "/v1/inbox/" prefix rule picks the partner name.
 *   3. handle_inbox()'s checks run in its order against a fixed config with
 *      one partner per signature scheme (see CONFIG): method, partner,
 *      body limit, json_content_type(), sig_verify() at a fixed clock
 *      (FUZZ_NOW), then jsonpath_load_body(), extract() of event id, event type and
 *      entity id, config_machine_for() and kept_headers(). The last steps
 *      run even when the signature fails, since a fuzzer cannot forge a MAC
 *      and would otherwise never reach them; the seeds carry valid
 *      signatures so the success path is covered too.
 *
 * engine/roles/ingest.c is #included so that its static helpers (the ones that
 * read headers and bodies) are the code under test, not copies. Requests
 * in absolute form ("POST http://host/path HTTP/1.1") are skipped: libevent
 * then looks the host up in the server's vhost list, which needs a live
 * evhttp server. Checked besides memory safety and leaks: extracted ids are
 * non-empty and within their limits; a body that parses as JSON has no NUL
 * byte (the stored payload is a C string); the headers kept for the DLQ
 * view have lower-case names, values of at most 1024 bytes, and never
 * include a signature or credential header (checked against a list written
 * out here, not ingest.c's); sig_reason() maps every failure to 400 or 401.
 */
/* fuzz.sh links: ALL -engine/roles/ingest.c */
#include "../../engine/roles/ingest.c"

#include <event2/http_struct.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "fuzz_check.h"
#include "http_server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* From libevent 2.1's http-internal.h (not installed). */
enum message_read_status {
    ALL_DATA_READ = 1,
    MORE_DATA_EXPECTED = 0,
    DATA_CORRUPTED = -1,
    REQUEST_CANCELED = -2,
    DATA_TOO_LONG = -3
};
enum message_read_status evhttp_parse_firstline_(struct evhttp_request *, struct evbuffer *);
enum message_read_status evhttp_parse_headers_(struct evhttp_request *, struct evbuffer *);

/* The clock sig_verify() sees; the seeds are signed at this time. */
#define FUZZ_NOW INT64_C(1700000000)

#define INBOX_PREFIX "/v1/inbox/"

static const char CONFIG[] =
    "[hookd]\n"
    "database = postgresql:///hookd\n"
    "redis = redis://127.0.0.1\n"
    "max_body = 64KiB\n"
    "\n"
    "[partner shop]\n"
    "scheme = standard-webhooks\n"
    "secret = whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n"
    "entity_id = json:data.order_id\n"
    "\n"
    "[partner stripe]\n"
    "scheme = stripe\n"
    "secret = whsec_old_secret\n"
    "secret = whsec_test_secret\n"
    "tolerance = 5m\n"
    "entity_id = json:data.object.metadata.order_id\n"
    "\n"
    "[partner github]\n"
    "scheme = github\n"
    "secret = It's a Secret to Everybody\n"
    "entity_id = json:order_id\n"
    "entity_type = order\n"
    "\n"
    "[partner generic]\n"
    "scheme = hmac-sha256\n"
    "secret = generic-secret-0123\n"
    "header = X-Signature\n"
    "event_id = header:X-Request-Id\n"
    "event_type = json:type\n"
    "entity_id = json:items.0.sku\n"
    "max_body = 4KiB\n"
    "\n"
    "[machine order]\n"
    "initial = draft\n"
    "transition order.started = draft -> started\n"
    "transition order.paid = started -> paid\n"
    "transition order.shipped = paid -> shipped\n"
    "transition order.cancelled = draft, started, paid -> cancelled\n";

static struct hookd_config *cfg;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char path[64], err[512];
    int fd = memfd_create("hookd-fuzz-http", MFD_CLOEXEC);

    (void)argc;
    (void)argv;
    log_min_level = LOG_ERROR;
    if (fd < 0 || write(fd, CONFIG, sizeof CONFIG - 1) != (ssize_t)(sizeof CONFIG - 1)) {
        perror("fuzz_http_request: memfd");
        abort();
    }
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    cfg = config_load(path, err, sizeof err);
    close(fd);
    if (cfg == NULL) {
        fprintf(stderr, "fuzz_http_request: built-in config refused: %s\n", err);
        abort();
    }
    return 0;
}

/* 1 if evhttp_parse_firstline_ would need a live server: the request
 * target is an absolute http(s) URI with a host (see the file comment).
 * Tokenizes the first line the way libevent does. */
static int absolute_form(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    char *line = strndup((const char *)data, nl != NULL ? (size_t)(nl - data) : size);
    char *rest = line, *uri;
    struct evhttp_uri *u;
    int abs = 0;

    if (line == NULL)
        abort();
    (void)strsep(&rest, " ");
    uri = rest != NULL ? strsep(&rest, " ") : NULL;
    if (uri != NULL && (u = evhttp_uri_parse_with_flags(uri, EVHTTP_URI_NONCONFORMANT)) != NULL) {
        const char *scheme = evhttp_uri_get_scheme(u);

        abs = scheme != NULL && evhttp_uri_get_host(u) != NULL &&
              (strcasecmp(scheme, "http") == 0 || strcasecmp(scheme, "https") == 0);
        evhttp_uri_free(u);
    }
    free(line);
    return abs;
}

/* Headers that carry credentials or signatures, which kept_headers() must
 * leave out of the headers stored with an event (ingest.c: "all but
 * credentials and signatures"); spelled out here independently of
 * ingest.c's own list. */
static const char *const never_kept[] = {
    "authorization",    "proxy-authorization", "cookie",
    "webhook-signature", "stripe-signature",   "x-hub-signature",
    "x-hub-signature-256",
};

static void check_kept_headers(const struct partner_config *p, struct evkeyvalq *headers)
{
    char *text = kept_headers(headers, p, cfg);
    json_t *obj = json_loads(text, 0, NULL);
    const char *key;
    json_t *value;

    CHECK(json_is_object(obj));
    json_object_foreach(obj, key, value) {
        for (const char *c = key; *c; c++)
            CHECK(!(*c >= 'A' && *c <= 'Z'));
        for (size_t i = 0; i < sizeof never_kept / sizeof never_kept[0]; i++)
            CHECK(strcmp(key, never_kept[i]) != 0);
        CHECK(p->header == NULL || strcasecmp(key, p->header) != 0);
        CHECK(json_is_string(value) && json_string_length(value) <= 1024);
        /* [hookd] redact_headers (the default list): stored redacted */
        if (config_header_redacted(cfg, key))
            CHECK(strcmp(json_string_value(value), "<redacted>") == 0);
    }
    json_decref(obj);
    free(text);
}

static void check_field(const struct field_source *f, json_t *body, struct evkeyvalq *headers,
                        size_t max)
{
    char *v = extract(f, body, headers, max);

    if (v != NULL) {
        CHECK(f->kind != FIELD_NONE);
        CHECK(v[0] != '\0' && strlen(v) <= max);
    }
    free(v);
}

/* handle_inbox() from the method check on, for a parsed request. */
static void inbox(struct evhttp_request *req, const char *name)
{
    const struct partner_config *p = config_partner(cfg, name);
    struct evbuffer *buf = evhttp_request_get_input_buffer(req);
    struct evkeyvalq *headers = evhttp_request_get_input_headers(req);
    size_t len = evbuffer_get_length(buf);
    int64_t max;
    const unsigned char *raw;
    char err[256];
    enum sig_result sres;
    json_error_t jerr;
    json_t *body;
    int code = 0;

    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST || p == NULL)
        return;
    max = p->max_body ? p->max_body : cfg->max_body;
    if ((int64_t)len > max)
        return;
    if (!json_content_type(evhttp_find_header(headers, "Content-Type")))
        return;
    raw = len ? evbuffer_pullup(buf, -1) : (const unsigned char *)"";
    struct sig_params sp = {p->scheme, p->keys, p->nsecrets, p->tolerance / 1000, p->header};
    struct sig_request sr = {raw, len, header_lookup, headers, FUZZ_NOW};
    sres = sig_verify(&sp, &sr, err, sizeof err);
    if (sres != SIG_OK) {
        (void)sig_reason(sres, &code);
        CHECK(code == 400 || code == 401);
    }
    if (memchr(raw, '\0', len)) /* handle_inbox refuses NUL bytes (400 bad_body) */
        return;
    body = jsonpath_load_body((const char *)raw, len, &jerr);
    if (body != NULL) {
        const struct machine_config *m;
        char *type;

        CHECK(memchr(raw, '\0', len) == NULL);
        check_field(&p->event_id, body, headers, 100);
        check_field(&p->event_type, body, headers, 100);
        if (p->entity_id.kind != FIELD_NONE)
            check_field(&p->entity_id, body, headers, ENTITY_ID_MAX);
        type = extract(&p->event_type, body, headers, 100);
        m = config_machine_for(cfg, p->entity_type, type);
        if (m != NULL && p->entity_type == NULL)
            CHECK(type != NULL && machine_has_event(m->machine, type));
        free(type);
        json_decref(body);
    }
    check_kept_headers(p, headers);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct evhttp_request *req;
    struct evbuffer *in;
    char *path;

    if (absolute_form(data, size))
        return 0;
    req = evhttp_request_new(NULL, NULL);
    in = evbuffer_new();
    if (req == NULL || in == NULL)
        abort();
    req->kind = EVHTTP_REQUEST;
    evbuffer_add(in, data, size);
    if (evhttp_parse_firstline_(req, in) != ALL_DATA_READ ||
        evhttp_parse_headers_(req, in) != ALL_DATA_READ)
        goto done;
    evbuffer_add_buffer(evhttp_request_get_input_buffer(req), in);

    path = http_request_path(req);
    if (path != NULL && strncmp(path, INBOX_PREFIX, strlen(INBOX_PREFIX)) == 0)
        inbox(req, path + strlen(INBOX_PREFIX));
    free(path);
done:
    evbuffer_free(in);
    evhttp_request_free(req);
    return 0;
}
