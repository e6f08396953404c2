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
 * the sentinels again. Cluster mode (its section below) replaces the one
 * data link with one per master and the sentinel step with CLUSTER SLOTS. */
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

#include "encoding.h"
#include "errbuf.h"
#include "log.h"
#include "loop_timer.h"
#include "redis_cluster.h"
#include "redis_link.h"
#include "url.h"
#include "xmalloc.h"

#define MAX_SCRIPTS 16
#define MAX_CHANNELS 8
#define MAX_LISTENERS 8
#define CONNECT_TICKS 5 /* ping-timer seconds a connection may take to become ready */
#define MAX_NODES 64    /* Cluster: masters (and former masters) linked at once */
#define MAX_REDIRECTS 5 /* Cluster: MOVED/ASK/TRYAGAIN followed per command */
#define TRYAGAIN_MS 25  /* Cluster: a multi-key command during a slot migration waits this long */

struct call;

/* Cluster: one master. The link is the first member, so a link callback
 * finds its node from the link it is given. */
struct cnode {
    struct redis_link link;
    char host[256];
    int port;
    int pending;  /* setup replies still to come */
    int pings;    /* unanswered PINGs */
    bool counted; /* part of the first connect: its setup counts toward ready */
};

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
    /* Cluster: the masters, the slot map (node index + 1 per slot, 0 for
     * unknown), a CLUSTER SLOTS in flight, a MULTI held until the next
     * command names its node, and the commands waiting out a TRYAGAIN. */
    struct cnode *nodes[MAX_NODES];
    int nnodes;
    unsigned char *slots;
    bool refreshing;
    bool tx_open;
    struct cnode *tx_node;
    struct call *tx_multi;
    struct call *delayed;
    struct event *retry_ev;
};

void redis_script_init(struct redis_script *s, const char *name, const char *body, size_t len)
{
    unsigned char md[SHA_DIGEST_LENGTH];
    s->name = name;
    s->body = body;
    s->len = len;
    SHA1((const unsigned char *)body, len, md);
    HOOKD_ASSERT(enc_hex_encode(md, sizeof md, s->sha, sizeof s->sha) == 0);
}

/* The schemes: plain or TLS; one node, Sentinel or Cluster. */
static int take_scheme(const char *url, struct redis_url *out, const char **rest, char *err, size_t errlen)
{
    static const struct {
        const char *prefix;
        bool tls, sentinel, cluster;
    } schemes[] = {
        {"redis://", false, false, false},         {"rediss://", true, false, false},
        {"redis+sentinel://", false, true, false}, {"rediss+sentinel://", true, true, false},
        {"redis+cluster://", false, false, true},  {"rediss+cluster://", true, false, true},
    };
    for (size_t i = 0; url && i < sizeof schemes / sizeof schemes[0]; i++) {
        size_t n = strlen(schemes[i].prefix);
        if (strncmp(url, schemes[i].prefix, n) == 0) {
            out->tls = schemes[i].tls;
            out->sentinel = schemes[i].sentinel;
            out->cluster = schemes[i].cluster;
            *rest = url + n;
            return 0;
        }
    }
    const char *sep = url ? strstr(url, "://") : NULL;
    err_set(err, errlen,
            "redis URL must start with redis://, rediss://, redis+sentinel://, redis+cluster:// or their rediss+ "
            "forms (%s%.*s%s)",
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
        return err_set(err, errlen, "redis URL has a bad database number");
    }
    out->db = (int)db;
    return 0;
}

static int redis_url_take(const struct url *u, struct redis_url *out, char *err, size_t errlen)
{
    if (u->has_fragment || strchr(u->target, '?')) {
        return err_set(err, errlen, "redis URL has unexpected text after the host");
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
        return err_set(err, errlen, "redis sentinel URL needs the master's service name (…/SERVICE[/db])");
    }
    const char *name = path + 1, *slash = strchr(name, '/');
    size_t n = slash ? (size_t)(slash - name) : strlen(name);
    if (n >= sizeof out->service) {
        return err_set(err, errlen, "redis sentinel URL: the service name is longer than %zu bytes",
                       sizeof out->service - 1);
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (!isalnum(ch) && ch != '-' && ch != '_' && ch != '.') {
            return err_set(err, errlen,
                           "redis sentinel URL: the service name may hold letters, digits, '-', '_' and '.'");
        }
    }
    memcpy(out->service, name, n);
    out->service[n] = '\0';
    return slash ? take_db(slash + 1, out, err, errlen) : 0;
}

