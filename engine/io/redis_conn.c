/* One Redis connection with reconnect, over redis_link; see redis_conn.h.
 *
 * Lifecycle: [Sentinel: RESOLVING — ask each sentinel in turn for the
 * master of SERVICE, then watch +switch-master on that sentinel] ->
 * CONNECTING (TCP, then TLS) -> SETUP: AUTH, SELECT, [Sentinel: ROLE],
 * SCRIPT LOAD and SUBSCRIBE are pipelined -> READY (the on-ready listeners
 * run then): at once for one node, as hiredis's connect callback did; with
 * Sentinel once every setup reply is in. Any failure — a setup error, a
 * lost connection, the PING watchdog, +switch-master, a READONLY reply —
 * closes the connection (pending callbacks get NULL) and arms a reconnect
 * with exponential backoff up to 2 s; with Sentinel every reconnect asks
 * the sentinels again. */
#include "redis_conn.h"

#include <ctype.h>
#include <event2/event.h>
#include <hiredis.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "redis_link.h"
#include "url.h"
#include "xmalloc.h"

#define MAX_SCRIPTS 16
#define MAX_CHANNELS 8
#define MAX_LISTENERS 8
#define CONNECT_TICKS 5 /* ping-timer seconds a connection may take to become ready */

struct subscription {
    char *channel;
    redis_message_fn fn;
    void *arg;
};

struct redis_conn {
    struct event_base *base;
    char *name;
    struct redis_url url; /* holds the password: wiped on free */
    char *sentinel_password;
    SSL_CTX *tls;   /* rediss: one context for the data node and the sentinels */
    char host[256]; /* the node in use: the URL's, or the master Sentinel named */
    int port;
    struct redis_link link; /* the data node */
    struct redis_link sent; /* Sentinel: resolving, then watching +switch-master */
    bool resolving;
    int sidx, stried; /* the sentinel asked now, and how many this round */
    int setup_pending;
    bool ready;
    bool freeing;
    struct event *reconnect_ev;
    struct event *ping_ev;
    int backoff_ms;
    int pings_outstanding;
    int connect_ticks, sent_ticks;
    char last_err[256]; /* the last failure logged at error level: repeats go to debug */
    struct {
        redis_event_fn fn;
        void *arg;
    } on_ready[MAX_LISTENERS];
    int non_ready;
    const struct redis_script *scripts[MAX_SCRIPTS];
    int nscripts;
    struct subscription subs[MAX_CHANNELS];
    int nsubs;
};

void redis_script_init(struct redis_script *s, const char *name, const char *body, size_t len)
{
    unsigned char md[SHA_DIGEST_LENGTH];
    s->name = name;
    s->body = body;
    s->len = len;
    SHA1((const unsigned char *)body, len, md);
    for (int i = 0; i < SHA_DIGEST_LENGTH; i++)
        snprintf(s->sha + 2 * i, 3, "%02x", md[i]);
}

/* The schemes: plain or TLS, one node or Sentinel. Redis Cluster
 * (redis+cluster://) is not supported yet and is refused by name. */
static int take_scheme(const char *url, struct redis_url *out, const char **rest, char *err, size_t errlen)
{
    static const struct {
        const char *prefix;
        bool tls, sentinel;
    } schemes[] = {
        {"redis://", false, false},
        {"rediss://", true, false},
        {"redis+sentinel://", false, true},
        {"rediss+sentinel://", true, true},
    };
    for (size_t i = 0; url && i < sizeof schemes / sizeof schemes[0]; i++) {
        size_t n = strlen(schemes[i].prefix);
        if (strncmp(url, schemes[i].prefix, n) == 0) {
            out->tls = schemes[i].tls;
            out->sentinel = schemes[i].sentinel;
            *rest = url + n;
            return 0;
        }
    }
    if (url && (strncmp(url, "redis+cluster://", 16) == 0 || strncmp(url, "rediss+cluster://", 17) == 0)) {
        snprintf(err, errlen, "redis URL: Redis Cluster (redis+cluster://) is not supported yet");
        return -1;
    }
    const char *sep = url ? strstr(url, "://") : NULL;
    snprintf(err, errlen,
             "redis URL must start with redis://, rediss://, redis+sentinel:// or rediss+sentinel:// (%s%.*s%s)",
             sep ? "scheme '" : "no scheme", sep ? (int)(sep - url > 20 ? 20 : sep - url) : 0, sep ? url : "",
             sep ? "' is unknown" : "");
    return -1;
}

