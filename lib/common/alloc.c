/* The allocator hook: every allocation of the library goes through here, so a
 * host can account for memory and the tests can fail the Nth allocation. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* The jansson glue (json.c), where the library holds it: libjptool routes
 * jansson's allocations through the hook too. libjptool-tool has no
 * jansson (lib/vfs-tool), and there the weak reference stays NULL, so
 * that this file, which every other one needs, needs no JSON library. */
void jpt__json_use_library_allocator(void) __attribute__((weak, visibility("hidden")));

static void *libc_malloc(size_t n, void *ud)
{
    (void)ud;
    return malloc(n);
}

static void *libc_realloc(void *p, size_t n, void *ud)
{
    (void)ud;
    return realloc(p, n);
}

static void libc_free(void *p, void *ud)
{
    (void)ud;
    free(p);
}

static jpt_allocator allocator = {
    sizeof(jpt_allocator), libc_malloc, libc_realloc, libc_free, NULL,
};

/* Set by the first allocation: from then on memory exists that the current
 * allocator must free, so the allocator can no longer change. */
static bool allocator_in_use;

/* Failed allocations on this thread. jansson reports some of its own
 * allocation failures as syntax errors; comparing this count before and
 * after a call tells the two apart. */
static _Thread_local unsigned long failed_allocations JPT__TLS_HOT;

unsigned long jpt__alloc_failures(void)
{
    return failed_allocations;
}

JPT_EXPORT int jpt_set_allocator(const jpt_allocator *a)
{
    jpt__fail_clear();
    if (allocator_in_use)
        return jpt__fail(JPT_ERR_STATE, "jpt_set_allocator: the library has allocated memory "
                                        "already; set the allocator before any other call");
    if (a == NULL) {
        allocator.malloc = libc_malloc;
        allocator.realloc = libc_realloc;
        allocator.free = libc_free;
        allocator.ud = NULL;
        return JPT_OK;
    }
    int rc = jpt__struct_check(a, a->size, sizeof(jpt_allocator));
    if (rc == JPT_ERR_INVALID)
        return jpt__fail(rc, "jpt_set_allocator: a->size %zu is less than jpt_allocator (%zu)",
                         a->size, sizeof(jpt_allocator));
    if (rc < 0)
        return jpt__fail(rc, "jpt_set_allocator: a sets fields this jptool does not know "
                             "(built against a newer one)");
    if (a->malloc == NULL || a->realloc == NULL || a->free == NULL)
        return jpt__fail(JPT_ERR_INVALID, "jpt_set_allocator: a->%s is NULL; all three "
                                          "functions are required",
                         a->malloc == NULL ? "malloc" : a->realloc == NULL ? "realloc" : "free");
    allocator = *a;
    allocator.size = sizeof(jpt_allocator);
    if (jpt__json_use_library_allocator != NULL)
        jpt__json_use_library_allocator();
    return JPT_OK;
}

void *jpt__malloc(size_t n)
{
    allocator_in_use = true;
    void *p = allocator.malloc(n ? n : 1, allocator.ud);
    failed_allocations += p == NULL;
    return p;
}

/* From this size, glibc's calloc maps fresh pages (its mmap threshold). */
#define CALLOC_PAGES_BYTES (128 * 1024)

void *jpt__calloc(size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size)
        return NULL;
    /* The C library's calloc hands out fresh pages that are zero already,
     * touched only as they are used: no stall zeroing megabytes at once
     * (issue 18). (Smaller blocks are quicker cleared here.) */
    if (allocator.malloc == libc_malloc && count * size >= CALLOC_PAGES_BYTES) {
        allocator_in_use = true;
        void *p = calloc(count ? count : 1, size ? size : 1);
        failed_allocations += p == NULL;
        return p;
    }
    void *p = jpt__malloc(count * size);
    if (p != NULL)
        memset(p, 0, count * size);
    return p;
}

void *jpt__realloc(void *p, size_t n)
{
    if (p == NULL)
        return jpt__malloc(n);
    void *q = allocator.realloc(p, n ? n : 1, allocator.ud);
    failed_allocations += q == NULL;
    return q;
}

void jpt__free(void *p)
{
    if (p != NULL)
        allocator.free(p, allocator.ud);
}

/* Past glibc's per-thread cache (1032 bytes) and in its large range: a
 * request of this size merges every block of its "fast bins" first. */
#define SETTLE_BYTES 4096

void jpt__alloc_settle(void)
{
    /* glibc keeps freed blocks of up to 128 bytes unmerged in fast bins
     * until a request in its large range merges them all at once
     * (malloc_consolidate): after a hundred thousand small frees, a stall
     * of milliseconds at some later allocation, anywhere (issue 18). One
     * such request after each slice of frees merges that slice's blocks
     * there and then. A host's own allocator is left alone. */
    if (allocator.malloc != libc_malloc)
        return;
    allocator.free(allocator.malloc(SETTLE_BYTES, allocator.ud), allocator.ud);
}

JPT_EXPORT void jpt_free(void *p)
{
    jpt__free(p);
}

char *jpt__memdup0(const void *p, size_t n)
{
    if (n == SIZE_MAX)
        return NULL;
    char *copy = jpt__malloc(n + 1);
    if (copy == NULL)
        return NULL;
    if (n > 0)
        memcpy(copy, p, n);
    copy[n] = '\0';
    return copy;
}

void *jpt__array_reserve(void *v, size_t *cap, size_t need, size_t size, size_t initial)
{
    size_t grown = *cap ? *cap : initial;

    if (need <= *cap)
        return v;
    while (grown < need) {
        if (grown > SIZE_MAX / 2)
            return NULL;
        grown *= 2;
    }
    if (grown > SIZE_MAX / size)
        return NULL;
    void *bigger = jpt__realloc(v, grown * size);
    if (bigger != NULL)
        *cap = grown;
    return bigger;
}

char *jpt__strdup(const char *s)
{
    return jpt__memdup0(s, strlen(s));
}
