/* Blocking Redis connections for the command line; see redis_conn.h
 * (redis_sync_*). The same URLs as the daemon's connection: a socket, OpenSSL
 * on it for rediss, hiredis's formatter and reply reader on top; with
 * Sentinel the sentinels are asked in turn for the master first. With
 * Cluster the handle is a router: the seeds are asked for the slot map,
 * each command goes to the master of its key's slot over a connection made
 * on first use, and MOVED, ASK and TRYAGAIN are followed. */
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

#include "clock.h"
#include "errbuf.h"
#include "redis_cluster.h"
#include "redis_conn.h"
#include "redis_link.h"
#include "xmalloc.h"

#define SYNC_MAX_NODES 64

/* Cluster: the masters and the slot map (node index + 1, 0 unknown). */
struct sync_cluster {
    struct redis_url url; /* holds the password: wiped on free */
    int timeout_ms;
    int seed; /* the URL's host that gave the slot map */
    int nnodes;
    struct {
        char host[256];
        int port;
        struct redis_sync *conn; /* NULL until first used */
    } nodes[SYNC_MAX_NODES];
    unsigned char slots[REDIS_CLUSTER_SLOTS];
};

struct redis_sync {
    int fd;
    SSL_CTX *ctx; /* a reference of its own */
    SSL *ssl;
    redisReader *reader;
    char errstr[128];
    struct sync_cluster *cl; /* Cluster: this handle is a router, fd < 0 */
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
    if (s->cl) {
        for (int i = 0; i < s->cl->nnodes; i++)
            redis_sync_free(s->cl->nodes[i].conn);
        OPENSSL_cleanse(&s->cl->url, sizeof s->cl->url);
        free(s->cl);
    }
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
        return err_set(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rc));
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
        return err_set(err, errlen, "cannot connect to Redis at %s:%d: %s", host, port,
                       strerror(e ? e : ECONNREFUSED));
    }
    int one = 1;
    struct timeval tv = clock_tv_from_ms(timeout_ms);
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static struct redis_sync *node_connect_as(const char *host, int port, SSL_CTX *ctx, const char *tls_name,
                                          int timeout_ms, char *err, size_t errlen)
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
        if (!s->ssl || redis_link_tls_bind(s->ssl, tls_name ? tls_name : host) != 0 ||
            SSL_set_fd(s->ssl, s->fd) != 1) {
            err_set(err, errlen, "cannot set up TLS for %s", host);
            goto fail;
        }
        if (SSL_connect(s->ssl) != 1) {
            char why[320];
            redis_link_tls_reason(s->ssl, ERR_peek_last_error(), why, sizeof why);
            err_set(err, errlen, "Redis at %s:%d: %s", host, port, why);
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

static struct redis_sync *node_connect(const char *host, int port, SSL_CTX *ctx, int timeout_ms, char *err,
                                       size_t errlen)
{
    return node_connect_as(host, port, ctx, NULL, timeout_ms, err, errlen);
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

static redisReply *cluster_command(struct redis_sync *s, char *cmd, int len);

redisReply *redis_sync_command(struct redis_sync *s, const char *fmt, ...)
{
    char *cmd = NULL;
    va_list ap;
    va_start(ap, fmt);
    int len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    if (s->cl)
        return cluster_command(s, cmd, len);
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
        err_set(err, errlen, "Redis %s failed: %s", what, r ? r->str : "connection lost");
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
    return err_set(err, errlen, "no sentinel named the master of %s (last: %s)", u->service, last);
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
        err_set(err, errlen, "the node the sentinels named is not a master");
    return master ? 0 : -1;
}

/* ---- Cluster ------------------------------------------------------------ */

static int cluster_node(struct sync_cluster *cl, const char *host, int port)
{
    for (int i = 0; i < cl->nnodes; i++)
        if (cl->nodes[i].port == port && strcmp(cl->nodes[i].host, host) == 0)
            return i;
    if (cl->nnodes == SYNC_MAX_NODES)
        return -1;
    snprintf(cl->nodes[cl->nnodes].host, sizeof cl->nodes[0].host, "%s", host);
    cl->nodes[cl->nnodes].port = port;
    return cl->nnodes++;
}

/* The master's connection, made (and set up) on first use. */
static struct redis_sync *cluster_conn(struct redis_sync *s, int idx)
{
    struct sync_cluster *cl = s->cl;
    char err[320];
    if (cl->nodes[idx].conn && !cl->nodes[idx].conn->errstr[0])
        return cl->nodes[idx].conn;
    redis_sync_free(cl->nodes[idx].conn);
    /* an address announced behind a seed's DNS name: the certificate names the seed (see redis_conn.c) */
    const char *h = cl->nodes[idx].host, *seed = cl->url.hosts[cl->seed].host;
    const char *name = s->ctx && redis_link_is_ip(h) && !redis_link_is_ip(seed) ? seed : NULL;
    cl->nodes[idx].conn = node_connect_as(h, cl->nodes[idx].port, s->ctx, name, cl->timeout_ms, err, sizeof err);
    if (cl->nodes[idx].conn && node_setup(cl->nodes[idx].conn, &cl->url, err, sizeof err) != 0) {
        redis_sync_free(cl->nodes[idx].conn);
        cl->nodes[idx].conn = NULL;
    }
    if (!cl->nodes[idx].conn)
        snprintf(s->errstr, sizeof s->errstr, "%.127s", err);
    return cl->nodes[idx].conn;
}

/* Sends cmd (freed here) to the master of its slot, following MOVED, ASK
 * and TRYAGAIN up to five times. */
static redisReply *cluster_command(struct redis_sync *s, char *cmd, int len)
{
    struct sync_cluster *cl = s->cl;
    const char *key;
    size_t klen;
    int idx = 0;
    bool ask = false;
    redisReply *r = NULL;
    if (len < 0) {
        free(cmd);
        return NULL;
    }
    if (redis_cluster_cmd_key(cmd, (size_t)len, &key, &klen) && cl->slots[redis_cluster_slot(key, klen)])
        idx = cl->slots[redis_cluster_slot(key, klen)] - 1;
    for (int tries = 0; tries < 6; tries++) {
        struct redis_sync *n = cluster_conn(s, idx);
        if (!n)
            break;
        if (ask)
            freeReplyObject(sync_argv(n, 1, (const char *[]){"ASKING"}));
        char *copy = xmalloc((size_t)len);
        memcpy(copy, cmd, (size_t)len);
        r = sync_send(n, copy, len);
        if (!r) {
            snprintf(s->errstr, sizeof s->errstr, "%.40s:%d: %.70s", cl->nodes[idx].host, cl->nodes[idx].port,
                     n->errstr);
            break;
        }
        if (r->type != REDIS_REPLY_ERROR || tries == 5)
            break;
        char host[256];
        int slot, port;
        if (strncmp(r->str, "TRYAGAIN", 8) == 0) {
            poll(NULL, 0, 25);
        } else if (redis_cluster_redirect(r->str, &ask, &slot, host, sizeof host, &port) == 0) {
            int to = cluster_node(cl, host[0] ? host : cl->nodes[idx].host, port);
            if (to < 0)
                break;
            if (!ask)
                cl->slots[slot] = (unsigned char)(to + 1);
            idx = to;
        } else {
            break;
        }
        freeReplyObject(r);
        r = NULL;
    }
    free(cmd);
    return r;
}

/* Asks the seeds in turn for the slot map: the router, or NULL with err. */
static struct redis_sync *cluster_connect(const struct redis_url *u, SSL_CTX *ctx, int timeout_ms, char *err,
                                          size_t errlen)
{
    char last[320] = "no seed";
    for (int i = 0; i < u->nhosts; i++) {
        struct redis_sync *seed = node_connect(u->hosts[i].host, u->hosts[i].port, ctx, timeout_ms, last, sizeof last);
        if (!seed)
            continue;
        if (node_setup(seed, u, err, errlen) != 0) { /* a wrong password is wrong on every seed */
            redis_sync_free(seed);
            return NULL;
        }
        redisReply *r = sync_argv(seed, 2, (const char *[]){"CLUSTER", "SLOTS"});
        struct redis_sync *s = xcalloc(1, sizeof *s);
        s->fd = -1;
        s->cl = xcalloc(1, sizeof *s->cl);
        s->cl->url = *u;
        s->cl->timeout_ms = timeout_ms;
        s->cl->seed = i;
        if (ctx) {
            SSL_CTX_up_ref(ctx);
            s->ctx = ctx;
        }
        struct redis_cluster_range *ranges = NULL;
        int n = -1;
        if (r && r->type == REDIS_REPLY_ARRAY) {
            ranges = xcalloc(r->elements ? r->elements : 1, sizeof *ranges);
            n = redis_cluster_parse_slots(r, u->hosts[i].host, ranges, (int)r->elements);
        }
        for (int k = 0; k < n; k++) {
            int idx = cluster_node(s->cl, ranges[k].host, ranges[k].port);
            if (idx >= 0)
                memset(s->cl->slots + ranges[k].from, idx + 1, (size_t)(ranges[k].to - ranges[k].from + 1));
        }
        free(ranges);
        if (n > 0 && s->cl->nnodes > 0) {
            freeReplyObject(r);
            redis_sync_free(seed);
            return s;
        }
        snprintf(last, sizeof last, "%s:%d: %s", u->hosts[i].host, u->hosts[i].port,
                 !r                             ? "connection lost"
                 : r->type == REDIS_REPLY_ERROR ? r->str
                 : n == 0                       ? "the cluster serves no slot"
                                                : "unexpected reply to CLUSTER SLOTS");
        freeReplyObject(r);
        redis_sync_free(seed);
        redis_sync_free(s);
    }
    err_set(err, errlen, "no cluster seed node gave the slot map (last: %s)", last);
    return NULL;
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
    if (u.cluster) {
        s = cluster_connect(&u, ctx, timeout_ms, err, errlen);
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