/* Credentials are percent-decoded; a userinfo without ':' is the password
 * (Redis before 6 had no users). */
static void take_credentials(const struct url *u, struct redis_url *out)
{
    if (u->has_password) {
        snprintf(out->user, sizeof out->user, "%s", u->user);
        snprintf(out->password, sizeof out->password, "%s", u->password);
    } else {
        snprintf(out->password, sizeof out->password, "%s", u->user);
    }
}

static int take_db(const char *p, struct redis_url *out, char *err, size_t errlen)
{
    char *end;
    long db = strtol(p, &end, 10);
    if (!isdigit((unsigned char)p[0]) || *end || db < 0 || db > 1000) {
        snprintf(err, errlen, "redis URL has a bad database number");
        return -1;
    }
    out->db = (int)db;
    return 0;
}

static int redis_url_take(const struct url *u, struct redis_url *out, char *err, size_t errlen)
{
    if (u->has_fragment || strchr(u->target, '?')) {
        snprintf(err, errlen, "redis URL has unexpected text after the host");
        return -1;
    }
    snprintf(out->host, sizeof out->host, "%s", u->host);
    out->port = u->port > 0 ? u->port : 6379;
    take_credentials(u, out);
    const char *p = u->target;
    if (*p == '/' && p[1])
        return take_db(p + 1, out, err, errlen);
    return 0;
}

/* "/SERVICE[/db]" */
static int take_service(const char *path, struct redis_url *out, char *err, size_t errlen)
{
    if (*path != '/' || !path[1] || path[1] == '/') {
        snprintf(err, errlen, "redis sentinel URL needs the master's service name (…/SERVICE[/db])");
        return -1;
    }
    const char *name = path + 1, *slash = strchr(name, '/');
    size_t n = slash ? (size_t)(slash - name) : strlen(name);
    if (n >= sizeof out->service) {
        snprintf(err, errlen, "redis sentinel URL: the service name is longer than %zu bytes",
                 sizeof out->service - 1);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (!isalnum(ch) && ch != '-' && ch != '_' && ch != '.') {
            snprintf(err, errlen, "redis sentinel URL: the service name may hold letters, digits, '-', '_' and '.'");
            return -1;
        }
    }
    memcpy(out->service, name, n);
    out->service[n] = '\0';
    return slash ? take_db(slash + 1, out, err, errlen) : 0;
}

/* One sentinel "host[:port]" of the list, through the one URL parser. */
static int take_sentinel(const char *hp, size_t len, struct redis_url *out, char *err, size_t errlen)
{
    char buf[300], why[256];
    struct url u;
    if (len == 0) {
        snprintf(err, errlen, "redis sentinel URL has an empty host in its host list");
        return -1;
    }
    if (out->nhosts == REDIS_URL_MAX_HOSTS) {
        snprintf(err, errlen, "redis sentinel URL has more than %d hosts", REDIS_URL_MAX_HOSTS);
        return -1;
    }
    if (len + 9 >= sizeof buf) {
        snprintf(err, errlen, "redis sentinel URL: a host is too long");
        return -1;
    }
    snprintf(buf, sizeof buf, "redis://%.*s", (int)len, hp);
    if (url_parse(buf, &u, why, sizeof why) != 0) {
        snprintf(err, errlen, "redis sentinel URL, host %d: %s", out->nhosts + 1, why);
        return -1;
    }
    snprintf(out->hosts[out->nhosts].host, sizeof out->hosts[0].host, "%s", u.host);
    out->hosts[out->nhosts].port = u.port > 0 ? u.port : 26379;
    out->nhosts++;
    return 0;
}

/* [userinfo@]h1[:p1][,h2[:p2]…]/SERVICE[/db]: the list is split here, the
 * credentials and the path go through url_parse with the first host. */
