/* Redis Cluster's slot arithmetic and replies; see redis_cluster.h. The
 * CRC16 is the one of the Redis Cluster specification (XMODEM: polynomial
 * 0x1021, initial value 0), so "123456789" gives 0x31C3. */
#include "redis_cluster.h"

#include <ctype.h>
#include <hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint16_t crc16(const char *buf, size_t len)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((unsigned char)buf[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

unsigned redis_cluster_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t rest = len - (size_t)(open - key) - 1;
        const char *close = memchr(open + 1, '}', rest);
        if (close && close > open + 1)
            return crc16(open + 1, (size_t)(close - open - 1)) & (REDIS_CLUSTER_SLOTS - 1);
    }
    return crc16(key, len) & (REDIS_CLUSTER_SLOTS - 1);
}

/* Reads "<kind><number>\r\n" at *p; -1 when malformed. */
static long resp_header(const char **p, const char *end, char kind)
{
    if (*p >= end || **p != kind)
        return -1;
    char *stop;
    long n = strtol(*p + 1, &stop, 10);
    if (stop + 2 > end || stop[0] != '\r' || stop[1] != '\n' || n < 0)
        return -1;
    *p = stop + 2;
    return n;
}

/* The first max arguments of a formatted command; their number or -1. */
static int resp_args(const char *cmd, size_t len, const char **arg, size_t *arglen, int max)
{
    const char *p = cmd, *end = cmd + len;
    long argc = resp_header(&p, end, '*');
    if (argc < 1)
        return -1;
    int n = 0;
    for (; n < argc && n < max; n++) {
        long l = resp_header(&p, end, '$');
        if (l < 0 || p + l + 2 > end)
            return -1;
        arg[n] = p;
        arglen[n] = (size_t)l;
        p += l + 2;
    }
    return n;
}

void redis_cluster_cmd_name(const char *cmd, size_t len, char *out, size_t outlen)
{
    const char *arg[1];
    size_t l[1];
    out[0] = '\0';
    if (resp_args(cmd, len, arg, l, 1) != 1)
        return;
    size_t n = 0;
    for (; n < l[0] && n + 1 < outlen; n++)
        out[n] = (char)toupper((unsigned char)arg[0][n]);
    out[n] = '\0';
}

bool redis_cluster_cmd_key(const char *cmd, size_t len, const char **key, size_t *keylen)
{
    static const char *const keyless[] = {"MULTI",  "EXEC",    "DISCARD", "PING", "ASKING",    "AUTH",       "SELECT",
                                          "SCRIPT", "CLUSTER", "INFO",    "ROLE", "SUBSCRIBE", "UNSUBSCRIBE"};
    const char *arg[4];
    size_t l[4];
    char name[16];
    int n = resp_args(cmd, len, arg, l, 4);
    if (n < 2)
        return false;
    redis_cluster_cmd_name(cmd, len, name, sizeof name);
    for (size_t i = 0; i < sizeof keyless / sizeof keyless[0]; i++)
        if (strcmp(name, keyless[i]) == 0)
            return false;
    if (strcmp(name, "EVAL") == 0 || strcmp(name, "EVALSHA") == 0) {
        if (n < 4 || l[2] == 0 || arg[2][0] == '0')
            return false;
        *key = arg[3];
        *keylen = l[3];
        return true;
    }
    *key = arg[1];
    *keylen = l[1];
    return true;
}

int redis_cluster_redirect(const char *err, bool *ask, int *slot, char *host, size_t hostlen, int *port)
{
    const char *p;
    if (strncmp(err, "MOVED ", 6) == 0) {
        *ask = false;
        p = err + 6;
    } else if (strncmp(err, "ASK ", 4) == 0) {
        *ask = true;
        p = err + 4;
    } else {
        return -1;
    }
    char *stop;
    long s = strtol(p, &stop, 10);
    if (stop == p || *stop != ' ' || s < 0 || s >= REDIS_CLUSTER_SLOTS)
        return -1;
    const char *addr = stop + 1, *colon = strrchr(addr, ':');
    if (!colon || (size_t)(colon - addr) >= hostlen)
        return -1;
    long pt = strtol(colon + 1, &stop, 10);
    if (stop == colon + 1 || pt <= 0 || pt > 65535)
        return -1;
    size_t hl = (size_t)(colon - addr);
    if (hl >= 2 && addr[0] == '[' && addr[hl - 1] == ']') { /* [IPv6]:port */
        addr++;
        hl -= 2;
    }
    memcpy(host, addr, hl);
    host[hl] = '\0';
    *slot = (int)s;
    *port = (int)pt;
    return 0;
}

int redis_cluster_parse_slots(const redisReply *r, const char *default_host, struct redis_cluster_range *out, int max)
{
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return -1;
    int n = 0;
    for (size_t i = 0; i < r->elements && n < max; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 || e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER || e->element[2]->type != REDIS_REPLY_ARRAY ||
            e->element[2]->elements < 2 || e->element[2]->element[0]->type != REDIS_REPLY_STRING ||
            e->element[2]->element[1]->type != REDIS_REPLY_INTEGER)
            return -1;
        long long from = e->element[0]->integer, to = e->element[1]->integer;
        const redisReply *m = e->element[2];
        if (from < 0 || to >= REDIS_CLUSTER_SLOTS || from > to)
            return -1;
        const char *host = m->element[0]->str;
        if (!host[0] || strcmp(host, "?") == 0)
            host = default_host;
        out[n].from = (int)from;
        out[n].to = (int)to;
        snprintf(out[n].host, sizeof out[n].host, "%s", host);
        out[n].port = (int)m->element[1]->integer;
        n++;
    }
    return n;
}
