/* Positions by key; see keyindex.h.
 *
 * One entry per distinct key holds the first position not yet taken and
 * the last one added; next[] chains a key's positions in the order added.
 * Entries come from one array of n and keys are the caller's, so a batch
 * costs no allocation per item. */
#include "keyindex.h"

#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

#define uthash_malloc(sz) xmalloc(sz) /* allocation failure aborts in one place */
#include <uthash.h>

struct keyindex_entry {
    UT_hash_handle hh;
    size_t first, last;
};

struct keyindex {
    struct keyindex_entry *map;
    struct keyindex_entry *entries; /* n of them; the first nentries in use */
    size_t n, nentries;
    size_t *next;
};

struct keyindex *keyindex_new(size_t n)
{
    struct keyindex *ix = xcalloc(1, sizeof *ix);
    ix->n = n;
    ix->entries = xmalloc((n ? n : 1) * sizeof *ix->entries);
    ix->next = xmalloc((n ? n : 1) * sizeof *ix->next);
    return ix;
}

void keyindex_free(struct keyindex *ix)
{
    if (!ix)
        return;
    HASH_CLEAR(hh, ix->map);
    free(ix->entries);
    free(ix->next);
    free(ix);
}

void keyindex_add(struct keyindex *ix, const void *key, size_t len, size_t pos)
{
    HOOKD_ASSERT(pos < ix->n);
    struct keyindex_entry *e;
    ix->next[pos] = KEYINDEX_NONE;
    HASH_FIND(hh, ix->map, key, len, e);
    if (e) {
        if (e->first == KEYINDEX_NONE)
            e->first = pos;
        else
            ix->next[e->last] = pos;
        e->last = pos;
        return;
    }
    HOOKD_ASSERT(ix->nentries < ix->n);
    e = &ix->entries[ix->nentries++];
    e->first = e->last = pos;
    HASH_ADD_KEYPTR(hh, ix->map, key, len, e);
}

size_t keyindex_take(struct keyindex *ix, const void *key, size_t len)
{
    struct keyindex_entry *e;
    HASH_FIND(hh, ix->map, key, len, e);
    if (!e || e->first == KEYINDEX_NONE)
        return KEYINDEX_NONE;
    size_t pos = e->first;
    e->first = ix->next[pos];
    return pos;
}