static int parse_sentinel(const char *rest, struct redis_url *out, char *err, size_t errlen)
{
    const char *slash = strchr(rest, '/');
    const char *auth_end = slash ? slash : rest + strlen(rest);
    const char *at = NULL;
    for (const char *p = rest; p < auth_end; p++)
        if (*p == '@')
            at = p;
    const char *hosts = at ? at + 1 : rest;
    if (hosts == auth_end) {
        snprintf(err, errlen, "redis sentinel URL has an empty host list");
        return -1;
    }
    for (const char *p = hosts; p <= auth_end;) {
        const char *comma = memchr(p, ',', (size_t)(auth_end - p));
        const char *stop = comma ? comma : auth_end;
        if (take_sentinel(p, (size_t)(stop - p), out, err, errlen) != 0)
            return -1;
        p = stop + 1;
    }
    /* credentials and path: "redis://userinfo@<first host>/path" */
    char *one = xasprintf("redis://%.*s%s%s", at ? (int)(at - rest + 1) : 0, rest, "localhost", slash ? slash : "");
    struct url u;
    char why[256];
    int rc = url_parse(one, &u, why, sizeof why);
    OPENSSL_cleanse(one, strlen(one));
    free(one);
    if (rc != 0) {
        snprintf(err, errlen, "redis sentinel URL: %s", why);
        return -1;
    }
    if (u.has_fragment || strchr(u.target, '?')) {
        snprintf(err, errlen, "redis URL has unexpected text after the host");
        url_wipe(&u);
        return -1;
    }
    take_credentials(&u, out);
    rc = take_service(u.target, out, err, errlen);
    url_wipe(&u);
    if (rc == 0) {
        snprintf(out->host, sizeof out->host, "%s", out->hosts[0].host);
        out->port = out->hosts[0].port;
    }
    return rc;
}

int redis_url_parse(const char *url, struct redis_url *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *rest;
    if (take_scheme(url, out, &rest, err, errlen) != 0)
        return -1;
    int rc;
    if (out->sentinel) {
        rc = parse_sentinel(rest, out, err, errlen);
    } else {
        struct url u;
        char why[256];
        /* url_parse sees redis:// whatever the scheme: what differs is ours */
        char *plain = xasprintf("redis://%s", rest);
        rc = url_parse(plain, &u, why, sizeof why);
        OPENSSL_cleanse(plain, strlen(plain));
        free(plain);
        if (rc != 0) {
            snprintf(err, errlen, "redis URL: %s%s", why,
                     strstr(why, "host list") ? " (for Sentinel: redis+sentinel://h1:p1,h2:p2/SERVICE)" : "");
            return -1;
        }
        rc = redis_url_take(&u, out, err, errlen);
        url_wipe(&u);
    }
    if (rc != 0) {
        bool tls = out->tls, sentinel = out->sentinel;
        OPENSSL_cleanse(out, sizeof *out);
        out->tls = tls, out->sentinel = sentinel;
    }
    return rc;
}

/* ---- failures, logged once -------------------------------------------- */

/* An error-level line for a failure that differs from the last one; the
 * same failure again (every backoff step) goes to debug. */