/* "sentinel" or "cluster": the word of an error about a host list. */
static const char *list_kind(const struct redis_url *out)
{
    return out->cluster ? "cluster" : "sentinel";
}

/* One "host[:port]" of a sentinel or cluster host list, through the one URL
 * parser. */
static int take_list_host(const char *hp, size_t len, struct redis_url *out, char *err, size_t errlen)
{
    char buf[300], why[256];
    struct url u;
    if (len == 0) {
        return err_set(err, errlen, "redis %s URL has an empty host in its host list", list_kind(out));
    }
    if (out->nhosts == REDIS_URL_MAX_HOSTS) {
        return err_set(err, errlen, "redis %s URL has more than %d hosts", list_kind(out), REDIS_URL_MAX_HOSTS);
    }
    if (len + 9 >= sizeof buf) {
        return err_set(err, errlen, "redis %s URL: a host is too long", list_kind(out));
    }
    snprintf(buf, sizeof buf, "redis://%.*s", (int)len, hp);
    if (url_parse(buf, &u, why, sizeof why) != 0) {
        return err_set(err, errlen, "redis %s URL, host %d: %s", list_kind(out), out->nhosts + 1, why);
    }
    bool extra = u.has_fragment || (u.target[0] && strcmp(u.target, "/") != 0);
    url_wipe(&u);
    if (extra) {
        return err_set(err, errlen, "redis %s URL, host %d: unexpected text after the host", list_kind(out),
                       out->nhosts + 1);
    }
    snprintf(out->hosts[out->nhosts].host, sizeof out->hosts[0].host, "%s", u.host);
    out->hosts[out->nhosts].port = u.port > 0 ? u.port : out->cluster ? 6379 : 26379;
    out->nhosts++;
    return 0;
}

/* Cluster: no path, or "/0" (a cluster has database 0 only). */
static int take_cluster_path(const char *path, struct redis_url *out, char *err, size_t errlen)
{
    if (!path[0] || strcmp(path, "/") == 0)
        return 0;
    if (take_db(path + 1, out, err, errlen) != 0)
        return -1;
    if (out->db != 0) {
        return err_set(err, errlen, "redis cluster URL: Redis Cluster has database 0 only (…/0 or no path)");
    }
    return 0;
}

/* [userinfo@]h1[:p1][,h2[:p2]…][/path]: the list is split here, the
 * credentials and the path go through url_parse with a stand-in host. The
 * path is /SERVICE[/db] for Sentinel, nothing or /0 for Cluster. */
