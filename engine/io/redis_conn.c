/* hiredis async connection with reconnect; see redis_conn.h.
 *
 * Lifecycle: CONNECTING -> (connect callback) -> AUTH/SELECT/SCRIPT LOAD are
 * queued -> READY. Any disconnect (error, PING watchdog, server gone) frees
 * the hiredis context (hiredis does that after the disconnect callback) and
 * arms a reconnect timer with exponential backoff up to 2 s. */
#include "redis_conn.h"

#include <event2/event.h>
#include <hiredis.h>
#include <async.h>
#include <adapters/libevent.h>
#include <ctype.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "url.h"
#include "xmalloc.h"

#define MAX_SCRIPTS 16
#define MAX_CHANNELS 8
#define MAX_LISTENERS 8

struct subscription {
    char *channel;
    redis_message_fn fn;
    void *arg;
};

struct redis_conn {
    struct event_base *base;
    char *name;
    char host[256];
    int port;
    char *user, *password;
    int db;
    redisAsyncContext *ac;
    bool ready;
    bool freeing;
    struct event *reconnect_ev;
    struct event *ping_ev;
    int backoff_ms;
    int pings_outstanding;
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

/* redis:// policy on top of the one URL parser (url.h). Credentials are
 * percent-decoded; a userinfo without ':' is the password (Redis before 6
 * had no users). */
static int redis_url_take(const struct url *u, struct redis_url *out, char *err, size_t errlen)
{
    if (u->has_fragment || strchr(u->target, '?')) {
        snprintf(err, errlen, "redis URL has unexpected text after the host");
        return -1;
    }
    snprintf(out->host, sizeof out->host, "%s", u->host);
    out->port = u->port > 0 ? u->port : 6379;
    if (u->has_password) {
        snprintf(out->user, sizeof out->user, "%s", u->user);
        snprintf(out->password, sizeof out->password, "%s", u->password);
    } else {
        snprintf(out->password, sizeof out->password, "%s", u->user);
    }
    const char *p = u->target;
    if (*p == '/' && p[1]) {
        char *end;
        long db = strtol(p + 1, &end, 10);
        if (!isdigit((unsigned char)p[1]) || *end || db < 0 || db > 1000) {
            snprintf(err, errlen, "redis URL has a bad database number");
            return -1;
        }
        out->db = (int)db;
    }
    return 0;
}

int redis_url_parse(const char *url, struct redis_url *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!url || strncmp(url, "redis://", 8) != 0) {
        snprintf(err, errlen, "redis URL must start with redis://");
        return -1;
    }
    struct url u;
    char why[256];
    if (url_parse(url, &u, why, sizeof why) != 0) {
        snprintf(err, errlen, "redis URL: %s", why);
        return -1;
    }
    int rc = redis_url_take(&u, out, err, errlen);
    url_wipe(&u);
    if (rc != 0)
        OPENSSL_cleanse(out->password, sizeof out->password);
    return rc;
}