static void report(struct redis_conn *rc, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report(struct redis_conn *rc, const char *event, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (strncmp(msg, rc->last_err, sizeof rc->last_err - 1) == 0) {
        log_debug(event, "conn=%s %s", rc->name, msg);
        return;
    }
    snprintf(rc->last_err, sizeof rc->last_err, "%.255s", msg);
    log_error(event, "conn=%s %s", rc->name, msg);
}

static void schedule_reconnect(struct redis_conn *rc, int delay_ms)
{
    if (rc->freeing)
        return;
    if (delay_ms < 0) {
        rc->backoff_ms = rc->backoff_ms ? (rc->backoff_ms * 2 > 2000 ? 2000 : rc->backoff_ms * 2) : 50;
        delay_ms = rc->backoff_ms;
    }
    struct timeval tv = {delay_ms / 1000, (delay_ms % 1000) * 1000};
    evtimer_add(rc->reconnect_ev, &tv);
}

/* Closes the data connection (pending callbacks get NULL) and, with
 * Sentinel, the sentinel one: the next connect asks the sentinels again. */
static void drop(struct redis_conn *rc, const char *why, int delay_ms)
{
    if (rc->ready)
        log_warn("redis.down", "conn=%s addr=%s:%d error=\"%s\"", rc->name, rc->host, rc->port, why);
    rc->ready = false;
    rc->setup_pending = 0;
    redis_link_close(&rc->link);
    if (rc->url.sentinel) {
        redis_link_close(&rc->sent);
        rc->resolving = false;
    }
    schedule_reconnect(rc, delay_ms);
}

/* ---- the data node: connect, set up, ready ------------------------------ */

static void become_ready(struct redis_conn *rc)
{
    rc->ready = true;
    rc->backoff_ms = 0;
    rc->pings_outstanding = 0;
    rc->connect_ticks = 0;
    rc->last_err[0] = '\0';
    log_info("redis.up", "conn=%s addr=%s:%d%s", rc->name, rc->host, rc->port, rc->url.tls ? " tls=1" : "");
    for (int i = 0; i < rc->non_ready; i++)
        rc->on_ready[i].fn(rc->on_ready[i].arg);
}

static void log_command_error(struct redis_conn *rc, const char *command, const char *error)
{
    if (strncmp(error, "NOPERM", 6) == 0)
        report(rc, "redis.noperm", "command=%s error=\"%s\" (the Redis user lacks a command hookd needs: see README)",
               command, error);
    else if (strncmp(error, "WRONGPASS", 9) == 0 || strncmp(error, "NOAUTH", 6) == 0 ||
             strncmp(error, "ERR AUTH", 8) == 0 || strstr(error, "invalid password"))
        report(rc, "redis.auth_failed", "user=%s error=\"%s\"", rc->url.user[0] ? rc->url.user : "default", error);
    else
        report(rc, "redis.setup_failed", "step=%s error=\"%s\"", command, error);
}

/* A setup reply: arg is the step's name. The last one makes the
 * connection ready; an error drops it. */
static void on_setup_reply(struct redis_link *l, redisReply *reply, void *arg)
{
    struct redis_conn *rc = l->arg;
    if (!reply)
        return;
    if (reply->type == REDIS_REPLY_ERROR) {
        log_command_error(rc, arg, reply->str);
        drop(rc, reply->str, -1);
        return;
    }
    if (rc->setup_pending > 0 && --rc->setup_pending == 0 && !rc->ready)
        become_ready(rc);
}

/* Sentinel: the node the sentinels named must say it is the master. */
static void on_role(struct redis_link *l, redisReply *reply, void *arg)
{
    struct redis_conn *rc = l->arg;
    if (reply && reply->type == REDIS_REPLY_ARRAY && reply->elements > 0 &&
        reply->element[0]->type == REDIS_REPLY_STRING && strcmp(reply->element[0]->str, "master") != 0) {
        log_warn("redis.not_master", "conn=%s addr=%s:%d role=%s", rc->name, rc->host, rc->port,
                 reply->element[0]->str);
        drop(rc, "not the master", -1);
        return;
    }
    on_setup_reply(l, reply, arg);
}

static void setup_cmd(struct redis_conn *rc, redis_link_reply_fn fn, const char *step, int argc, const char **argv,
                      const size_t *lens)
{
    if (redis_link_argv(&rc->link, fn, (void *)step, argc, argv, lens) == 0)
        rc->setup_pending++;
}

static void setup(struct redis_conn *rc)
{
    char db[16];
    rc->setup_pending = 1; /* held until everything is queued */
    if (rc->url.password[0] && rc->url.user[0])
        setup_cmd(rc, on_setup_reply, "AUTH", 3, (const char *[]){"AUTH", rc->url.user, rc->url.password}, NULL);
    else if (rc->url.password[0])
        setup_cmd(rc, on_setup_reply, "AUTH", 2, (const char *[]){"AUTH", rc->url.password}, NULL);
    if (rc->url.db) {
        snprintf(db, sizeof db, "%d", rc->url.db);
        setup_cmd(rc, on_setup_reply, "SELECT", 2, (const char *[]){"SELECT", db}, NULL);
    }
    if (rc->url.sentinel)
        setup_cmd(rc, on_role, "ROLE", 1, (const char *[]){"ROLE"}, NULL);
    for (int i = 0; i < rc->nscripts; i++)
        setup_cmd(rc, on_setup_reply, "SCRIPT LOAD", 3, (const char *[]){"SCRIPT", "LOAD", rc->scripts[i]->body},
                  (const size_t[]){6, 4, rc->scripts[i]->len});
    for (int i = 0; i < rc->nsubs; i++)
        redis_link_subscribe(&rc->link, rc->subs[i].channel);
    /* One node: ready at once, the setup pipelined ahead of every command
     * (a setup error drops the connection). Sentinel: only once ROLE said
     * master, so nothing is written to a replica. */
    if (--rc->setup_pending == 0 || !rc->url.sentinel)
        become_ready(rc);
}

static void on_link_state(struct redis_link *l, enum redis_link_state state, const char *why, void *arg)
{
    (void)l;
    struct redis_conn *rc = arg;
    switch (state) {
    case REDIS_LINK_UP: setup(rc); return;
    case REDIS_LINK_TLS_FAILED:
        report(rc, "redis.tls_failed", "addr=%s:%d error=\"%s\"", rc->host, rc->port, why);
        break;
    case REDIS_LINK_FAILED:
        log_debug("redis.connect_failed", "conn=%s addr=%s:%d error=\"%s\"", rc->name, rc->host, rc->port, why);
        break;
    case REDIS_LINK_LOST: break;
    }
    drop(rc, why, -1);
}

static void on_link_push(struct redis_link *l, redisReply *r, void *arg)
{
    (void)l;
    struct redis_conn *rc = arg;
    if (r->elements != 3 || strcmp(r->element[0]->str, "message") != 0 || r->element[1]->type != REDIS_REPLY_STRING)
        return;
    redisReply *msg = r->element[2];
    for (int i = 0; i < rc->nsubs; i++)
        if (strcmp(rc->subs[i].channel, r->element[1]->str) == 0)
            rc->subs[i].fn(r->element[1]->str, msg->str ? msg->str : "", msg->str ? msg->len : 0, rc->subs[i].arg);
}

static void open_node(struct redis_conn *rc)
{
    char err[256];
    rc->connect_ticks = 0;
    if (redis_link_open(&rc->link, rc->host, rc->port, rc->tls, err, sizeof err) != 0) {
        log_debug("redis.connect_failed", "conn=%s error=\"%s\"", rc->name, err);
        drop(rc, err, -1);
    }
}

/* ---- Sentinel -------------------------------------------------------------- */

static void sentinel_next(struct redis_conn *rc, const char *why)
{
    log_debug("redis.sentinel_failed", "conn=%s sentinel=%s:%d error=\"%s\"", rc->name, rc->url.hosts[rc->sidx].host,
              rc->url.hosts[rc->sidx].port, why);
    redis_link_close(&rc->sent);
    rc->resolving = false;
    rc->sidx = (rc->sidx + 1) % rc->url.nhosts;
    if (++rc->stried < rc->url.nhosts) {
        schedule_reconnect(rc, 0);
        return;
    }
    rc->stried = 0;
    report(rc, "redis.sentinel_unavailable", "service=%s error=\"no sentinel named the master (last: %s)\"",
           rc->url.service, why);
    schedule_reconnect(rc, -1);
}

static void on_master_addr(struct redis_link *l, redisReply *r, void *arg)
{
    (void)arg;
    struct redis_conn *rc = l->arg;
    if (!r)
        return;
    if (r->type == REDIS_REPLY_NIL)
        return sentinel_next(rc, "the sentinel does not know the service");
    if (r->type == REDIS_REPLY_ERROR)
        return sentinel_next(rc, r->str);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return sentinel_next(rc, "unexpected reply to SENTINEL get-master-addr-by-name");
    const char *host = r->element[0]->str;
    int port = atoi(r->element[1]->str);
    rc->resolving = false;
    rc->stried = 0;
    if (redis_link_subscribe(&rc->sent, "+switch-master") != 0)
        return sentinel_next(rc, "cannot subscribe to +switch-master");
    if (rc->link.bev && strcmp(host, rc->host) == 0 && port == rc->port)
        return; /* the sentinel link came back; the master did not change */
    if (rc->link.bev)
        return drop(rc, "the master moved", 0); /* and ask again */
    log_info("redis.master", "conn=%s service=%s addr=%s:%d", rc->name, rc->url.service, host, port);
    snprintf(rc->host, sizeof rc->host, "%s", host);
    rc->port = port;
    open_node(rc);
}

static void on_sentinel_auth(struct redis_link *l, redisReply *r, void *arg)
{
    (void)arg;
    struct redis_conn *rc = l->arg;
    if (r && r->type == REDIS_REPLY_ERROR) {
        report(rc, "redis.sentinel_auth_failed", "sentinel=%s:%d error=\"%s\"", rc->url.hosts[rc->sidx].host,
               rc->url.hosts[rc->sidx].port, r->str);
        sentinel_next(rc, r->str);
    }
}

static void on_sent_state(struct redis_link *l, enum redis_link_state state, const char *why, void *arg)
{
    struct redis_conn *rc = arg;
    if (state == REDIS_LINK_UP) {
        if (rc->sentinel_password)
            redis_link_argv(l, on_sentinel_auth, NULL, 2, (const char *[]){"AUTH", rc->sentinel_password}, NULL);
        const char *argv[] = {"SENTINEL", "get-master-addr-by-name", rc->url.service};
        if (redis_link_argv(l, on_master_addr, NULL, 3, argv, NULL) != 0)
            sentinel_next(rc, "cannot send");
        return;
    }
    if (state == REDIS_LINK_TLS_FAILED)
        report(rc, "redis.tls_failed", "sentinel=%s:%d error=\"%s\"", rc->url.hosts[rc->sidx].host,
               rc->url.hosts[rc->sidx].port, why);
    if (rc->resolving)
        return sentinel_next(rc, why);
    /* The watching sentinel went away: ask again (the node stays if the
     * master is the same). */
    log_info("redis.sentinel_lost", "conn=%s error=\"%s\"", rc->name, why);
    rc->sidx = (rc->sidx + 1) % rc->url.nhosts;
    schedule_reconnect(rc, -1);
}

/* "+switch-master SERVICE old-ip old-port new-ip new-port" */
static void on_sent_push(struct redis_link *l, redisReply *r, void *arg)
{
    (void)l;
    struct redis_conn *rc = arg;
    if (r->elements != 3 || strcmp(r->element[0]->str, "message") != 0 || r->element[2]->type != REDIS_REPLY_STRING)
        return;
    const char *m = r->element[2]->str;
    size_t n = strlen(rc->url.service);
    if (strncmp(m, rc->url.service, n) != 0 || m[n] != ' ')
        return;
    log_warn("redis.switch_master", "conn=%s service=%s change=\"%s\"", rc->name, rc->url.service, m + n + 1);
    drop(rc, "+switch-master", 0);
}

static void resolve(struct redis_conn *rc)
{
    char err[256];
    redis_link_close(&rc->sent);
    rc->resolving = true;
    rc->sent_ticks = 0;
    const char *h = rc->url.hosts[rc->sidx].host;
    int port = rc->url.hosts[rc->sidx].port;
    if (redis_link_open(&rc->sent, h, port, rc->tls, err, sizeof err) != 0)
        sentinel_next(rc, err);
}

static void on_reconnect_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct redis_conn *rc = arg;
    if (rc->url.sentinel)
        resolve(rc);
    else
        open_node(rc);
}

