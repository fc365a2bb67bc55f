/* libFuzzer harness for secret scrubbing (lib/vfs/scrub.h), differential:
 * the input's first byte picks how many values (1 to 3) and where the
 * text is cut into two reads; the values and the text follow, separated
 * by 0xFF bytes. The scrubber's output, fed in those two pieces, must be
 * exactly what a naive reference gives — every occurrence of every form
 * found by comparing at every offset, occurrences that share a byte
 * merged into one mark — and what it holds back never exceeds the
 * longest form. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vfs/scrub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct span {
    size_t s, e;
} span;

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return (x->s > y->s) - (x->s < y->s);
}

static void naive(const jpt__scrub_set *set, const char *text, size_t n, jpt__buf *out)
{
    span *spans = NULL;
    size_t count = 0, cap = 0, len;
    const char *form;

    for (size_t i = 0; (form = jpt__scrub_set_pattern(set, i, &len)) != NULL; i++)
        for (size_t at = 0; at + len <= n; at++)
            if (memcmp(text + at, form, len) == 0) {
                if (count == cap && (spans = realloc(spans, (cap = cap ? cap * 2 : 16) *
                                                                sizeof(*spans))) == NULL)
                    abort();
                spans[count].s = at;
                spans[count++].e = at + len;
            }
    if (count > 0)
        qsort(spans, count, sizeof(*spans), span_cmp);
    size_t at = 0;
    for (size_t i = 0; i < count;) {
        span run = spans[i++];
        while (i < count && spans[i].s < run.e) {
            if (spans[i].e > run.e)
                run.e = spans[i].e;
            i++;
        }
        if (jpt__buf_append(out, text + at, run.s - at) < 0 || jpt__buf_puts(out, JPT__SCRUB_MARK) < 0)
            abort();
        at = run.e;
    }
    if (jpt__buf_append(out, text + at, n - at) < 0)
        abort();
    free(spans);
}

static int to_buf(void *ud, const char *p, size_t n)
{
    return jpt__buf_append(ud, p, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *values[3];
    size_t lens[3], nvalues, at = 1;

    if (size < 2 || size > 4096)
        return 0;
    nvalues = 1 + data[0] % 3;
    for (size_t i = 0; i < nvalues; i++) {
        const uint8_t *end = memchr(data + at, 0xFF, size - at);
        if (end == NULL)
            return 0;
        values[i] = (const char *)data + at;
        lens[i] = (size_t)(end - (data + at));
        at += lens[i] + 1;
    }
    const char *text = (const char *)data + at;
    size_t n = size - at, cut = n > 0 ? (data[0] / 3u) % (n + 1) : 0;

    jpt__scrub_set *set = NULL;
    if (jpt__scrub_set_new(values, lens, nvalues, &set) < 0)
        abort();
    jpt__buf got = JPT__BUF_INIT, want = JPT__BUF_INIT;
    jpt__scrubber s;
    jpt__scrubber_init(&s, set, to_buf, &got);
    if (jpt__scrubber_feed(&s, text, cut) < 0 ||
        s.carry.len > jpt__scrub_set_max_len(set) ||
        jpt__scrubber_feed(&s, text + cut, n - cut) < 0 ||
        s.carry.len > jpt__scrub_set_max_len(set) || jpt__scrubber_finish(&s) < 0)
        abort();
    naive(set, text, n, &want);
    if (got.len != want.len || (got.len > 0 && memcmp(got.data, want.data, got.len) != 0))
        abort();
    jpt__scrubber_free(&s);
    jpt__buf_free(&got);
    jpt__buf_free(&want);
    jpt__scrub_set_free(set);
    return 0;
}
