/* Positions by key: which items of a batch (positions 0..n-1) carry a given
 * byte-string key, in the order they were added, so that rows a statement
 * returns find their items with one hash lookup each instead of a scan of
 * the batch. A key may be added at several positions (the same event twice
 * in one batch); keyindex_take() hands them out earliest first, each once.
 * On uthash, the tree's one hash table. */
#ifndef HOOKD_KEYINDEX_H
#define HOOKD_KEYINDEX_H

#include <stddef.h>
#include <stdint.h>

#define KEYINDEX_NONE SIZE_MAX

struct keyindex;

/* Room for positions 0..n-1 (three allocations, whatever n). Caller frees
 * with keyindex_free. */
struct keyindex *keyindex_new(size_t n);
/* Accepts NULL. */
void keyindex_free(struct keyindex *ix);
/* Records key (len bytes; borrowed: it must stay unchanged until
 * keyindex_free) at pos (< n; each pos once). */
void keyindex_add(struct keyindex *ix, const void *key, size_t len, size_t pos);
/* The earliest position added with key and not taken yet, now taken; or
 * KEYINDEX_NONE. */
size_t keyindex_take(struct keyindex *ix, const void *key, size_t len);

#endif