static void on_pong(struct redis_link *l, redisReply *r, void *arg)
{
    (void)arg;
    struct redis_conn *rc = l->arg;
    if (r)
        rc->pings_outstanding = 0;
}

/* Liveness: a server that accepts the TCP connection but stops answering
 * (SIGSTOP, a hung host) would otherwise leave commands waiting forever;
 * a connection (or a TLS handshake, or a sentinel) that never completes is
 * given up after CONNECT_TICKS seconds. */
static void on_ping_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct redis_conn *rc = arg;
    if (rc->resolving && rc->sent.bev && ++rc->sent_ticks >= CONNECT_TICKS)
        return sentinel_next(rc, "timeout");
    if (!rc->ready) {
        if (rc->link.bev && ++rc->connect_ticks >= CONNECT_TICKS) {
            report(rc, "redis.connect_timeout", "addr=%s:%d", rc->host, rc->port);
            drop(rc, "timeout", -1);
        }
        return;
    }
    if (rc->nsubs > 0)
        return;
    if (rc->pings_outstanding >= 3) {
        log_warn("redis.unresponsive", "conn=%s", rc->name);
        drop(rc, "no answer to PING", -1);
        return;
    }
    rc->pings_outstanding++;
    redis_link_argv(&rc->link, on_pong, NULL, 1, (const char *[]){"PING"}, NULL);
}

