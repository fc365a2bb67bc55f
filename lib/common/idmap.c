/* A map from strings to pointers: open addressing with linear probing and
 * backward-shift deletion (no tombstones, so a map that sees many inserts
 * and removals never degrades). Keys are not copied: each belongs to the
 * value it maps to and must outlive its entry. The hash is seeded per map
 * from the clock and the map's address, so ids chosen by a model cannot be
 * picked to collide. */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "common.h"

#define MIN_CAPACITY 16

static uint64_t hash(const jpt__idmap *m, const char *key)
{
    /* FNV-1a over the seed and the key, then a final mix (splitmix64) so
     * that the low bits, which pick the slot, depend on every byte. */
    uint64_t h = 0xcbf29ce484222325u ^ m->seed;

    for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++) {
        h ^= *p;
        h *= 0x100000001b3u;
    }
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9u;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebu;
    return h ^ (h >> 31);
}

void jpt__idmap_init(jpt__idmap *m)
{
    struct timespec ts;

    memset(m, 0, sizeof(*m));
    clock_gettime(CLOCK_MONOTONIC, &ts);
    m->seed = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
              (uint64_t)(uintptr_t)m;
}

void jpt__idmap_free(jpt__idmap *m)
{
    jpt__free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}

/* The slot holding `key`, or the empty slot where it would go. */
static size_t find_slot(const jpt__idmap *m, const char *key)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)hash(m, key) & mask;

    while (m->slots[i].key != NULL && strcmp(m->slots[i].key, key) != 0)
        i = (i + 1) & mask;
    return i;
}

void *jpt__idmap_get(const jpt__idmap *m, const char *key)
{
    if (m->n == 0)
        return NULL;
    return m->slots[find_slot(m, key)].value;
}

/* Moves the entries to `cap` slots. */
static int resize(jpt__idmap *m, size_t cap)
{
    jpt__idmap_slot *old = m->slots;
    size_t old_cap = m->cap;

    if (cap < m->cap || cap > SIZE_MAX / sizeof(*old))
        return JPT_ERR_NOMEM;
    jpt__idmap_slot *slots = jpt__calloc(cap, sizeof(*slots));
    if (slots == NULL)
        return JPT_ERR_NOMEM;
    m->slots = slots;
    m->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].key != NULL)
            m->slots[find_slot(m, old[i].key)] = old[i];
    jpt__free(old);
    return JPT_OK;
}

static int grow(jpt__idmap *m)
{
    return resize(m, m->cap ? m->cap * 2 : MIN_CAPACITY);
}

int jpt__idmap_reserve(jpt__idmap *m, size_t n)
{
    size_t cap = m->cap ? m->cap : MIN_CAPACITY;

    /* At most 3/4 full, as put keeps it. */
    while (n > SIZE_MAX / 4 || n * 4 > cap * 3) {
        if (cap > SIZE_MAX / 2 || n > SIZE_MAX / 4)
            return JPT_ERR_NOMEM;
        cap *= 2;
    }
    return cap == m->cap ? JPT_OK : resize(m, cap);
}

int jpt__idmap_put(jpt__idmap *m, const char *key, void *value)
{
    /* At most 3/4 full, so a probe ends quickly. */
    if ((m->n + 1) * 4 > m->cap * 3 && grow(m) < 0)
        return JPT_ERR_NOMEM;
    size_t i = find_slot(m, key);
    if (m->slots[i].key != NULL)
        return JPT_ERR_EXISTS;
    m->slots[i].key = key;
    m->slots[i].value = value;
    m->n++;
    return JPT_OK;
}

void jpt__idmap_remove(jpt__idmap *m, const char *key, const void *value)
{
    if (m->n == 0)
        return;
    size_t mask = m->cap - 1;
    size_t i = find_slot(m, key);
    /* Only the entry of this value: another with an equal key stays. */
    if (m->slots[i].key == NULL || m->slots[i].value != value)
        return;
    m->n--;
    /* Backward shift: move later entries of the probe run into the hole
     * when their home slot lies at or before it. */
    for (size_t j = (i + 1) & mask; m->slots[j].key != NULL; j = (j + 1) & mask) {
        size_t home = (size_t)hash(m, m->slots[j].key) & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].key = NULL;
    m->slots[i].value = NULL;
}
