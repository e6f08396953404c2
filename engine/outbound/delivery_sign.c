/* Signing a delivery; see delivery_sign.h. */
#include "delivery_sign.h"

#include <stdbool.h>
#include <string.h>

int delivery_sign(const char *secret, const char *prev_secret, const char *event_id, int64_t ts, const char *payload,
                  char out[DELIVERY_SIGNATURE_MAX])
{
    const char *secrets[] = {secret, prev_secret};
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < 2; i++) {
        if (!secrets[i])
            continue;
        struct sig_key key;
        char err[128], one[SIG_STANDARD_SIGNATURE_SIZE];
        if (sig_key_decode(SIG_STANDARD_WEBHOOKS, secrets[i], &key, err, sizeof err) != 0)
            return -1;
        int rc = sig_sign_standard(&key, event_id, ts, (const unsigned char *)payload, strlen(payload), one,
                                   sizeof one);
        sig_key_clear(&key);
        if (rc != 0)
            return -1;
        size_t len = strlen(one);
        if (used)
            out[used++] = ' ';
        memcpy(out + used, one, len + 1);
        used += len;
    }
    return 0;
}

/* Whether which sends the svix-* set, and the webhook-* set. */
static bool sends_svix(int which)
{
    return which != SETTINGS_SIG_WEBHOOK;
}

static bool sends_webhook(int which)
{
    return which != SETTINGS_SIG_SVIX;
}

size_t delivery_sign_id_headers(int which, const char *id, struct http_header out[DELIVERY_SIGN_ID_HEADERS_MAX])
{
    size_t n = 0;
    if (sends_svix(which))
        out[n++] = (struct http_header){"svix-id", id};
    if (sends_webhook(which))
        out[n++] = (struct http_header){"webhook-id", id};
    return n;
}

size_t delivery_sign_late_headers(int which, const char *ts, const char *sig,
                                  struct http_header out[DELIVERY_SIGN_LATE_HEADERS_MAX])
{
    size_t n = 0;
    if (sends_svix(which)) {
        out[n++] = (struct http_header){"svix-timestamp", ts};
        out[n++] = (struct http_header){"svix-signature", sig};
    }
    if (sends_webhook(which)) {
        out[n++] = (struct http_header){"webhook-timestamp", ts};
        out[n++] = (struct http_header){"webhook-signature", sig};
    }
    return n;
}