struct redis_conn *redis_conn_new(struct event_base *base, const char *url, const struct redis_options *opts,
                                  const char *name, char *err, size_t errlen)
{
    struct redis_conn *rc = xcalloc(1, sizeof *rc);
    rc->base = base;
    rc->name = xstrdup(name);
    if (redis_url_parse(url, &rc->url, err, errlen) != 0)
        goto fail;
    if (rc->url.tls) {
        struct redis_tls_files f = {opts ? opts->ca_file : NULL, opts ? opts->cert_file : NULL,
                                    opts ? opts->key_file : NULL};
        rc->tls = redis_link_tls_ctx(&f, err, errlen);
        if (!rc->tls)
            goto fail;
    }
    if (opts && opts->sentinel_password && opts->sentinel_password[0])
        rc->sentinel_password = xstrdup(opts->sentinel_password);
    snprintf(rc->host, sizeof rc->host, "%s", rc->url.host);
    rc->port = rc->url.port;
    redis_link_init(&rc->link, base, on_link_state, on_link_push, rc);
    redis_link_init(&rc->sent, base, on_sent_state, on_sent_push, rc);
    rc->reconnect_ev = evtimer_new(base, on_reconnect_timer, rc);
    rc->ping_ev = event_new(base, -1, EV_PERSIST, on_ping_timer, rc);
    struct timeval tv = {1, 0};
    event_add(rc->ping_ev, &tv);
    on_reconnect_timer(-1, 0, rc);
    return rc;
fail:
    OPENSSL_cleanse(&rc->url, sizeof rc->url);
    free(rc->name);
    free(rc);
    return NULL;
}