redisContext *redis_connect_sync(const char *url, int timeout_ms, char *err, size_t errlen)
{
    struct redis_url u;
    if (redis_url_parse(url, &u, err, errlen) != 0)
        return NULL;
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(u.host, u.port, tv);
    if (!c || c->err) {
        snprintf(err, errlen, "cannot connect to Redis at %s:%d: %s", u.host, u.port, c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    redisReply *r = NULL;
    if (u.password[0])
        r = u.user[0] ? redisCommand(c, "AUTH %s %s", u.user, u.password) : redisCommand(c, "AUTH %s", u.password);
    if (r && r->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "Redis AUTH failed: %s", r->str);
        freeReplyObject(r);
        redisFree(c);
        return NULL;
    }
    freeReplyObject(r);
    if (u.db) {
        r = redisCommand(c, "SELECT %d", u.db);
        freeReplyObject(r);
    }
    OPENSSL_cleanse(u.password, sizeof u.password);
    return c;
}

static int parse_url(struct redis_conn *rc, const char *url, char *err, size_t errlen)
{
    struct redis_url u;
    if (redis_url_parse(url, &u, err, errlen) != 0)
        return -1;
    snprintf(rc->host, sizeof rc->host, "%s", u.host);
    rc->port = u.port;
    rc->db = u.db;
    rc->user = u.user[0] ? xstrdup(u.user) : NULL;
    rc->password = u.password[0] ? xstrdup(u.password) : NULL;
    OPENSSL_cleanse(u.password, sizeof u.password);
    return 0;
}

static void schedule_reconnect(struct redis_conn *rc)
{
    if (rc->freeing)
        return;
    rc->backoff_ms = rc->backoff_ms ? (rc->backoff_ms * 2 > 2000 ? 2000 : rc->backoff_ms * 2) : 50;
    struct timeval tv = {rc->backoff_ms / 1000, (rc->backoff_ms % 1000) * 1000};
    evtimer_add(rc->reconnect_ev, &tv);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct redis_conn *rc = ac->data;
    if (!rc)
        return;
    if (rc->ready)
        log_warn("redis.down", "conn=%s status=%d error=\"%s\"", rc->name, status, ac->errstr);
    rc->ac = NULL;
    rc->ready = false;
    schedule_reconnect(rc);
}

static void on_setup_reply(redisAsyncContext *ac, void *r, void *priv)
{
    redisReply *reply = r;
    const char *what = priv;
    if (reply && reply->type == REDIS_REPLY_ERROR) {
        log_error("redis.setup_failed", "step=%s error=\"%s\"", what, reply->str);
        redisAsyncDisconnect(ac);
    }
}

static void on_message(redisAsyncContext *ac, void *r, void *priv)
{
    (void)ac;
    redisReply *reply = r;
    struct subscription *s = priv;
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 3)
        return;
    if (reply->element[0]->type != REDIS_REPLY_STRING || strcmp(reply->element[0]->str, "message") != 0)
        return;
    redisReply *msg = reply->element[2];
    s->fn(reply->element[1]->str, msg->str ? msg->str : "", msg->str ? msg->len : 0, s->arg);
}

static void on_connect(const redisAsyncContext *cac, int status)
{
    redisAsyncContext *ac = (redisAsyncContext *)cac;
    struct redis_conn *rc = ac->data;
    if (!rc)
        return;
    if (status != REDIS_OK) {
        log_debug("redis.connect_failed", "conn=%s error=\"%s\"", rc->name, ac->errstr);
        rc->ac = NULL; /* hiredis frees the context after this callback */
        schedule_reconnect(rc);
        return;
    }
    if (rc->password && rc->user)
        redisAsyncCommand(ac, on_setup_reply, "AUTH", "AUTH %s %s", rc->user, rc->password);
    else if (rc->password)
        redisAsyncCommand(ac, on_setup_reply, "AUTH", "AUTH %s", rc->password);
    if (rc->db)
        redisAsyncCommand(ac, on_setup_reply, "SELECT", "SELECT %d", rc->db);
    for (int i = 0; i < rc->nscripts; i++)
        redisAsyncCommand(ac, on_setup_reply, "SCRIPT LOAD", "SCRIPT LOAD %b", rc->scripts[i]->body,
                          rc->scripts[i]->len);
    for (int i = 0; i < rc->nsubs; i++)
        redisAsyncCommand(ac, on_message, &rc->subs[i], "SUBSCRIBE %s", rc->subs[i].channel);
    rc->ready = true;
    rc->backoff_ms = 0;
    rc->pings_outstanding = 0;
    log_info("redis.up", "conn=%s addr=%s:%d", rc->name, rc->host, rc->port);
    for (int i = 0; i < rc->non_ready; i++)
        rc->on_ready[i].fn(rc->on_ready[i].arg);
}

