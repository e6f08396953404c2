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

/* The ids of one batch (an ingest batch's requests, a message batch's
 * messages, a relay pass's deliveries): the random bits of n UUIDs, drawn
 * in one call rather than one call an id, and the batch's
 * clock. */
struct api_id_batch {
    unsigned char *rnd; /* 10 bytes an id; owned */
    size_t n;
    int64_t ms; /* the batch's clock, Unix milliseconds */
};

/* Draws the random bits of n ids on clock ms. -1 when the generator fails;
 * b then holds nothing to release. */
__attribute__((warn_unused_result)) int api_id_batch_init(struct api_id_batch *b, size_t n, int64_t ms);
/* The i-th id of the batch (i < n) in text form into out (37 bytes): a
 * version 7 UUID on the batch's clock; with like set, on the clock of the
 * version 7 UUID like instead, so that the id falls in like's partition
 * (a version 4 UUID when like is not a version 7 one). */
void api_id_batch_uuid(const struct api_id_batch *b, size_t i, const char *like, char out[37]);
/* Frees the random bits. Accepts a released batch. */
void api_id_batch_release(struct api_id_batch *b);

/* The millisecond clock of a version 7 UUID in text form: 0 and *ms set, or
 * -1 when uuid is not a version 7 one (sql/0018: such an id tells no
 * part_at). */
__attribute__((warn_unused_result)) int api_id_uuid7_ms(const char *uuid, int64_t *ms);

#endif