void redis_conn_free(struct redis_conn *rc)
{
    if (!rc)
        return;
    rc->freeing = true;
    rc->ready = false;
    redis_link_release(&rc->link); /* pending callbacks run with NULL replies */
    redis_link_release(&rc->sent);
    event_free(rc->reconnect_ev);
    event_free(rc->ping_ev);
    SSL_CTX_free(rc->tls);
    for (int i = 0; i < rc->nsubs; i++)
        free(rc->subs[i].channel);
    if (rc->sentinel_password)
        OPENSSL_cleanse(rc->sentinel_password, strlen(rc->sentinel_password));
    free(rc->sentinel_password);
    OPENSSL_cleanse(&rc->url, sizeof rc->url);
    free(rc->name);
    free(rc);
}

bool redis_conn_ready(const struct redis_conn *rc)
{
    return rc && rc->ready;
}

void redis_conn_on_ready(struct redis_conn *rc, redis_event_fn fn, void *arg)
{
    HOOKD_ASSERT(rc->non_ready < MAX_LISTENERS);
    rc->on_ready[rc->non_ready].fn = fn;
    rc->on_ready[rc->non_ready].arg = arg;
    rc->non_ready++;
}

void redis_conn_off_ready(struct redis_conn *rc, redis_event_fn fn, void *arg)
{
    for (int i = 0; rc && i < rc->non_ready; i++) {
        if (rc->on_ready[i].fn == fn && rc->on_ready[i].arg == arg) {
            rc->on_ready[i] = rc->on_ready[--rc->non_ready];
            return;
        }
    }
}

static void on_late_load(struct redis_link *l, redisReply *reply, void *arg)
{
    if (reply && reply->type == REDIS_REPLY_ERROR)
        log_command_error(l->arg, arg, reply->str);
}

static void send_script_load(struct redis_conn *rc, const struct redis_script *s)
{
    redis_link_argv(&rc->link, on_late_load, (void *)"SCRIPT LOAD", 3, (const char *[]){"SCRIPT", "LOAD", s->body},
                    (const size_t[]){6, 4, s->len});
}

void redis_conn_add_script(struct redis_conn *rc, const struct redis_script *s)
{
    HOOKD_ASSERT(rc->nscripts < MAX_SCRIPTS);
    rc->scripts[rc->nscripts++] = s;
    if (rc->ready)
        send_script_load(rc, s);
}

void redis_conn_subscribe(struct redis_conn *rc, const char *channel, redis_message_fn fn, void *arg)
{
    HOOKD_ASSERT(rc->nsubs < MAX_CHANNELS);
    struct subscription *s = &rc->subs[rc->nsubs++];
    s->channel = xstrdup(channel);
    s->fn = fn;
    s->arg = arg;
    if (rc->ready)
        redis_link_subscribe(&rc->link, s->channel);
}

/* ---- commands ---------------------------------------------------------------- */

/* A command in flight: the caller's callback and the command's name (for
 * NOPERM logs); for scripts, the formatted EVALSHA, so a NOSCRIPT reply can
 * be answered by loading the script and sending it again. */
struct call {
    redis_reply_fn cb;
    void *arg;
    const struct redis_script *script;
    bool reloaded;
    char *cmd;
    size_t len;
    char name[16];
};

