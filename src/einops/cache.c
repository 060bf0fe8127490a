/*
 * The cache of compiled specs: one hash table per command kind, keyed by
 * the command's bytes, with a least-recently-used list bounding its size.
 * A lookup hashes the text and compares it with the entry's copy; it never
 * lexes or parses. One mutex guards all tables; parsing a missed command
 * happens outside it, and when two threads race to insert the same command
 * the first entry wins, so callers always see one spec per cached command.
 */
#include <pthread.h>
#include <string.h>

#include "einops/internal.h"

#define DEFAULT_CAPACITY 1024

typedef struct entry {
    struct entry *chain; /* next in the hash bucket */
    struct entry *newer; /* LRU list neighbours */
    struct entry *older;
    uint64_t hash;
    sw_einops_spec *spec; /* the cache's own reference */
    int64_t length;
    char text[];
} entry;

typedef struct table {
    entry **bucket;
    uint64_t nbucket; /* a power of two, or 0 before the first insert */
    entry *newest;
    entry *oldest;
    int64_t count;
} table;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static table tables[SW_EINOPS_KIND_COUNT];
static int64_t capacity = DEFAULT_CAPACITY;

static entry *find(table *t, uint64_t hash, const char *text, int64_t len) {
    if (!t->nbucket)
        return NULL;
    for (entry *e = t->bucket[hash & (t->nbucket - 1)]; e; e = e->chain)
        if (e->hash == hash && e->length == len &&
            (len == 0 || memcmp(e->text, text, (size_t)len) == 0))
            return e;
    return NULL;
}

static void lru_unlink(table *t, entry *e) {
    if (e->newer)
        e->newer->older = e->older;
    else
        t->newest = e->older;
    if (e->older)
        e->older->newer = e->newer;
    else
        t->oldest = e->newer;
    e->newer = e->older = NULL;
}

static void lru_push(table *t, entry *e) {
    e->newer = NULL;
    e->older = t->newest;
    if (t->newest)
        t->newest->newer = e;
    else
        t->oldest = e;
    t->newest = e;
}

/* Unlinks and frees an entry, dropping the cache's reference. */
static void drop(table *t, entry *e) {
    entry **p = &t->bucket[e->hash & (t->nbucket - 1)];
    while (*p != e)
        p = &(*p)->chain;
    *p = e->chain;
    lru_unlink(t, e);
    --t->count;
    sw_einops_spec_unref(e->spec);
    sw_free(e);
}

/* Keeps the bucket count at least the entry count; failing to grow only
 * makes chains longer. */
static void grow(table *t, int64_t want) {
    if (t->nbucket && (int64_t)t->nbucket >= want)
        return;
    uint64_t n = t->nbucket ? t->nbucket : 8;
    while ((int64_t)n < want)
        n <<= 1;
    entry **b = sw_calloc((size_t)n, sizeof *b);
    if (!b)
        return;
    for (uint64_t i = 0; i < t->nbucket; ++i) {
        entry *e = t->bucket[i];
        while (e) {
            entry *next = e->chain;
            e->chain = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    sw_free(t->bucket);
    t->bucket = b;
    t->nbucket = n;
}

/*
 * Inserts spec for text unless an entry exists; returns the spec callers
 * should get (a new reference to the cached one, or spec itself). Called
 * with the lock held.
 */
static sw_einops_spec *insert(table *t, uint64_t hash, const char *text,
                              int64_t len, sw_einops_spec *spec) {
    entry *e = find(t, hash, text, len);
    if (e) {
        lru_unlink(t, e);
        lru_push(t, e);
        sw_einops_spec_retain(e->spec);
        sw_einops_spec_unref(spec);
        return e->spec;
    }
    grow(t, t->count + 1);
    if (!t->nbucket)
        return spec;
    e = sw_malloc(sizeof *e + (size_t)len + 1);
    if (!e)
        return spec;
    while (t->count >= capacity && t->oldest)
        drop(t, t->oldest);
    e->hash = hash;
    e->length = len;
    if (len)
        memcpy(e->text, text, (size_t)len);
    e->text[len] = '\0';
    e->spec = sw_einops_spec_retain(spec);
    uint64_t b = hash & (t->nbucket - 1);
    e->chain = t->bucket[b];
    t->bucket[b] = e;
    lru_push(t, e);
    ++t->count;
    return spec;
}

sw_status sw_einops_compile(sw_einops_kind kind, const char *command,
                            int64_t length, sw_einops_spec **out) {
    if ((int)kind < 0 || (int)kind >= SW_EINOPS_KIND_COUNT)
        return sw_fail(SW_EVALUE, "unknown layout command kind %d", (int)kind);
    if (!command)
        return sw_fail(SW_ETYPE, SW_EINOPS_NO_COMMAND);
    sw_status st = sw_einops_command_length(command, length, &length);
    if (st)
        return st;
    uint64_t hash = sw_einops_hash(command, length);
    table *t = &tables[kind];
    pthread_mutex_lock(&lock);
    entry *e = find(t, hash, command, length);
    if (e) {
        lru_unlink(t, e);
        lru_push(t, e);
        sw_einops_spec *spec = sw_einops_spec_retain(e->spec);
        pthread_mutex_unlock(&lock);
        *out = spec;
        return SW_OK;
    }
    pthread_mutex_unlock(&lock);
    sw_einops_spec *spec = NULL;
    if ((st = sw_einops_parse(kind, command, length, &spec)))
        return st;
    pthread_mutex_lock(&lock);
    spec = insert(t, hash, command, length, spec);
    pthread_mutex_unlock(&lock);
    *out = spec;
    return SW_OK;
}

sw_status sw_einops_parse_rearrange(const char *command, sw_einops_spec **out) {
    return sw_einops_compile(SW_EINOPS_REARRANGE, command, -1, out);
}

sw_status sw_einops_parse_reduce(const char *command, sw_einops_spec **out) {
    return sw_einops_compile(SW_EINOPS_REDUCE, command, -1, out);
}

sw_status sw_einops_parse_einsum(const char *command, sw_einops_spec **out) {
    return sw_einops_compile(SW_EINOPS_EINSUM, command, -1, out);
}

void sw_einops_cache_clear(void) {
    pthread_mutex_lock(&lock);
    for (int k = 0; k < SW_EINOPS_KIND_COUNT; ++k) {
        table *t = &tables[k];
        while (t->oldest)
            drop(t, t->oldest);
        sw_free(t->bucket);
        t->bucket = NULL;
        t->nbucket = 0;
    }
    pthread_mutex_unlock(&lock);
}

int64_t sw_einops_cache_count(sw_einops_kind kind) {
    if ((int)kind < 0 || (int)kind >= SW_EINOPS_KIND_COUNT)
        return 0;
    pthread_mutex_lock(&lock);
    int64_t n = tables[kind].count;
    pthread_mutex_unlock(&lock);
    return n;
}

int64_t sw_einops_cache_capacity(void) {
    pthread_mutex_lock(&lock);
    int64_t n = capacity;
    pthread_mutex_unlock(&lock);
    return n;
}

sw_status sw_einops_cache_set_capacity(int64_t n) {
    if (n < 1)
        return sw_fail(SW_EVALUE, "einops cache capacity must be at least 1");
    pthread_mutex_lock(&lock);
    capacity = n;
    for (int k = 0; k < SW_EINOPS_KIND_COUNT; ++k) {
        table *t = &tables[k];
        while (t->count > capacity)
            drop(t, t->oldest);
    }
    pthread_mutex_unlock(&lock);
    return SW_OK;
}
