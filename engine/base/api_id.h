/*
 * api_id.h — the API's ids of UUIDs (`msg_…`, `ep_…`), computed in C
 * exactly as the SQL function hookd_api_id (sql/0013_tenants_api.sql) does:
 * the prefix, '_', and the UUID's 128 bits as a big-endian number in 22
 * base62 digits (0-9, A-Z, a-z). In SQL it costs about 70 µs a row
 * (numeric arithmetic in PL/pgSQL): the hot paths — the answers of a batch
 * of message creations, the relay's webhook-id of a tenant's event — compute
 * it here instead. Pure function; thread-safe.
 */
#ifndef HOOKD_API_ID_H
#define HOOKD_API_ID_H

#include <stddef.h>
#include <stdint.h>

/* Characters of the base62 part. */
#define API_ID_DIGITS 22

/* Writes prefix "_" base62(uuid) and a NUL into out; uuid is the text form
 * (32 hex digits, dashes anywhere ignored). -1 (out untouched) when uuid is
 * not one or out is too small (strlen(prefix) + 1 + API_ID_DIGITS + 1). */
__attribute__((warn_unused_result)) int api_id_of_uuid(const char *prefix, const char *uuid, char *out, size_t outlen);

/* A time-ordered UUID (version 7, RFC 9562) in text form into out (37
 * bytes): ms the Unix time in milliseconds, rnd 10 random bytes. What
 * hookd_uuid7() makes in SQL, without its cost per row. */
void api_id_uuid7(int64_t ms, const unsigned char rnd[10], char out[37]);

/* The same with another version in the version bits (4: the clock bits are
 * random as far as anyone reading the id knows). */
void api_id_uuid(int64_t ms, int version, const unsigned char rnd[10], char out[37]);

/* The millisecond clock of a version 7 UUID in text form: 0 and *ms set, or
 * -1 when uuid is not a version 7 one (sql/0018: such an id tells no
 * part_at). */
__attribute__((warn_unused_result)) int api_id_uuid7_ms(const char *uuid, int64_t *ms);

#endif
