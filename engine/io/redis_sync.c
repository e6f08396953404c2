/* Blocking Redis connections for the command line; see redis_conn.h
 * (redis_sync_*). The same URLs as the daemon's connection: a socket, OpenSSL
 * on it for rediss, hiredis's formatter and reply reader on top; with
 * Sentinel the sentinels are asked in turn for the master first. */
#include <errno.h>
#include <hiredis.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <fcntl.h>

#include "redis_conn.h"
#include "redis_link.h"
#include "xmalloc.h"

struct redis_sync {
    int fd;
    SSL_CTX *ctx; /* a reference of its own */
    SSL *ssl;
    redisReader *reader;
    char errstr[128];
};

const char *redis_sync_error(const struct redis_sync *s)
{
    return s->errstr[0] ? s->errstr : NULL;
}

void redis_sync_free(struct redis_sync *s)
{
    if (!s)
        return;
    if (s->ssl) {
        SSL_shutdown(s->ssl);
        SSL_free(s->ssl);
    }
    SSL_CTX_free(s->ctx);
    if (s->fd >= 0)
        close(s->fd);
    if (s->reader)
        redisReaderFree(s->reader);
    free(s);
}

static int wait_connected(int fd, int timeout_ms)
{
    struct pollfd p = {fd, POLLOUT, 0};
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (poll(&p, 1, timeout_ms) != 1)
        return errno = ETIMEDOUT, -1;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr)
        return errno = soerr ? soerr : errno, -1;
    return 0;
}

static int sock_connect(const char *host, int port, int timeout_ms, char *err, size_t errlen)
{
    struct addrinfo hints = {0}, *res = NULL;
    char portbuf[8];
    snprintf(portbuf, sizeof portbuf, "%d", port);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, portbuf, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, e = 0;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0)
            continue;
        if ((connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 &&
             (errno != EINPROGRESS || wait_connected(fd, timeout_ms) != 0))) {
            e = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errlen, "cannot connect to Redis at %s:%d: %s", host, port, strerror(e ? e : ECONNREFUSED));
        return -1;
    }
    int one = 1;
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static struct redis_sync *node_connect(const char *host, int port, SSL_CTX *ctx, int timeout_ms, char *err,
                                       size_t errlen)
{
    struct redis_sync *s = xcalloc(1, sizeof *s);
    s->fd = sock_connect(host, port, timeout_ms, err, errlen);
    if (s->fd < 0)
        goto fail;
    s->reader = redisReaderCreate();
    if (ctx) {
        SSL_CTX_up_ref(ctx);
        s->ctx = ctx;
        s->ssl = SSL_new(ctx);
        if (!s->ssl || redis_link_tls_bind(s->ssl, host) != 0 || SSL_set_fd(s->ssl, s->fd) != 1) {
            snprintf(err, errlen, "cannot set up TLS for %s", host);
            goto fail;
        }
        if (SSL_connect(s->ssl) != 1) {
            char why[320];
            redis_link_tls_reason(s->ssl, ERR_peek_last_error(), why, sizeof why);
            snprintf(err, errlen, "Redis at %s:%d: %s", host, port, why);
            SSL_free(s->ssl);
            s->ssl = NULL;
            goto fail;
        }
    }
    return s;
fail:
    redis_sync_free(s);
    return NULL;
}

static int sync_write(struct redis_sync *s, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = s->ssl ? SSL_write(s->ssl, buf, (int)len) : send(s->fd, buf, len, MSG_NOSIGNAL);
        if (n <= 0) {
            if (!s->ssl && n < 0 && errno == EINTR)
                continue;
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static redisReply *sync_read(struct redis_sync *s)
{
    char buf[16384];
    for (;;) {
        void *reply = NULL;
        if (redisReaderGetReply(s->reader, &reply) != REDIS_OK)
            return NULL;
        if (reply)
            return reply;
        ssize_t n = s->ssl ? SSL_read(s->ssl, buf, sizeof buf) : recv(s->fd, buf, sizeof buf, 0);
        if (n < 0 && !s->ssl && errno == EINTR)
            continue;
        if (n <= 0 || redisReaderFeed(s->reader, buf, (size_t)n) != REDIS_OK)
            return NULL;
    }
}

static redisReply *sync_send(struct redis_sync *s, char *cmd, int len)
{
    if (len < 0 || s->errstr[0]) {
        free(cmd);
        return NULL;
    }
    errno = 0;
    int rc = sync_write(s, cmd, (size_t)len);
    OPENSSL_cleanse(cmd, (size_t)len); /* AUTH carries a password */
    free(cmd);
    redisReply *r = rc == 0 ? sync_read(s) : NULL;
    if (!r && !s->errstr[0])
        snprintf(s->errstr, sizeof s->errstr, "connection lost (%s)", errno ? strerror(errno) : "closed");
    return r;
}

redisReply *redis_sync_command(struct redis_sync *s, const char *fmt, ...)
{
    char *cmd = NULL;
    va_list ap;
    va_start(ap, fmt);
    int len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    return sync_send(s, cmd, len);
}

static redisReply *sync_argv(struct redis_sync *s, int argc, const char **argv)
{
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, NULL);
    return sync_send(s, cmd, len);
}

/* A command whose error fails the connection: 0, or -1 with err. */
static int sync_expect(struct redis_sync *s, int argc, const char **argv, const char *what, char *err, size_t errlen)
{
    redisReply *r = sync_argv(s, argc, argv);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "Redis %s failed: %s", what, r ? r->str : "connection lost");
        freeReplyObject(r);
        return -1;
    }
    freeReplyObject(r);
    return 0;
}

