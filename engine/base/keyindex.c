/* Positions by key; see keyindex.h.
 *
 * One entry per distinct key holds the first position not yet taken and
 * the last one added; next[] chains a key's positions in the order added. */
#include "keyindex.h"

#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

#define uthash_malloc(sz) xmalloc(sz) /* allocation failure aborts in one place */
#include <uthash.h>

struct keyindex_entry {
    UT_hash_handle hh;
    size_t first, last;
    char key[];
};

struct keyindex {
    struct keyindex_entry *map;
    size_t n;
    size_t *next;
};

struct keyindex *keyindex_new(size_t n)
{
    struct keyindex *ix = xcalloc(1, sizeof *ix);
    ix->n = n;
    ix->next = xmalloc((n ? n : 1) * sizeof *ix->next);
    return ix;
}

void keyindex_free(struct keyindex *ix)
{
    if (!ix)
        return;
    struct keyindex_entry *e, *tmp;
    HASH_ITER(hh, ix->map, e, tmp)
    {
        HASH_DEL(ix->map, e);
        free(e);
    }
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
    e = xmalloc(sizeof *e + len + 1);
    memcpy(e->key, key, len);
    e->key[len] = '\0';
    e->first = e->last = pos;
    HASH_ADD_KEYPTR(hh, ix->map, e->key, len, e);
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