static int parse_host_list(const char *rest, struct redis_url *out, char *err, size_t errlen)
{
    const char *slash = strchr(rest, '/');
    const char *auth_end = slash ? slash : rest + strlen(rest);
    const char *at = NULL;
    for (const char *p = rest; p < auth_end; p++)
        if (*p == '@')
            at = p;
    const char *hosts = at ? at + 1 : rest;
    if (hosts == auth_end) {
        return err_set(err, errlen, "redis %s URL has an empty host list", list_kind(out));
    }
    for (const char *p = hosts; p <= auth_end;) {
        const char *comma = memchr(p, ',', (size_t)(auth_end - p));
        const char *stop = comma ? comma : auth_end;
        if (take_list_host(p, (size_t)(stop - p), out, err, errlen) != 0)
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
        return err_set(err, errlen, "redis %s URL: %s", list_kind(out), why);
    }
    if (u.has_fragment || strchr(u.target, '?')) {
        err_set(err, errlen, "redis URL has unexpected text after the host");
        url_wipe(&u);
        return -1;
    }
    take_credentials(&u, out);
    rc = out->cluster ? take_cluster_path(u.target, out, err, errlen) : take_service(u.target, out, err, errlen);
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
    if (out->sentinel || out->cluster) {
        rc = parse_host_list(rest, out, err, errlen);
    } else {
        struct url u;
        char why[256];
        /* url_parse sees redis:// whatever the scheme: what differs is ours */
        char *plain = xasprintf("redis://%s", rest);
        rc = url_parse(plain, &u, why, sizeof why);
        OPENSSL_cleanse(plain, strlen(plain));
        free(plain);
        if (rc != 0) {
            return err_set(err, errlen, "redis URL: %s%s", why,
                           strstr(why, "host list")
                               ? " (for Sentinel: redis+sentinel://h1:p1,h2:p2/SERVICE; for Cluster: "
                                 "redis+cluster://h1:p1,h2:p2)"
                               : "");
        }
        rc = redis_url_take(&u, out, err, errlen);
        url_wipe(&u);
    }
    if (rc != 0) {
        bool tls = out->tls, sentinel = out->sentinel, cluster = out->cluster;
        OPENSSL_cleanse(out, sizeof *out);
        out->tls = tls, out->sentinel = sentinel, out->cluster = cluster;
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
    loop_timer_arm(rc->reconnect_ev, delay_ms);
}

static void cluster_close(struct redis_conn *rc);

/* Closes the data connection (pending callbacks get NULL) and, with
 * Sentinel, the sentinel one: the next connect asks the sentinels again.
 * Cluster: every master's link; the next connect reads the slot map again. */
static void drop(struct redis_conn *rc, const char *why, int delay_ms)
{
    if (rc->ready)
        log_warn("redis.down", "conn=%s addr=%s:%d error=\"%s\"", rc->name, rc->host, rc->port, why);
    rc->ready = false;
    rc->setup_pending = 0;
    redis_link_close(&rc->link);
    if (rc->url.sentinel || rc->url.cluster) {
        redis_link_close(&rc->sent);
        rc->resolving = false;
    }
    if (rc->url.cluster)
        cluster_close(rc);
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
    if (rc->url.cluster)
        log_info("redis.up", "conn=%s cluster=1 masters=%d tls=%d", rc->name, rc->nnodes, rc->url.tls ? 1 : 0);
    else
        log_info("redis.up", "conn=%s addr=%s:%d tls=%d", rc->name, rc->host, rc->port, rc->url.tls ? 1 : 0);
    for (int i = 0; i < rc->non_ready; i++)
        rc->on_ready[i].fn(rc->on_ready[i].arg);
}

static void log_command_error(struct redis_conn *rc, const char *command, const char *error)
{
    if (strncmp(error, "NOPERM", 6) == 0)
        report(rc, "redis.noperm",
               "command=%s error=\"%s\" (the Redis user lacks a command hookd needs: see docs/guides/deploy/redis.md)",
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

/* The host of the URL that resolves the master (a sentinel, or a cluster
 * seed node, named `what` in the log) failed with why: its link is closed
 * and the next host is tried at once. Returns false, after a whole round,
 * when none is left: the caller reports it and schedules the backoff. */
static bool resolver_next(struct redis_conn *rc, const char *event, const char *what, const char *why)
{
    log_debug(event, "conn=%s %s=%s:%d error=\"%s\"", rc->name, what, rc->url.hosts[rc->sidx].host,
              rc->url.hosts[rc->sidx].port, why);
    redis_link_close(&rc->sent);
    rc->resolving = false;
    rc->sidx = (rc->sidx + 1) % rc->url.nhosts;
    if (++rc->stried < rc->url.nhosts) {
        schedule_reconnect(rc, 0);
        return true;
    }
    rc->stried = 0;
    return false;
}

static void sentinel_next(struct redis_conn *rc, const char *why)
{
    if (resolver_next(rc, "redis.sentinel_failed", "sentinel", why))
        return;
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

static void cluster_discover(struct redis_conn *rc);
static void seed_next(struct redis_conn *rc, const char *why);
static void cluster_ping(struct redis_conn *rc);
static void on_seed_state(struct redis_link *l, enum redis_link_state state, const char *why, void *arg);
static void on_retry_timer(evutil_socket_t fd, short what, void *arg);
static void cluster_free_nodes(struct redis_conn *rc);

static void on_reconnect_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct redis_conn *rc = arg;
    if (rc->url.cluster)
        cluster_discover(rc);
    else if (rc->url.sentinel)
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
        return rc->url.cluster ? seed_next(rc, "timeout") : sentinel_next(rc, "timeout");
    if (rc->url.cluster)
        return cluster_ping(rc);
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
    if (rc->url.cluster) {
        redis_link_init(&rc->sent, base, on_seed_state, NULL, rc);
        rc->slots = xcalloc(REDIS_CLUSTER_SLOTS, 1);
        rc->retry_ev = evtimer_new(base, on_retry_timer, rc);
    } else {
        redis_link_init(&rc->sent, base, on_sent_state, on_sent_push, rc);
    }
    rc->reconnect_ev = evtimer_new(base, on_reconnect_timer, rc);
    rc->ping_ev = event_new(base, -1, EV_PERSIST, on_ping_timer, rc);
    loop_timer_arm(rc->ping_ev, 1000);
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
    if (rc->url.cluster) {
        cluster_close(rc);
        cluster_free_nodes(rc);
        free(rc->slots);
        event_free(rc->retry_ev);
    }
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

static void send_script_load(struct redis_link *l, const struct redis_script *s)
{
    redis_link_argv(l, on_late_load, (void *)"SCRIPT LOAD", 3, (const char *[]){"SCRIPT", "LOAD", s->body},
                    (const size_t[]){6, 4, s->len});
}

void redis_conn_add_script(struct redis_conn *rc, const struct redis_script *s)
{
    HOOKD_ASSERT(rc->nscripts < MAX_SCRIPTS);
    rc->scripts[rc->nscripts++] = s;
    if (rc->ready && rc->url.cluster)
        for (int i = 0; i < rc->nnodes; i++)
            send_script_load(&rc->nodes[i]->link, s);
    else if (rc->ready)
        send_script_load(&rc->link, s);
}

void redis_conn_subscribe(struct redis_conn *rc, const char *channel, redis_message_fn fn, void *arg)
{
    HOOKD_ASSERT(rc->nsubs < MAX_CHANNELS);
    struct subscription *s = &rc->subs[rc->nsubs++];
    s->channel = xstrdup(channel);
    s->fn = fn;
    s->arg = arg;
    if (rc->ready)
        redis_link_subscribe(rc->url.cluster ? &rc->nodes[0]->link : &rc->link, s->channel);
}

/* ---- commands ---------------------------------------------------------------- */

/* A command in flight: the caller's callback and the command's name (for
 * NOPERM logs); for scripts and in Cluster mode the formatted command, so a
 * NOSCRIPT reply can be answered by loading the script and sending it again
 * and a MOVED, ASK or TRYAGAIN by sending it again elsewhere or later. */
struct call {
    redis_reply_fn cb;
    void *arg;
    const struct redis_script *script;
    bool reloaded;
    bool asking; /* Cluster: ASKING goes first (an ASK redirection) */
    bool in_tx;  /* Cluster: inside MULTI…EXEC, never redirected */
    int redirects;
    char *cmd;
    size_t len;
    char name[16];
    struct call *next; /* Cluster: the TRYAGAIN list */
};

static void on_reply(struct redis_link *l, redisReply *reply, void *arg);

static void call_name(struct call *c, const char *s, size_t len)
{
    size_t n = 0;
    while (n < len && n < sizeof c->name - 1 && s[n] != ' ') {
        c->name[n] = (char)toupper((unsigned char)s[n]);
        n++;
    }
    c->name[n] = '\0';
}

/* A call that will never be sent: its owner hears "connection lost". */
static void call_fail(struct call *c)
{
    if (c->cb)
        c->cb(NULL, c->arg);
    free(c->cmd);
    free(c);
}

/* ---- Cluster: the slot map and one link per master --------------------------
 *
 * Connect: ask the seed hosts of the URL in turn for CLUSTER SLOTS (after
 * AUTH), link every master it names and set each up (AUTH, SCRIPT LOAD, and
 * on the first master the subscriptions: a PUBLISH reaches every node of a
 * cluster, so one subscriber link hears every channel); ready once all are
 * set up. A command goes to the master of its key's slot; MOVED updates the
 * slot (and re-reads the whole map once), ASK sends ASKING and the command
 * to the named node once, TRYAGAIN (a script whose keys are half migrated)
 * waits TRYAGAIN_MS. MULTI is held back until the command after it names
 * the node, and the whole transaction goes there. A lost or unreachable
 * master drops every link and the map is read again: after a failover the
 * promoted replica is in the new map, and the ready listeners (the
 * reconciler) re-seed whatever the lost master had not passed on. */

static void cluster_close(struct redis_conn *rc)
{
    rc->refreshing = false;
    rc->tx_open = false;
    rc->tx_node = NULL;
    if (rc->tx_multi) {
        struct call *m = rc->tx_multi;
        rc->tx_multi = NULL;
        call_fail(m);
    }
    for (int i = 0; i < rc->nnodes; i++)
        redis_link_close(&rc->nodes[i]->link);
    while (rc->delayed) {
        struct call *c = rc->delayed;
        rc->delayed = c->next;
        call_fail(c);
    }
}

/* Only from a fresh stack (a timer, the seed link): no node link may be
 * inside its own callback. */
static void cluster_free_nodes(struct redis_conn *rc)
{
    for (int i = 0; i < rc->nnodes; i++) {
        redis_link_release(&rc->nodes[i]->link);
        free(rc->nodes[i]);
        rc->nodes[i] = NULL;
    }
    rc->nnodes = 0;
    if (rc->slots)
        memset(rc->slots, 0, REDIS_CLUSTER_SLOTS);
}

static void node_ready(struct redis_conn *rc, struct cnode *n)
{
    if (n->counted && !rc->ready && rc->setup_pending > 0 && --rc->setup_pending == 0)
        become_ready(rc);
}

static void on_node_setup(struct redis_link *l, redisReply *reply, void *arg)
{
    struct redis_conn *rc = l->arg;
    struct cnode *n = (struct cnode *)l;
    if (!reply)
        return;
    if (reply->type == REDIS_REPLY_ERROR) {
        log_command_error(rc, arg, reply->str);
        snprintf(rc->host, sizeof rc->host, "%s", n->host);
        rc->port = n->port;
        drop(rc, reply->str, -1);
        return;
    }
    if (n->pending > 0 && --n->pending == 0)
        node_ready(rc, n);
}

static void node_cmd(struct cnode *n, const char *step, int argc, const char **argv, const size_t *lens)
{
    if (redis_link_argv(&n->link, on_node_setup, (void *)step, argc, argv, lens) == 0)
        n->pending++;
}

/* Queued at once, before the connection is up: the bufferevent sends it
 * first when it is (a command routed to a new node meanwhile follows). */
static void node_setup(struct redis_conn *rc, struct cnode *n)
{
    n->pending = 1;
    n->pings = 0;
    if (rc->url.password[0] && rc->url.user[0])
        node_cmd(n, "AUTH", 3, (const char *[]){"AUTH", rc->url.user, rc->url.password}, NULL);
    else if (rc->url.password[0])
        node_cmd(n, "AUTH", 2, (const char *[]){"AUTH", rc->url.password}, NULL);
    for (int i = 0; i < rc->nscripts; i++)
        node_cmd(n, "SCRIPT LOAD", 3, (const char *[]){"SCRIPT", "LOAD", rc->scripts[i]->body},
                 (const size_t[]){6, 4, rc->scripts[i]->len});
    if (n == rc->nodes[0])
        for (int i = 0; i < rc->nsubs; i++)
            redis_link_subscribe(&n->link, rc->subs[i].channel);
    if (--n->pending == 0)
        node_ready(rc, n);
}

static void on_node_state(struct redis_link *l, enum redis_link_state state, const char *why, void *arg)
{
    struct redis_conn *rc = arg;
    struct cnode *n = (struct cnode *)l;
    if (state == REDIS_LINK_UP)
        return; /* the setup is already queued */
    snprintf(rc->host, sizeof rc->host, "%s", n->host);
    rc->port = n->port;
    if (state == REDIS_LINK_TLS_FAILED)
        report(rc, "redis.tls_failed", "addr=%s:%d error=\"%s\"", n->host, n->port, why);
    else if (state == REDIS_LINK_FAILED)
        log_debug("redis.connect_failed", "conn=%s addr=%s:%d error=\"%s\"", rc->name, n->host, n->port, why);
    drop(rc, why, -1);
}

static const char *node_tls_name(const struct redis_conn *rc, const char *host);

/* The node at host:port, linked (and set up) when new; NULL when the table
 * is full or the link cannot even start (then the connection is dropped). */
static struct cnode *node_get(struct redis_conn *rc, const char *host, int port)
{
    char err[256];
    for (int i = 0; i < rc->nnodes; i++) {
        struct cnode *n = rc->nodes[i];
        if (n->port != port || strcmp(n->host, host) != 0)
            continue;
        if (!n->link.bev && rc->ready) { /* its link could not start last time */
            if (redis_link_open_as(&n->link, host, port, rc->tls, node_tls_name(rc, host), err, sizeof err) != 0)
                return NULL;
            node_setup(rc, n);
        }
        return n;
    }
    if (rc->nnodes == MAX_NODES) {
        log_warn("redis.cluster_too_big", "conn=%s masters>%d", rc->name, MAX_NODES);
        return NULL;
    }
    struct cnode *n = xcalloc(1, sizeof *n);
    redis_link_init(&n->link, rc->base, on_node_state, on_link_push, rc);
    snprintf(n->host, sizeof n->host, "%s", host);
    n->port = port;
    n->counted = !rc->ready;
    rc->nodes[rc->nnodes++] = n;
    if (redis_link_open_as(&n->link, host, port, rc->tls, node_tls_name(rc, host), err, sizeof err) != 0) {
        log_debug("redis.connect_failed", "conn=%s addr=%s:%d error=\"%s\"", rc->name, host, port, err);
        return NULL;
    }
    if (!rc->ready)
        rc->setup_pending++;
    node_setup(rc, n);
    return n;
}

/* The name a node's certificate must carry: its own host, unless it is an
 * IP address and the seed that gave the map was a DNS name (services that
 * announce nodes by address behind one certificate name, as Azure does). */
static const char *node_tls_name(const struct redis_conn *rc, const char *host)
{
    const char *seed = rc->url.hosts[rc->sidx].host;
    return rc->tls && redis_link_is_ip(host) && !redis_link_is_ip(seed) ? seed : NULL;
}

static int node_index(const struct redis_conn *rc, const struct cnode *n)
{
    for (int i = 0; i < rc->nnodes; i++)
        if (rc->nodes[i] == n)
            return i;
    return -1;
}

/* Applies a CLUSTER SLOTS reply: -1 when it is not one, or a master could
 * not be linked. from names the node that answered (for "no address"). */
static int apply_slots(struct redis_conn *rc, redisReply *r, const char *from)
{
    struct redis_cluster_range *ranges = xcalloc(r->elements ? r->elements : 1, sizeof *ranges);
    int n = redis_cluster_parse_slots(r, from, ranges, (int)r->elements);
    int rcode = n > 0 ? 0 : -1;
    for (int i = 0; i < n; i++) {
        struct cnode *node = node_get(rc, ranges[i].host, ranges[i].port);
        int idx = node ? node_index(rc, node) : -1;
        if (idx < 0) {
            rcode = -1;
            break;
        }
        memset(rc->slots + ranges[i].from, idx + 1, (size_t)(ranges[i].to - ranges[i].from + 1));
    }
    free(ranges);
    return rcode;
}

static void seed_next(struct redis_conn *rc, const char *why)
{
    if (resolver_next(rc, "redis.cluster_seed_failed", "seed", why))
        return;
    report(rc, "redis.cluster_unavailable", "error=\"no seed node gave the slot map (last: %s)\"", why);
    schedule_reconnect(rc, -1);
}

static void on_seed_slots(struct redis_link *l, redisReply *r, void *arg)
{
    (void)arg;
    struct redis_conn *rc = l->arg;
    if (!r)
        return;
    const char *seed = rc->url.hosts[rc->sidx].host;
    if (r->type == REDIS_REPLY_ERROR) {
        if (strstr(r->str, "cluster support disabled"))
            report(rc, "redis.not_cluster", "seed=%s:%d error=\"%s\" (use redis:// or rediss:// for one node)", seed,
                   rc->url.hosts[rc->sidx].port, r->str);
        else if (strncmp(r->str, "NOPERM", 6) == 0)
            log_command_error(rc, "CLUSTER", r->str);
        return seed_next(rc, r->str);
    }
    rc->resolving = false;
    rc->stried = 0;
    rc->connect_ticks = 0;
    cluster_free_nodes(rc);
    rc->setup_pending = 1; /* held until every master is linked */
    int ok = apply_slots(rc, r, seed);
    int n = rc->nnodes;
    redis_link_close(&rc->sent); /* r stays valid: the reader handed it over */
    if (ok != 0 || n == 0) {
        report(rc, "redis.cluster_failed", "seed=%s:%d error=\"%s\"", seed, rc->url.hosts[rc->sidx].port,
               n == 0 ? "the cluster serves no slot" : "a master of the slot map cannot be reached");
        drop(rc, "bad slot map", -1);
        return;
    }
    log_info("redis.cluster_map", "conn=%s seed=%s:%d masters=%d", rc->name, seed, rc->url.hosts[rc->sidx].port, n);
    if (--rc->setup_pending == 0 && !rc->ready)
        become_ready(rc);
}

/* A wrong password is the same on every seed: report it, wait, try again. */
static void on_seed_auth(struct redis_link *l, redisReply *r, void *arg)
{
    (void)arg;
    struct redis_conn *rc = l->arg;
    if (r && r->type == REDIS_REPLY_ERROR) {
        log_command_error(rc, "AUTH", r->str);
        redis_link_close(&rc->sent);
        rc->resolving = false;
        schedule_reconnect(rc, -1);
    }
}

static void on_seed_state(struct redis_link *l, enum redis_link_state state, const char *why, void *arg)
{
    struct redis_conn *rc = arg;
    if (state == REDIS_LINK_UP) {
        if (rc->url.password[0] && rc->url.user[0])
            redis_link_argv(l, on_seed_auth, NULL, 3, (const char *[]){"AUTH", rc->url.user, rc->url.password}, NULL);
        else if (rc->url.password[0])
            redis_link_argv(l, on_seed_auth, NULL, 2, (const char *[]){"AUTH", rc->url.password}, NULL);
        if (redis_link_argv(l, on_seed_slots, NULL, 2, (const char *[]){"CLUSTER", "SLOTS"}, NULL) != 0)
            seed_next(rc, "cannot send");
        return;
    }
    if (state == REDIS_LINK_TLS_FAILED)
        report(rc, "redis.tls_failed", "seed=%s:%d error=\"%s\"", rc->url.hosts[rc->sidx].host,
               rc->url.hosts[rc->sidx].port, why);
    if (rc->resolving)
        seed_next(rc, why);
}

static void cluster_discover(struct redis_conn *rc)
{
    char err[256];
    redis_link_close(&rc->sent);
    cluster_free_nodes(rc);
    rc->resolving = true;
    rc->sent_ticks = 0;
    if (redis_link_open(&rc->sent, rc->url.hosts[rc->sidx].host, rc->url.hosts[rc->sidx].port, rc->tls, err,
                        sizeof err) != 0)
        seed_next(rc, err);
}

static void on_node_pong(struct redis_link *l, redisReply *r, void *arg)
{
    (void)arg;
    if (r)
        ((struct cnode *)l)->pings = 0;
}

/* The watchdog of every master's link (the subscribed one excepted), and
 * the deadline of a first connect. */
static void cluster_ping(struct redis_conn *rc)
{
    if (!rc->ready) {
        if (rc->nnodes > 0 && ++rc->connect_ticks >= CONNECT_TICKS) {
            report(rc, "redis.connect_timeout", "cluster masters=%d", rc->nnodes);
            drop(rc, "timeout", -1);
        }
        return;
    }
    for (int i = 0; i < rc->nnodes; i++) {
        struct cnode *n = rc->nodes[i];
        if (!n->link.bev || n->link.subscribed)
            continue;
        if (n->pings >= 3) {
            log_warn("redis.unresponsive", "conn=%s addr=%s:%d", rc->name, n->host, n->port);
            snprintf(rc->host, sizeof rc->host, "%s", n->host);
            rc->port = n->port;
            drop(rc, "no answer to PING", -1);
            return;
        }
        n->pings++;
        redis_link_argv(&n->link, on_node_pong, NULL, 1, (const char *[]){"PING"}, NULL);
    }
}

static void on_refresh_slots(struct redis_link *l, redisReply *r, void *arg)
{
    (void)arg;
    struct redis_conn *rc = l->arg;
    struct cnode *n = (struct cnode *)l;
    if (!r)
        return;
    rc->refreshing = false;
    if (r->type != REDIS_REPLY_ERROR && rc->ready && apply_slots(rc, r, n->host) == 0)
        log_info("redis.cluster_map", "conn=%s refreshed=1 masters=%d", rc->name, rc->nnodes);
}

/* Re-reads the whole map after a MOVED (one read at a time). */
static void cluster_refresh(struct redis_conn *rc, struct cnode *n)
{
    if (rc->refreshing || !n->link.bev)
        return;
    if (redis_link_argv(&n->link, on_refresh_slots, NULL, 2, (const char *[]){"CLUSTER", "SLOTS"}, NULL) == 0)
        rc->refreshing = true;
}

static struct cnode *route(struct redis_conn *rc, const struct call *c)
{
    const char *key;
    size_t klen;
    if (redis_cluster_cmd_key(c->cmd, c->len, &key, &klen)) {
        unsigned char idx = rc->slots[redis_cluster_slot(key, klen)];
        if (idx && idx <= rc->nnodes)
            return rc->nodes[idx - 1];
    }
    return rc->nodes[0]; /* no key, or a slot no master serves: that node answers */
}

static int node_send(struct cnode *n, struct call *c)
{
    if (!n || !n->link.bev)
        return -1;
    if (c->asking && redis_link_argv(&n->link, NULL, NULL, 1, (const char *[]){"ASKING"}, NULL) != 0)
        return -1;
    return redis_link_raw(&n->link, on_reply, c, c->cmd, c->len);
}

/* Sends a formatted call to its master; 0, or -1 (c untouched) when it
 * cannot be sent. */
static int cluster_submit(struct redis_conn *rc, struct call *c)
{
    if (rc->nnodes == 0)
        return -1;
    if (strcmp(c->name, "MULTI") == 0) {
        if (rc->tx_open)
            return -1;
        rc->tx_open = true;
        rc->tx_node = NULL;
        rc->tx_multi = c;
        return 0;
    }
    if (!rc->tx_open)
        return node_send(route(rc, c), c);
    c->in_tx = true;
    if (!rc->tx_node) {
        struct call *m = rc->tx_multi;
        rc->tx_node = route(rc, c);
        rc->tx_multi = NULL;
        m->in_tx = true;
        if (node_send(rc->tx_node, m) != 0)
            call_fail(m);
    }
    struct cnode *n = rc->tx_node;
    if (strcmp(c->name, "EXEC") == 0 || strcmp(c->name, "DISCARD") == 0) {
        rc->tx_open = false;
        rc->tx_node = NULL;
    }
    return node_send(n, c);
}

static void on_retry_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct redis_conn *rc = arg;
    struct call *list = rc->delayed;
    rc->delayed = NULL;
    while (list) {
        struct call *c = list;
        list = c->next;
        c->next = NULL;
        if (!rc->ready || node_send(route(rc, c), c) != 0)
            call_fail(c);
    }
}

/* A MOVED, ASK or TRYAGAIN answered: true when the call went on (then the
 * error is not the caller's). l is the node that answered. */
static bool cluster_redirected(struct redis_conn *rc, struct redis_link *l, struct call *c, const char *err)
{
    bool ask = false, again = strncmp(err, "TRYAGAIN", 8) == 0;
    int slot = 0, port = 0;
    char host[256];
    if (!again && redis_cluster_redirect(err, &ask, &slot, host, sizeof host, &port) != 0)
        return false;
    if (!host[0] || again)
        snprintf(host, sizeof host, "%s", ((struct cnode *)l)->host);
    if (again)
        port = ((struct cnode *)l)->port;
    if (!rc->ready || rc->freeing)
        return false;
    struct cnode *n = again ? NULL : node_get(rc, host, port);
    if (!again && !n)
        return false;
    if (!again && !ask) {
        unsigned char idx = (unsigned char)(node_index(rc, n) + 1);
        if (rc->slots[slot] != idx)
            log_info("redis.moved", "conn=%s slot=%d to=%s:%d", rc->name, slot, n->host, n->port);
        rc->slots[slot] = idx;
        cluster_refresh(rc, n);
    }
    if (c->in_tx || c->redirects >= MAX_REDIRECTS)
        return false;
    c->redirects++;
    log_debug("redis.redirect", "conn=%s command=%s slot=%d to=%s:%d kind=%s", rc->name, c->name, slot, host, port,
              again ? "TRYAGAIN"
              : ask ? "ASK"
                    : "MOVED");
    if (again) {
        c->next = rc->delayed;
        rc->delayed = c;
        loop_timer_arm(rc->retry_ev, TRYAGAIN_MS);
        return true;
    }
    c->asking = ask;
    return node_send(n, c) == 0;
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
            send_script_load(l, c->script);
            if ((!c->asking || redis_link_argv(l, NULL, NULL, 1, (const char *[]){"ASKING"}, NULL) == 0) &&
                redis_link_raw(l, on_reply, c, c->cmd, c->len) == 0)
                return;
            reply = NULL;
        } else if (rc->url.cluster && cluster_redirected(rc, l, c, reply->str)) {
            return;
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
    if (rc->url.cluster) {
        long long len = redisFormatCommandArgv(&c->cmd, argc, argv, argvlen);
        c->len = len > 0 ? (size_t)len : 0;
        if (len < 0 || cluster_submit(rc, c) != 0) {
            free(c->cmd);
            free(c);
            return -1;
        }
        return 0;
    }
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
    if (rc->url.cluster) {
        c->cmd = cmd;
        c->len = (size_t)len;
        if (cluster_submit(rc, c) != 0) {
            free(c->cmd);
            free(c);
            return -1;
        }
        return 0;
    }
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
    c->len = len > 0 ? (size_t)len : 0;
    if (len < 0 ||
        (rc->url.cluster ? cluster_submit(rc, c) : redis_link_raw(&rc->link, on_reply, c, c->cmd, c->len)) != 0) {
        free(c->cmd);
        free(c);
        return -1;
    }
    return 0;
}
