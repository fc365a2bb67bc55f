/* libFuzzer harness for secret scrubbing (lib/common/scrub.h),
 * differential: the input's first byte picks how many values (1 to 3) and
 * where the text is cut into two reads; the values and the text follow,
 * separated by 0xFF bytes. The scrubber's output, fed in those two
 * pieces, must be exactly what a naive reference gives — every pattern
 * compared at every offset; at each place with a trigger the longest
 * whole form there, or as far as its triggers reach; a place whose
 * triggers lie inside a whole form decided before adds nothing;
 * redactions that share a byte merged into one mark — and what it holds
 * back never exceeds the longest pattern. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/scrub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct place {
    size_t trig_end, span_end, whole_end;
} place;

static void mark(const char *text, size_t *emitted, size_t s, size_t e, jpt__buf *out)
{
    if (jpt__buf_append(out, text + *emitted, s - *emitted) < 0 ||
        jpt__buf_puts(out, JPT__SCRUB_MARK) < 0)
        abort();
    *emitted = e;
}

static void naive(const jpt__scrub_set *set, const char *text, size_t n, jpt__buf *out)
{
    place *at = calloc(n + 1, sizeof(*at));
    const jpt__scrub_pattern *pt;

    if (at == NULL)
        abort();
    for (size_t i = 0; (pt = jpt__scrub_set_pattern(set, i)) != NULL; i++)
        for (size_t k = 0; k + pt->len <= n; k++)
            if (memcmp(text + k, pt->text, pt->len) == 0) {
                size_t end = k + pt->len, reach = k + (pt->trigger ? pt->span : pt->len);
                if (at[k].trig_end < end)
                    at[k].trig_end = end;
                if (at[k].span_end < reach)
                    at[k].span_end = reach;
                if (pt->whole && at[k].whole_end < end)
                    at[k].whole_end = end;
            }
    size_t covered = 0, emitted = 0, run_s = 0, run_e = 0;
    int open = 0;
    for (size_t k = 0; k < n; k++) {
        if (at[k].trig_end == 0 || (at[k].whole_end == 0 && at[k].trig_end <= covered))
            continue;
        if (at[k].whole_end > covered)
            covered = at[k].whole_end;
        size_t e = at[k].whole_end != 0 ? at[k].whole_end
                   : at[k].span_end < n ? at[k].span_end
                                        : n;
        if (open && k < run_e) {
            if (e > run_e)
                run_e = e;
            continue;
        }
        if (open)
            mark(text, &emitted, run_s, run_e, out);
        run_s = k;
        run_e = e;
        open = 1;
    }
    if (open)
        mark(text, &emitted, run_s, run_e, out);
    if (jpt__buf_append(out, text + emitted, n - emitted) < 0)
        abort();
    free(at);
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