static void call_name(struct call *c, const char *s, size_t len)
{
    size_t n = 0;
    while (n < len && n < sizeof c->name - 1 && s[n] != ' ') {
        c->name[n] = (char)toupper((unsigned char)s[n]);
        n++;
    }
    c->name[n] = '\0';
}

static void on_reply(struct redis_link *l, redisReply *reply, void *arg)
{
    struct call *c = arg;
    struct redis_conn *rc = l->arg;
    bool readonly = false;
    if (reply && reply->type == REDIS_REPLY_ERROR) {
        if (c->script && !c->reloaded && strncmp(reply->str, "NOSCRIPT", 8) == 0) {
            /* Redis restarted or SCRIPT FLUSH: load it again, then re-send.
             * The two commands are pipelined, so EVALSHA runs after the load. */
            c->reloaded = true;
            log_info("redis.script_reload", "script=%s", c->script->name);
            send_script_load(rc, c->script);
            if (redis_link_raw(l, on_reply, c, c->cmd, c->len) == 0)
                return;
            reply = NULL;
        } else if (strncmp(reply->str, "NOPERM", 6) == 0) {
            log_command_error(rc, c->name, reply->str);
        } else if (strncmp(reply->str, "READONLY", 8) == 0) {
            readonly = true;
        }
    }
    if (c->cb)
        c->cb(reply, c->arg);
    free(c->cmd);
    free(c);
    if (readonly && rc->ready && !rc->freeing) {
        /* A replica: the master moved (Sentinel) or was demoted. */
        log_warn("redis.readonly", "conn=%s addr=%s:%d", rc->name, rc->host, rc->port);
        drop(rc, "READONLY", 0);
    }
}

int redis_conn_cmd(struct redis_conn *rc, redis_reply_fn cb, void *arg, int argc, const char **argv,
                   const size_t *argvlen)
{
    if (!rc || !rc->ready || argc < 1)
        return -1;
    struct call *c = xcalloc(1, sizeof *c);
    c->cb = cb;
    c->arg = arg;
    call_name(c, argv[0], argvlen ? argvlen[0] : strlen(argv[0]));
    if (redis_link_argv(&rc->link, on_reply, c, argc, argv, argvlen) != 0) {
        free(c);
        return -1;
    }
    return 0;
}

int redis_conn_cmdf(struct redis_conn *rc, redis_reply_fn cb, void *arg, const char *fmt, ...)
{
    if (!rc || !rc->ready)
        return -1;
    char *cmd = NULL;
    va_list ap;
    va_start(ap, fmt);
    int len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    if (len < 0)
        return -1;
    struct call *c = xcalloc(1, sizeof *c);
    c->cb = cb;
    c->arg = arg;
    call_name(c, fmt, strlen(fmt));
    if (redis_link_take(&rc->link, on_reply, c, cmd, (size_t)len) != 0) { /* frees cmd */
        free(c);
        return -1;
    }
    return 0;
}

int redis_conn_eval(struct redis_conn *rc, const struct redis_script *s, redis_reply_fn cb, void *arg, int nkeys,
                    int argc, const char **argv, const size_t *argvlen)
{
    if (!rc || !rc->ready)
        return -1;
    const char **full = xcalloc((size_t)argc + 3, sizeof *full);
    size_t *lens = xcalloc((size_t)argc + 3, sizeof *lens);
    char nk[16];
    snprintf(nk, sizeof nk, "%d", nkeys);
    full[0] = "EVALSHA", lens[0] = 7;
    full[1] = s->sha, lens[1] = 40;
    full[2] = nk, lens[2] = strlen(nk);
    for (int i = 0; i < argc; i++) {
        full[3 + i] = argv[i];
        lens[3 + i] = argvlen ? argvlen[i] : strlen(argv[i]);
    }
    struct call *c = xcalloc(1, sizeof *c);
    c->cb = cb;
    c->arg = arg;
    c->script = s;
    memcpy(c->name, "EVALSHA", 8);
    long long len = redisFormatCommandArgv(&c->cmd, argc + 3, full, lens);
    free(full);
    free(lens);
    if (len < 0 || redis_link_raw(&rc->link, on_reply, c, c->cmd, (size_t)len) != 0) {
        free(c->cmd);
        free(c);
        return -1;
    }
    c->len = (size_t)len;
    return 0;
}