static void connect_now(struct redis_conn *rc)
{
    redisAsyncContext *ac = redisAsyncConnect(rc->host, rc->port);
    if (!ac) {
        schedule_reconnect(rc);
        return;
    }
    if (ac->err) {
        log_debug("redis.connect_failed", "conn=%s error=\"%s\"", rc->name, ac->errstr);
        redisAsyncFree(ac);
        schedule_reconnect(rc);
        return;
    }
    ac->data = rc;
    rc->ac = ac;
    redisLibeventAttach(ac, rc->base);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
}

static void on_reconnect_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    connect_now(arg);
}

static void on_pong(redisAsyncContext *ac, void *r, void *priv)
{
    (void)ac;
    struct redis_conn *rc = priv;
    if (r)
        rc->pings_outstanding = 0;
}

/* Liveness: a server that accepts the TCP connection but stops answering
 * (SIGSTOP, a hung host) would otherwise leave commands waiting forever. */
static void on_ping_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct redis_conn *rc = arg;
    if (!rc->ready || !rc->ac || rc->nsubs > 0)
        return;
    if (rc->pings_outstanding >= 3) {
        log_warn("redis.unresponsive", "conn=%s", rc->name);
        redisAsyncDisconnect(rc->ac);
        return;
    }
    rc->pings_outstanding++;
    redisAsyncCommand(rc->ac, on_pong, rc, "PING");
}

struct redis_conn *redis_conn_new(struct event_base *base, const char *url, const char *name, char *err,
                                  size_t errlen)
{
    struct redis_conn *rc = xcalloc(1, sizeof *rc);
    rc->base = base;
    rc->name = xstrdup(name);
    if (parse_url(rc, url, err, errlen) != 0) {
        free(rc->user);
        free(rc->password);
        free(rc->name);
        free(rc);
        return NULL;
    }
    rc->reconnect_ev = evtimer_new(base, on_reconnect_timer, rc);
    rc->ping_ev = event_new(base, -1, EV_PERSIST, on_ping_timer, rc);
    struct timeval tv = {1, 0};
    event_add(rc->ping_ev, &tv);
    connect_now(rc);
    return rc;
}

