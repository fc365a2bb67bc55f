/* bench-state: parse + render of a 1 MiB multi-resource envelope, against
 * jansson's json_loadb of the same bytes measured in the same run; and an
 * answer checked against a schema of many alternatives, against the same
 * answer checked against the one alternative it matches.
 *
 * The first target (issue 2) is a ratio of at most 1.5: turning tool output
 * into a state and the text the model reads should cost little more than
 * decoding the JSON at all. The second (issue 7) is a ratio of at most 2.0
 * for a 10 000-item answer against a 2 000-way anyOf whose last alternative
 * matches: the 1 999 others cost their reading and a check that fails at
 * once, never a walk or a message over the answer each (it took seconds).
 * Each figure is the median of interleaved rounds, so a noisy neighbour
 * slows both sides alike. */
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

#define ALTERNATIVES 2000
#define ANSWER_ITEMS 10000

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

/* ---- An answer against many alternatives --------------------------------------- */

/* The alternative the answer matches: a list of integers. */
static const char list_schema[] = "{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}";

/* anyOf: ALTERNATIVES - 1 that the answer fails, of three kinds (a
 * constant, a list of strings, a short list), then list_schema. */
static char *make_alternatives(void)
{
    size_t cap = ALTERNATIVES * 64 + sizeof(list_schema) + 16, n = 0;
    char *buf = malloc(cap);

    if (buf == NULL)
        return NULL;
    n += (size_t)sprintf(buf + n, "{\"anyOf\":[");
    for (int i = 0; i < ALTERNATIVES - 1; i++)
        n += (size_t)sprintf(buf + n,
                             i % 3 == 0   ? "{\"const\":%d},"
                             : i % 3 == 1 ? "{\"items\":{\"type\":\"string\"},\"$comment\":%d},"
                                          : "{\"maxItems\":%d},",
                             i % 3 == 2 ? i % 100 : i);
    sprintf(buf + n, "%s]}", list_schema);
    return buf;
}

/* [0, 1, …, ANSWER_ITEMS - 1]. */
static char *make_answer(void)
{
    char *buf = malloc(ANSWER_ITEMS * 8 + 4);
    size_t n = 0;

    if (buf == NULL)
        return NULL;
    buf[n++] = '[';
    for (int i = 0; i < ANSWER_ITEMS; i++)
        n += (size_t)sprintf(buf + n, i > 0 ? ",%d" : "%d", i);
    sprintf(buf + n, "]");
    return buf;
}

static double time_check(const char *schema, const char *answer)
{
    double start = bench_now();

    for (int i = 0; i < ITERATIONS; i++)
        if (jpt_schema_check(schema, answer, NULL) != JPT_OK)
            abort();
    return (bench_now() - start) / ITERATIONS;
}

static int bench_alternatives(void)
{
    char *schema = make_alternatives(), *answer = make_answer();
    double ref[ROUNDS], many[ROUNDS];

    if (schema == NULL || answer == NULL) {
        fprintf(stderr, "bench-state: out of memory\n");
        return 1;
    }
    time_check(list_schema, answer); /* warm caches and the allocator */
    time_check(schema, answer);
    for (int r = 0; r < ROUNDS; r++) {
        ref[r] = time_check(list_schema, answer);
        many[r] = time_check(schema, answer);
    }
    double t_ref = bench_median(ref, ROUNDS), t_many = bench_median(many, ROUNDS);
    printf("schema-check-one-alternative: %.2f ms\n", t_ref * 1e3);
    printf("schema-check-%d-alternatives: %.2f ms (ratio %.2f vs one alternative; "
           "target <= 2.00)\n",
           ALTERNATIVES, t_many * 1e3, t_many / t_ref);
    free(schema);
    free(answer);
    return 0;
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
    return bench_alternatives();
}
