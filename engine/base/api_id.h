/*
 * api_id.h — the API's ids of UUIDs (`msg_…`, `ep_…`), computed in C
 * exactly as the SQL function hookd_api_id (sql/0031_svix_ids.sql) does.
 * An id is the prefix, '_', and 27 base62 digits (0-9, A-Z, a-z) of a
 * KSUID-shaped 20-byte number, as Svix's ids: 4 bytes of seconds since the
 * KSUID epoch (2014-05-13T16:53:20Z, Svix's svix-ksuid), then the row's
 * 16-byte UUID, big-endian, zero-padded on the left. The seconds are the
 * clock of a version 7 UUID (hookd's rows), 0 for any other version, so an
 * id is a function of its UUID alone, maps back to it without a lookup and
 * sorts by creation time as text. The legacy form, 22 digits of the UUID
 * alone, is what hookd answered before; it is still read everywhere and is
 * the webhook-id of messages created before (receivers dedupe on it).
 * In SQL an id costs about 70 µs a row (numeric arithmetic in PL/pgSQL): the
 * hot paths — the answers of a batch of message creations, the relay's
 * webhook-id of a tenant's event — compute it here instead. Pure functions;
 * thread-safe.
 */
#ifndef HOOKD_API_ID_H
#define HOOKD_API_ID_H

#include <stddef.h>
#include <stdint.h>

/* Characters of the base62 part: Svix's form, and hookd's former one. */
#define API_ID_DIGITS 27
#define API_ID_LEGACY_DIGITS 22
/* Bytes of the number an id encodes: 4 of seconds, 16 of UUID. */
#define API_ID_KSUID_BYTES 20
/* The KSUID epoch, in Unix seconds. */
#define API_ID_KSUID_EPOCH 1400000000

/* Writes prefix "_" and the 27 digits of uuid's id and a NUL into out;
 * uuid is the text form (32 hex digits, dashes anywhere ignored). -1 (out
 * untouched) when uuid is not one or out is too small
 * (strlen(prefix) + 1 + API_ID_DIGITS + 1). */
__attribute__((warn_unused_result)) int api_id_of_uuid(const char *prefix, const char *uuid, char *out, size_t outlen);

/* The same in the legacy form: 22 digits of the UUID alone (out needs
 * strlen(prefix) + 1 + API_ID_LEGACY_DIGITS + 1). */
__attribute__((warn_unused_result)) int api_id_legacy_of_uuid(const char *prefix, const char *uuid, char *out,
                                                              size_t outlen);

/* The UUID (text form, into out: 37 bytes) an id of either form names: 0,
 * or -1 when id lacks prefix "_", has another length, a character outside
 * base62, a number too large, or (27 digits) seconds other than its UUID's. */
__attribute__((warn_unused_result)) int api_id_to_uuid(const char *prefix, const char *id, char out[37]);

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