void redis_conn_free(struct redis_conn *rc)
{
    if (!rc)
        return;
    rc->freeing = true;
    if (rc->ac) {
        rc->ac->data = NULL;
        redisAsyncFree(rc->ac); /* pending callbacks run with NULL replies */
    }
    event_free(rc->reconnect_ev);
    event_free(rc->ping_ev);
    for (int i = 0; i < rc->nsubs; i++)
        free(rc->subs[i].channel);
    if (rc->password)
        OPENSSL_cleanse(rc->password, strlen(rc->password));
    free(rc->password);
    free(rc->user);
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

void redis_conn_add_script(struct redis_conn *rc, const struct redis_script *s)
{
    HOOKD_ASSERT(rc->nscripts < MAX_SCRIPTS);
    rc->scripts[rc->nscripts++] = s;
    if (rc->ready)
        redisAsyncCommand(rc->ac, on_setup_reply, "SCRIPT LOAD", "SCRIPT LOAD %b", s->body, s->len);
}

void redis_conn_subscribe(struct redis_conn *rc, const char *channel, redis_message_fn fn, void *arg)
{
    HOOKD_ASSERT(rc->nsubs < MAX_CHANNELS);
    struct subscription *s = &rc->subs[rc->nsubs++];
    s->channel = xstrdup(channel);
    s->fn = fn;
    s->arg = arg;
    if (rc->ready)
        redisAsyncCommand(rc->ac, on_message, s, "SUBSCRIBE %s", s->channel);
}

/* A command in flight: the user's callback, plus (for scripts) a copy of the
 * arguments so a NOSCRIPT reply can be answered by loading and re-sending. */
struct call {
    struct redis_conn *rc;
    redis_reply_fn cb;
    void *arg;
    const struct redis_script *script;
    bool reloaded;
    int argc;
    char **argv;
    size_t *argvlen;
};

static void call_free(struct call *c)
{
    for (int i = 0; i < c->argc; i++)
        free(c->argv[i]);
    free(c->argv);
    free(c->argvlen);
    free(c);
}

static void on_reply(redisAsyncContext *ac, void *r, void *priv)
{
    struct call *c = priv;
    redisReply *reply = r;
    if (reply && c->script && !c->reloaded && reply->type == REDIS_REPLY_ERROR &&
        strncmp(reply->str, "NOSCRIPT", 8) == 0 && ac && !(ac->c.flags & REDIS_DISCONNECTING)) {
        /* Redis restarted or SCRIPT FLUSH: load it again, then re-send. The
         * two commands are pipelined, so EVALSHA runs after the load. */
        c->reloaded = true;
        log_info("redis.script_reload", "script=%s", c->script->name);
        redisAsyncCommand(ac, on_setup_reply, "SCRIPT LOAD", "SCRIPT LOAD %b", c->script->body, c->script->len);
        if (redisAsyncCommandArgv(ac, on_reply, c, c->argc, (const char **)c->argv, c->argvlen) == REDIS_OK)
            return;
        reply = NULL;
    }
    if (c->cb)
        c->cb(reply, c->arg);
    call_free(c);
}

static int send_call(struct redis_conn *rc, redis_reply_fn cb, void *arg, const struct redis_script *s, int argc,
                     const char **argv, const size_t *argvlen)
{
    if (!rc || !rc->ready || !rc->ac)
        return -1;
    struct call *c = xcalloc(1, sizeof *c);
    c->rc = rc;
    c->cb = cb;
    c->arg = arg;
    c->script = s;
    c->argc = argc;
    c->argv = xcalloc((size_t)argc, sizeof *c->argv);
    c->argvlen = xcalloc((size_t)argc, sizeof *c->argvlen);
    for (int i = 0; i < argc; i++) {
        size_t len = argvlen ? argvlen[i] : strlen(argv[i]);
        c->argv[i] = xmalloc(len + 1);
        memcpy(c->argv[i], argv[i], len);
        c->argv[i][len] = '\0';
        c->argvlen[i] = len;
    }
    if (redisAsyncCommandArgv(rc->ac, on_reply, c, argc, (const char **)c->argv, c->argvlen) != REDIS_OK) {
        call_free(c);
        return -1;
    }
    return 0;
}

int redis_conn_cmd(struct redis_conn *rc, redis_reply_fn cb, void *arg, int argc, const char **argv,
                   const size_t *argvlen)
{
    return send_call(rc, cb, arg, NULL, argc, argv, argvlen);
}

struct fcall {
    redis_reply_fn cb;
    void *arg;
};

static void on_freply(redisAsyncContext *ac, void *r, void *priv)
{
    (void)ac;
    struct fcall *f = priv;
    if (f->cb)
        f->cb(r, f->arg);
    free(f);
}

int redis_conn_cmdf(struct redis_conn *rc, redis_reply_fn cb, void *arg, const char *fmt, ...)
{
    if (!rc || !rc->ready || !rc->ac)
        return -1;
    struct fcall *f = xmalloc(sizeof *f);
    f->cb = cb;
    f->arg = arg;
    va_list ap;
    va_start(ap, fmt);
    int rc_ = redisvAsyncCommand(rc->ac, on_freply, f, fmt, ap);
    va_end(ap);
    if (rc_ != REDIS_OK) {
        free(f);
        return -1;
    }
    return 0;
}

int redis_conn_eval(struct redis_conn *rc, const struct redis_script *s, redis_reply_fn cb, void *arg, int nkeys,
                    int argc, const char **argv, const size_t *argvlen)
{
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
    int rc_ = send_call(rc, cb, arg, s, argc + 3, full, lens);
    free(full);
    free(lens);
    return rc_;
}
