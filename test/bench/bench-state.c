/* bench-state: parse + render of a 1 MiB multi-resource envelope, against
 * jansson's json_loadb of the same bytes measured in the same run.
 *
 * The target (issue 2) is a ratio of at most 1.5: turning tool output into a
 * state and the text the model reads should cost little more than decoding
 * the JSON at all. Each figure is the median of interleaved rounds, so a
 * noisy neighbour slows both sides alike. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <jptool/jptool.h>

#include "bench-util.h"

#define TARGET_BYTES (1024 * 1024)
#define ROUNDS 15
#define ITERATIONS 10

/* An envelope like a file-reading tool's: resources of Rust source (quotes,
 * backslashes, newlines and the odd backtick to escape and fence), with a
 * text block between each. */
static char *make_envelope(size_t *len, size_t *resources)
{
    static const char line[] =
        "    let value = format!(\\\"{}: {}\\\", key, map[\\\"k\\\"]); // `x` \\\\ done\\n";
    size_t cap = TARGET_BYTES + 64 * 1024, n = 0;
    char *buf = malloc(cap);

    if (buf == NULL)
        return NULL;
    n += (size_t)sprintf(buf + n, "{\"content\":[");
    for (*resources = 0; n < TARGET_BYTES; (*resources)++) {
        n += (size_t)sprintf(buf + n,
                             "%s{\"type\":\"text\",\"text\":\"Match %zu of the search:\"},"
                             "{\"type\":\"resource\",\"resource\":{\"uri\":"
                             "\"file:///project/src/module_%zu/../module_%zu/lib.rs\","
                             "\"mimeType\":\"text/rust\",\"text\":\"fn f%zu() {\\n",
                             *resources ? "," : "", *resources, *resources, *resources,
                             *resources);
        for (int i = 0; i < 48; i++)
            n += (size_t)sprintf(buf + n, "%s", line);
        n += (size_t)sprintf(buf + n, "}\\n\"}}");
    }
    n += (size_t)sprintf(buf + n, "]}");
    *len = n;
    return buf;
}

static double time_json_loadb(const char *data, size_t len)
{
    double start = bench_now();
    for (int i = 0; i < ITERATIONS; i++) {
        json_t *v = json_loadb(data, len, 0, NULL);
        if (v == NULL)
            abort();
        json_decref(v);
    }
    return (bench_now() - start) / ITERATIONS;
}

static double time_parse(const char *data, size_t len, int with_render)
{
    jpt_render_options opts = {sizeof(opts), "/project"};
    double start = bench_now();

    for (int i = 0; i < ITERATIONS; i++) {
        jpt_state *s = NULL;
        char *out = NULL;
        if (jpt_state_parse(data, len, 0, &s) != JPT_OK)
            abort();
        if (with_render && jpt_state_render(s, &opts, &out) != JPT_OK)
            abort();
        jpt_free(out);
        jpt_state_unref(s);
    }
    return (bench_now() - start) / ITERATIONS;
}

int main(void)
{
    size_t len, resources;
    char *data = make_envelope(&len, &resources);
    double ref[ROUNDS], parse[ROUNDS], full[ROUNDS];

    if (data == NULL)
        return 1;

    /* Sanity: the envelope is read as intended, with no warnings. */
    jpt_state *s = NULL;
    if (jpt_state_parse(data, len, 0, &s) != JPT_OK ||
        jpt_state_block_count(s) != 2 * resources || jpt_state_warning_count(s) != 0) {
        fprintf(stderr, "bench-state: the envelope did not parse as expected\n");
        return 1;
    }
    jpt_state_unref(s);

    time_json_loadb(data, len); /* warm caches and the allocator */
    time_parse(data, len, 1);
    for (int r = 0; r < ROUNDS; r++) {
        ref[r] = time_json_loadb(data, len);
        parse[r] = time_parse(data, len, 0);
        full[r] = time_parse(data, len, 1);
    }

    double mb = (double)len / (1024.0 * 1024.0);
    double t_ref = bench_median(ref, ROUNDS), t_parse = bench_median(parse, ROUNDS),
           t_full = bench_median(full, ROUNDS);
    printf("input: %.2f MiB envelope, %zu resources + %zu text blocks\n", mb,
           resources, resources);
    printf("json_loadb: %.1f MB/s\n", mb / t_ref);
    printf("state-parse: %.1f MB/s (ratio %.2f vs json_loadb)\n", mb / t_parse,
           t_parse / t_ref);
    printf("state-parse-render: %.1f MB/s (ratio %.2f vs json_loadb; target <= 1.50)\n",
           mb / t_full, t_full / t_ref);
    free(data);
    return 0;
}