/* Asks the sentinels in turn; host and port of the master. */
static int sentinel_master(const struct redis_url *u, SSL_CTX *ctx, const struct redis_options *opts, int timeout_ms,
                           char *host, size_t hostlen, int *port, char *err, size_t errlen)
{
    char last[320] = "no sentinel";
    for (int i = 0; i < u->nhosts; i++) {
        struct redis_sync *s = node_connect(u->hosts[i].host, u->hosts[i].port, ctx, timeout_ms, last, sizeof last);
        if (!s)
            continue;
        const char *pw = opts ? opts->sentinel_password : NULL;
        if (pw && pw[0] && sync_expect(s, 2, (const char *[]){"AUTH", pw}, "sentinel AUTH", last, sizeof last) != 0) {
            redis_sync_free(s);
            continue;
        }
        redisReply *r = sync_argv(s, 3, (const char *[]){"SENTINEL", "get-master-addr-by-name", u->service});
        if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[0]->type == REDIS_REPLY_STRING &&
            r->element[1]->type == REDIS_REPLY_STRING) {
            snprintf(host, hostlen, "%s", r->element[0]->str);
            *port = atoi(r->element[1]->str);
            freeReplyObject(r);
            redis_sync_free(s);
            return 0;
        }
        snprintf(last, sizeof last, "sentinel %s:%d: %s", u->hosts[i].host, u->hosts[i].port,
                 !r                             ? "connection lost"
                 : r->type == REDIS_REPLY_NIL   ? "unknown service"
                 : r->type == REDIS_REPLY_ERROR ? r->str
                                                : "unexpected reply");
        freeReplyObject(r);
        redis_sync_free(s);
    }
    snprintf(err, errlen, "no sentinel named the master of %s (last: %s)", u->service, last);
    return -1;
}

static int node_setup(struct redis_sync *s, const struct redis_url *u, char *err, size_t errlen)
{
    char db[16];
    if (u->password[0] && u->user[0] &&
        sync_expect(s, 3, (const char *[]){"AUTH", u->user, u->password}, "AUTH", err, errlen) != 0)
        return -1;
    if (u->password[0] && !u->user[0] &&
        sync_expect(s, 2, (const char *[]){"AUTH", u->password}, "AUTH", err, errlen) != 0)
        return -1;
    snprintf(db, sizeof db, "%d", u->db);
    if (u->db && sync_expect(s, 2, (const char *[]){"SELECT", db}, "SELECT", err, errlen) != 0)
        return -1;
    if (!u->sentinel)
        return 0;
    redisReply *r = sync_argv(s, 1, (const char *[]){"ROLE"});
    bool master = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 && r->element[0]->type == REDIS_REPLY_STRING &&
                  strcmp(r->element[0]->str, "master") == 0;
    freeReplyObject(r);
    if (!master)
        snprintf(err, errlen, "the node the sentinels named is not a master");
    return master ? 0 : -1;
}

struct redis_sync *redis_sync_connect(const char *url, const struct redis_options *opts, int timeout_ms, char *err,
                                      size_t errlen)
{
    struct redis_url u;
    struct redis_sync *s = NULL;
    SSL_CTX *ctx = NULL;
    char host[256];
    int port;
    if (redis_url_parse(url, &u, err, errlen) != 0)
        return NULL;
    if (u.tls) {
        struct redis_tls_files f = {opts ? opts->ca_file : NULL, opts ? opts->cert_file : NULL,
                                    opts ? opts->key_file : NULL};
        if (!(ctx = redis_link_tls_ctx(&f, err, errlen)))
            goto done;
    }
    snprintf(host, sizeof host, "%s", u.host);
    port = u.port;
    if (u.sentinel && sentinel_master(&u, ctx, opts, timeout_ms, host, sizeof host, &port, err, errlen) != 0)
        goto done;
    s = node_connect(host, port, ctx, timeout_ms, err, errlen);
    if (s && node_setup(s, &u, err, errlen) != 0) {
        redis_sync_free(s);
        s = NULL;
    }
done:
    SSL_CTX_free(ctx);
    OPENSSL_cleanse(&u, sizeof u);
    return s;
}
