/* redis_link — one RESP connection on the libevent loop: a bufferevent
 * (a plain socket, or OpenSSL over a socket) carrying commands formatted as
 * RESP and replies parsed by hiredis's redisReader. Replies are matched to
 * callbacks first in, first out; pub/sub pushes ("message", "subscribe", …)
 * on a subscribed link go to the push callback instead. Internal to
 * redis_conn (and its TLS helpers to redis_sync): no policy here — no AUTH,
 * no reconnect, no Sentinel; the owner decides what a lost link means.
 *
 * Why not hiredis's async API: Debian 12's hiredis 0.14 has no TLS, and one
 * transport for plain, TLS and Sentinel keeps a single I/O path. */
#ifndef HOOKD_REDIS_LINK_H
#define HOOKD_REDIS_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct bufferevent;
struct redisReply;
struct ssl_ctx_st;
struct ssl_st;

/* TLS settings: all borrowed strings, NULL for none / the system store. */
struct redis_tls_files {
    const char *ca_file;
    const char *cert_file;
    const char *key_file;
};

/* An SSL_CTX for Redis: TLS 1.2+, peer verification against ca_file (or the
 * system store), the client certificate when given. NULL with err. Caller
 * SSL_CTX_free()s. */
__attribute__((warn_unused_result)) struct ssl_ctx_st *redis_link_tls_ctx(const struct redis_tls_files *f, char *err,
                                                                          size_t errlen);
/* Binds ssl to host: SNI for a name, and the certificate check of the name
 * or (for an IP literal) the IP address. -1 on failure. */
__attribute__((warn_unused_result)) int redis_link_tls_bind(struct ssl_st *ssl, const char *host);
/* Why a handshake failed, in words ("certificate has expired (check=expired)"). */
void redis_link_tls_reason(struct ssl_st *ssl, unsigned long ossl_err, char *out, size_t outlen);

struct redis_link;
/* reply borrowed (valid during the call); NULL when the link was lost. */
typedef void (*redis_link_reply_fn)(struct redis_link *l, struct redisReply *reply, void *arg);
typedef void (*redis_link_push_fn)(struct redis_link *l, struct redisReply *reply, void *arg);
enum redis_link_state {
    REDIS_LINK_UP,         /* connected (for TLS: after the handshake) */
    REDIS_LINK_FAILED,     /* the connection could not be made */
    REDIS_LINK_TLS_FAILED, /* the TLS handshake failed: why names the check */
    REDIS_LINK_LOST,       /* an established connection was lost */
};
/* why is NULL for REDIS_LINK_UP; the link is already closed otherwise. */
typedef void (*redis_link_state_fn)(struct redis_link *l, enum redis_link_state state, const char *why, void *arg);

struct redis_link_pending {
    redis_link_reply_fn fn;
    void *arg;
};

struct redis_link {
    struct event_base *base;
    struct bufferevent *bev; /* NULL when closed */
    struct ssl_st *ssl;      /* owned by bev */
    void *reader;            /* redisReader */
    bool connected;
    bool subscribed; /* SUBSCRIBE sent: pushes do not consume the FIFO */
    uint64_t gen;    /* +1 per close: a callback can tell the link went away */
    struct redis_link_pending *ring;
    size_t cap, head, count;
    redis_link_state_fn on_state;
    redis_link_push_fn on_push;
    void *arg;
};

/* Sets up a closed link (no allocation until open). */
void redis_link_init(struct redis_link *l, struct event_base *base, redis_link_state_fn on_state,
                     redis_link_push_fn on_push, void *arg);
/* Starts connecting to host:port, over TLS when tls_ctx is not NULL.
 * -1 with err when it cannot even start (then on_state is not called). */
__attribute__((warn_unused_result)) int redis_link_open(struct redis_link *l, const char *host, int port,
                                                        struct ssl_ctx_st *tls_ctx, char *err, size_t errlen);
/* As redis_link_open, but a TLS certificate must name tls_name (also sent
 * as SNI) rather than host; NULL for host. For cluster nodes announced by
 * IP address behind a service's DNS name (Azure Cache for Redis). */
__attribute__((warn_unused_result)) int redis_link_open_as(struct redis_link *l, const char *host, int port,
                                                           struct ssl_ctx_st *tls_ctx, const char *tls_name, char *err,
                                                           size_t errlen);
/* True for an IPv4 or IPv6 address literal. */
bool redis_link_is_ip(const char *host);
/* Closes the link (if open): pending callbacks run with NULL, in order;
 * on_state is not called. Safe from inside any link callback. */
void redis_link_close(struct redis_link *l);
/* Frees what redis_link_init/open allocated (closes first). */
void redis_link_release(struct redis_link *l);

/* Queues a command; fn (may be NULL) gets its reply. -1 (fn never called)
 * when closed; callers that sent on an open link may ignore the result.
 * The arguments are written into the output buffer as RESP (one copy). */
int redis_link_argv(struct redis_link *l, redis_link_reply_fn fn, void *arg, int argc, const char **argv,
                    const size_t *argvlen);
/* Queues an already formatted RESP command (copied). */
__attribute__((warn_unused_result)) int redis_link_raw(struct redis_link *l, redis_link_reply_fn fn, void *arg,
                                                       const char *cmd, size_t len);
/* Queues a formatted command whose buffer (from redisFormatCommand, freed
 * with free()) the link takes over without copying. */
__attribute__((warn_unused_result)) int redis_link_take(struct redis_link *l, redis_link_reply_fn fn, void *arg,
                                                        char *cmd, size_t len);
/* SUBSCRIBE channel: its confirmation and messages go to on_push. */
int redis_link_subscribe(struct redis_link *l, const char *channel);

#endif
