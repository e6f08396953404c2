/* The admin view's throttle and session store; see admin_guard.h. Both
 * tables are small arrays searched linearly: the admin listener serves a
 * handful of operators, and a scan of 1,024 short strings costs less than
 * the TLS-free HTTP parse around it. */
#include "admin_guard.h"

#include <arpa/inet.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#include "rand.h"
#include "xmalloc.h"

struct client {
    char key[ADMIN_GUARD_ADDR_LEN]; /* "" = free slot */
    int failures;                   /* in the window that started at window_ms */
    int64_t window_ms;
    int64_t blocked_until_ms;
    int64_t seen_ms;
};

struct admin_guard {
    struct client clients[ADMIN_GUARD_CLIENTS];
    struct admin_session sessions[ADMIN_GUARD_SESSIONS];
};

struct admin_guard *admin_guard_new(void)
{
    return xcalloc(1, sizeof(struct admin_guard));
}

void admin_guard_free(struct admin_guard *g)
{
    if (!g)
        return;
    OPENSSL_cleanse(g->sessions, sizeof g->sessions);
    free(g);
}

/* ---- throttle ------------------------------------------------------------- */

void admin_guard_client_key(const char *addr, char *out)
{
    unsigned char a6[16];
    snprintf(out, ADMIN_GUARD_ADDR_LEN, "%s", addr ? addr : "");
    if (!addr || inet_pton(AF_INET6, addr, a6) != 1)
        return;
    static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(a6, v4mapped, sizeof v4mapped) == 0) {
        inet_ntop(AF_INET, a6 + 12, out, ADMIN_GUARD_ADDR_LEN);
        return;
    }
    memset(a6 + 8, 0, 8);
    char text[INET6_ADDRSTRLEN];
    if (inet_ntop(AF_INET6, a6, text, sizeof text))
        snprintf(out, ADMIN_GUARD_ADDR_LEN, "%s/64", text);
}

/* key's slot; with create, a new one (replacing the client seen least
 * recently when the table is full). */
static struct client *client_slot(struct admin_guard *g, const char *key, bool create, int64_t now_ms)
{
    struct client *oldest = &g->clients[0];
    for (size_t i = 0; i < ADMIN_GUARD_CLIENTS; i++) {
        struct client *c = &g->clients[i];
        if (c->key[0] && strcmp(c->key, key) == 0)
            return c;
        if (!c->key[0] || (oldest->key[0] && c->seen_ms < oldest->seen_ms))
            oldest = c;
    }
    if (!create)
        return NULL;
    memset(oldest, 0, sizeof *oldest);
    snprintf(oldest->key, sizeof oldest->key, "%s", key);
    oldest->window_ms = now_ms;
    oldest->seen_ms = now_ms;
    return oldest;
}

int64_t admin_guard_retry_after(struct admin_guard *g, const char *key, int64_t now_ms)
{
    struct client *c = client_slot(g, key, false, now_ms);
    if (!c || c->blocked_until_ms <= now_ms)
        return 0;
    c->seen_ms = now_ms;
    return (c->blocked_until_ms - now_ms + 999) / 1000;
}

int admin_guard_failed(struct admin_guard *g, const char *key, int64_t now_ms, bool *blocked)
{
    struct client *c = client_slot(g, key, true, now_ms);
    *blocked = false;
    c->seen_ms = now_ms;
    if (now_ms - c->window_ms >= ADMIN_GUARD_WINDOW_MS) {
        c->window_ms = now_ms;
        c->failures = 0;
    }
    if (++c->failures >= ADMIN_GUARD_MAX_FAILURES && c->blocked_until_ms <= now_ms) {
        c->blocked_until_ms = now_ms + ADMIN_GUARD_BLOCK_MS;
        /* the next window starts when the block ends: one more failure then
         * does not block again at once */
        c->window_ms = c->blocked_until_ms;
        c->failures = 0;
        *blocked = true;
        return ADMIN_GUARD_MAX_FAILURES;
    }
    return c->failures;
}

/* ---- sessions ------------------------------------------------------------- */

bool admin_guard_same(const char *a, const char *b)
{
    size_t n = strlen(a);
    return n > 0 && n == strlen(b) && CRYPTO_memcmp(a, b, n) == 0;
}

struct admin_session *admin_guard_session_new(struct admin_guard *g, int64_t now_ms)
{
    struct admin_session *slot = &g->sessions[0];
    for (size_t i = 0; i < ADMIN_GUARD_SESSIONS; i++) {
        struct admin_session *s = &g->sessions[i];
        if (!s->id[0]) {
            slot = s;
            break;
        }
        if (s->used_ms < slot->used_ms)
            slot = s;
    }
    admin_guard_session_end(g, slot);
    if (rand_hex(slot->id, 32) != 0 || rand_hex(slot->csrf, 32) != 0) {
        admin_guard_session_end(g, slot);
        return NULL;
    }
    slot->created_ms = slot->used_ms = now_ms;
    return slot;
}

struct admin_session *admin_guard_session_find(struct admin_guard *g, const char *id, int64_t ttl_ms, int64_t now_ms)
{
    struct admin_session *found = NULL;
    for (size_t i = 0; i < ADMIN_GUARD_SESSIONS; i++) {
        struct admin_session *s = &g->sessions[i];
        if (!s->id[0])
            continue;
        if (now_ms - s->created_ms >= ttl_ms) {
            admin_guard_session_end(g, s);
            continue;
        }
        if (admin_guard_same(s->id, id))
            found = s;
    }
    if (found)
        found->used_ms = now_ms;
    return found;
}

void admin_guard_session_end(struct admin_guard *g, struct admin_session *s)
{
    (void)g;
    if (s)
        OPENSSL_cleanse(s, sizeof *s);
}

void admin_guard_sessions_clear(struct admin_guard *g)
{
    OPENSSL_cleanse(g->sessions, sizeof g->sessions);
}
