/* redis_cluster — the pure parts of Redis Cluster that both connections
 * (redis_conn on the loop, redis_sync for the CLI) need: the hash slot of a
 * key (CRC16/XMODEM of the key, or of the text between the first '{' and
 * the next '}' when that is not empty), the key of a formatted command, the
 * MOVED/ASK redirections and the CLUSTER SLOTS reply. No I/O here. */
#ifndef HOOKD_REDIS_CLUSTER_H
#define HOOKD_REDIS_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>

struct redisReply;

#define REDIS_CLUSTER_SLOTS 16384

/* The hash slot (0..16383) of a key. */
unsigned redis_cluster_slot(const char *key, size_t len);

/* The key that decides where a formatted (RESP) command goes: argv[1] for
 * ordinary commands, the first key of EVAL/EVALSHA; false for commands
 * without one (MULTI, EXEC, PING, an EVAL of no keys, ...). key points into
 * cmd. */
bool redis_cluster_cmd_key(const char *cmd, size_t len, const char **key, size_t *keylen);

/* The name of a formatted command, upper-cased, into out ("" when it cannot
 * be read). */
void redis_cluster_cmd_name(const char *cmd, size_t len, char *out, size_t outlen);

/* "MOVED 3999 10.0.0.2:6381" or "ASK 3999 10.0.0.2:6381": 0 with the
 * slot, the node (an empty host means the node that answered, as Redis 7
 * writes "MOVED 3999 :6381" when it knows no address) and *ask; -1 for any
 * other error. */
int redis_cluster_redirect(const char *err, bool *ask, int *slot, char *host, size_t hostlen, int *port);

/* One master's slot range from CLUSTER SLOTS. */
struct redis_cluster_range {
    int from, to;
    char host[256];
    int port;
};
/* Parses a CLUSTER SLOTS reply into at most max ranges. A master that
 * announces no address ("" or "?") is at default_host. The number of
 * ranges, or -1 when the reply is not a slot map. */
int redis_cluster_parse_slots(const struct redisReply *r, const char *default_host, struct redis_cluster_range *out,
                              int max);

#endif
