/* One Redis connection used from the libevent loop (over redis_link: a
 * bufferevent, plain or TLS, with hiredis's reply reader): finds the master
 * through Sentinel when asked to, or — for Redis Cluster — reads the slot
 * map and keeps one link per master, sending each command to the master of
 * its key's slot and following MOVED and ASK; connects, authenticates, selects the db,
 * reconnects with backoff after any failure, watches liveness with PINGs, and
 * runs Lua scripts with EVALSHA, transparently re-loading a script that a
 * restarted or flushed Redis has forgotten (NOSCRIPT). A subscriber
 * connection re-subscribes its channels after every reconnect. Glue only:
 * what the keys mean is the scheduler's business. */
#ifndef HOOKD_REDIS_CONN_H
#define HOOKD_REDIS_CONN_H

#include <stdbool.h>
#include <stddef.h>

struct event_base;
struct redisReply;
struct redis_conn;

/* reply is borrowed (valid during the call) and NULL when the connection
 * was lost before a reply arrived. */
typedef void (*redis_reply_fn)(struct redisReply *reply, void *arg);
typedef void (*redis_event_fn)(void *arg);
typedef void (*redis_message_fn)(const char *channel, const char *msg, size_t len, void *arg);

/* A Lua script: body plus its SHA1, computed locally at creation. */
struct redis_script {
    const char *name;
    const char *body; /* borrowed: the embedded file */
    size_t len;
    char sha[41];
};
void redis_script_init(struct redis_script *s, const char *name, const char *body, size_t len);

#define REDIS_URL_MAX_HOSTS 16

/* A parsed Redis URL. */
struct redis_url {
    char host[256]; /* plain and TLS: the server; Sentinel, Cluster: the first host of the list */
    int port;
    int db;
    char user[128];
    char password[256];
    bool tls;      /* rediss:// and rediss+sentinel:// */
    bool sentinel; /* redis+sentinel:// and rediss+sentinel:// */
    bool cluster;  /* redis+cluster:// and rediss+cluster:// */
    int nhosts;    /* Sentinel: the sentinels; Cluster: the seed nodes */
    struct {
        char host[256];
        int port;
    } hosts[REDIS_URL_MAX_HOSTS];
    char service[128]; /* Sentinel: the master's name */
};
/* redis[s]://[[user]:password@]host[:port][/db] and
 * redis[s]+sentinel://[[user]:password@]host[:port][,host[:port]…]/SERVICE[/db] and
 * redis[s]+cluster://[[user]:password@]host[:port][,host[:port]…][/0]:
 * hosts a name, an IPv4 address or an [IPv6] literal, credentials
 * percent-encoded (url.h); the credentials are the data node's (the
 * sentinels' password is separate). A sentinel or cluster host list is split here
 * before each host goes through url_parse, which refuses lists. -1 with a
 * precise reason in err when malformed. */
__attribute__((warn_unused_result)) int redis_url_parse(const char *url, struct redis_url *out, char *err,
                                                        size_t errlen);

/* What a URL alone cannot say ([hookd] redis_* keys). Strings borrowed for
 * the call; NULL for none (the system CA store, no client certificate, no
 * sentinel password). */
struct redis_options {
    const char *ca_file;
    const char *cert_file;
    const char *key_file;
    const char *sentinel_password;
};

/* A blocking connection for command-line tools, in every mode of
 * redis_url_parse (AUTH and SELECT done, the master found through
 * Sentinel). NULL with err. */
struct redis_sync;
__attribute__((warn_unused_result)) struct redis_sync *redis_sync_connect(const char *url,
                                                                          const struct redis_options *opts,
                                                                          int timeout_ms, char *err, size_t errlen);
/* A command (hiredis format, as redisCommand). Returns the reply (caller
 * freeReplyObject()s) or NULL when the connection failed; then the
 * connection is unusable. */
struct redisReply *redis_sync_command(struct redis_sync *s, const char *fmt, ...);
/* NULL while the connection works; why it failed otherwise. */
const char *redis_sync_error(const struct redis_sync *s);
/* Accepts NULL. */
void redis_sync_free(struct redis_sync *s);

/* Parses url (see redis_url_parse) and starts connecting. opts may be
 * NULL. NULL with err for a bad URL or unusable TLS files. */
__attribute__((warn_unused_result)) struct redis_conn *redis_conn_new(struct event_base *base, const char *url,
                                                                      const struct redis_options *opts,
                                                                      const char *name, char *err, size_t errlen);
/* Disconnects; pending callbacks run with a NULL reply. Accepts NULL. */
void redis_conn_free(struct redis_conn *rc);
bool redis_conn_ready(const struct redis_conn *rc);
/* Adds a listener called on the loop each time the connection is
 * (re)established and set up (at most 8 per connection). */
void redis_conn_on_ready(struct redis_conn *rc, redis_event_fn fn, void *arg);
/* Removes a listener added with the same fn and arg; accepts a NULL rc. */
void redis_conn_off_ready(struct redis_conn *rc, redis_event_fn fn, void *arg);
/* Scripts to SCRIPT LOAD after each connect (the pointer is kept). */
void redis_conn_add_script(struct redis_conn *rc, const struct redis_script *s);

/* Sends a command. Returns -1 (and never calls cb) when not connected. */
__attribute__((warn_unused_result)) int redis_conn_cmd(struct redis_conn *rc, redis_reply_fn cb, void *arg, int argc,
                                                       const char **argv, const size_t *argvlen);
__attribute__((warn_unused_result)) int redis_conn_cmdf(struct redis_conn *rc, redis_reply_fn cb, void *arg,
                                                        const char *fmt, ...);
/* EVALSHA s with nkeys keys followed by the other arguments (argv holds
 * keys then args). -1 when not connected. */
__attribute__((warn_unused_result)) int redis_conn_eval(struct redis_conn *rc, const struct redis_script *s,
                                                        redis_reply_fn cb, void *arg, int nkeys, int argc,
                                                        const char **argv, const size_t *argvlen);
/* Subscriber connections: subscribe (now and after every reconnect). */
void redis_conn_subscribe(struct redis_conn *rc, const char *channel, redis_message_fn fn, void *arg);

#endif
