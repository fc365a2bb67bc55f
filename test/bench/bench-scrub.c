/* bench-scrub: secret scrubbing (lib/common/scrub.h) of process output or
 * http bodies, in MB/s, against references measured in the same run:
 *
 *   memmem   finding every pattern (whole forms and triggers) with one
 *            memmem pass per pattern over the same text (what scrubbing
 *            without an automaton costs, before it replaces anything or
 *            handles a value split across reads);
 *   memcpy   copying the text (the floor any scrubber pays);
 *   ordinary the scrubber's own speed on ordinary text, against input
 *            built to defeat naive matchers (near misses of a long value),
 *            and against a text eight times shorter (linearity).
 *
 * The text: C headers (or generated lines) in 64 KiB reads, with a value
 * or one of its encoded forms every 64 KiB. Eight values of 20 to 60
 * bytes, as API keys and tokens are. Each figure is the median of
 * interleaved rounds. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench-util.h"
#include "common/scrub.h"

#define TEXT_BYTES (64u << 20)
#define CHUNK (64u << 10)
#define ROUNDS 7

static void die(const char *what)
{
    fprintf(stderr, "bench-scrub: %s\n", what);
    exit(1);
}

static const char *const values[] = {
    "sk-live-4f3c2b1a0d9e8f7a6b5c4d3e2f1a0b9c",
    "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "p@ssw0rd with spaces & \"quotes\"",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dGVzdA",
    "postgres://user:s3cr3t@db.example.com:5432/prod",
};
#define NVALUES (sizeof(values) / sizeof(values[0]))

/* TEXT_BYTES of C headers, or generated lines where /usr/include is
 * missing, with a secret form planted every CHUNK bytes. */
static char *make_text(const jpt__scrub_set *set)
{
    char *buf = malloc(TEXT_BYTES), path[512];
    size_t n = 0;
    DIR *d = opendir("/usr/include");
    struct dirent *e;

    if (buf == NULL)
        die("out of memory");
    while (d != NULL && n < TEXT_BYTES / 4 && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 3 || strcmp(e->d_name + len - 2, ".h") != 0)
            continue;
        snprintf(path, sizeof(path), "/usr/include/%s", e->d_name);
        FILE *f = fopen(path, "rb");
        if (f == NULL)
            continue;
        n += fread(buf + n, 1, TEXT_BYTES / 4 - n, f);
        fclose(f);
    }
    if (d != NULL)
        closedir(d);
    while (n < TEXT_BYTES / 4)
        n += (size_t)snprintf(buf + n, TEXT_BYTES / 4 - n, "static int line_%zu = %zu;\n", n, n);
    for (size_t at = n; at < TEXT_BYTES; at += n)
        memcpy(buf + at, buf, TEXT_BYTES - at < n ? TEXT_BYTES - at : n);
    for (size_t at = CHUNK / 2, k = 0; at + 200 < TEXT_BYTES; at += CHUNK, k++) {
        const jpt__scrub_pattern *form;
        /* Whole forms only: each is one redaction, exactly its bytes. */
        while (!(form = jpt__scrub_set_pattern(set, k % jpt__scrub_set_patterns(set)))->whole)
            k++;
        memcpy(buf + at, form->text, form->len);
    }
    return buf;
}

static int count(void *ud, const char *p, size_t n)
{
    (void)p;
    *(size_t *)ud += n;
    return JPT_OK;
}

static uint64_t redactions;

/* Seconds to scrub text[0..n) in CHUNK reads; *out the bytes written. */
static double time_scrub(const jpt__scrub_set *set, const char *text, size_t n, size_t *out)
{
    jpt__scrubber s;

    *out = 0;
    jpt__scrubber_init(&s, set, count, out);
    double t0 = bench_now();
    for (size_t at = 0; at < n; at += CHUNK)
        if (jpt__scrubber_feed(&s, text + at, n - at < CHUNK ? n - at : CHUNK) < 0)
            die("scrubbing failed");
    if (jpt__scrubber_finish(&s) < 0)
        die("scrubbing failed");
    double t = bench_now() - t0;
    redactions = s.redactions;
    jpt__scrubber_free(&s);
    return t;
}

static size_t sink_total;

static double time_memmem(const jpt__scrub_set *set, const char *text, size_t n)
{
    size_t found = 0;
    double t0 = bench_now();
    for (size_t i = 0; i < jpt__scrub_set_patterns(set); i++) {
        const jpt__scrub_pattern *pt = jpt__scrub_set_pattern(set, i);
        for (const char *p = text;
             (p = memmem(p, n - (size_t)(p - text), pt->text, pt->len)) != NULL; p += pt->len)
            found++;
    }
    double t = bench_now() - t0;
    sink_total += found;
    return t;
}

static double time_memcpy(const char *text, size_t n)
{
    static char out[CHUNK];
    double t0 = bench_now();
    for (size_t at = 0; at < n; at += CHUNK) {
        memcpy(out, text + at, n - at < CHUNK ? n - at : CHUNK);
        sink_total += (unsigned char)out[at % CHUNK];
    }
    return bench_now() - t0;
}

static double mbps(size_t n, double seconds)
{
    return (double)n / 1e6 / seconds;
}

int main(void)
{
    size_t lens[NVALUES];
    jpt__scrub_set *set = NULL, *near = NULL;

    for (size_t i = 0; i < NVALUES; i++)
        lens[i] = strlen(values[i]);
    if (jpt__scrub_set_new(values, lens, NVALUES, &set) < 0)
        die("out of memory");
    char *text = make_text(set);

    /* Near misses: a 4 KiB value of 'a's ending in 'b', over all 'a's. */
    char *long_value = malloc(4097), *near_text = malloc(TEXT_BYTES);
    if (long_value == NULL || near_text == NULL)
        die("out of memory");
    memset(long_value, 'a', 4096);
    long_value[4095] = 'b';
    long_value[4096] = '\0';
    const char *near_values[] = {long_value};
    size_t near_len = 4096;
    if (jpt__scrub_set_new(near_values, &near_len, 1, &near) < 0)
        die("out of memory");
    memset(near_text, 'a', TEXT_BYTES);

    double scrub[ROUNDS], small[ROUNDS], mm[ROUNDS], cp[ROUNDS], adv[ROUNDS];
    size_t written = 0, ignored = 0;
    uint64_t replaced = 0;
    for (int r = 0; r < ROUNDS; r++) {
        scrub[r] = time_scrub(set, text, TEXT_BYTES, &written);
        replaced = redactions;
        small[r] = time_scrub(set, text, TEXT_BYTES / 8, &ignored) * 8;
        mm[r] = time_memmem(set, text, TEXT_BYTES);
        cp[r] = time_memcpy(text, TEXT_BYTES);
        adv[r] = time_scrub(near, near_text, TEXT_BYTES, &ignored);
    }
    double t_scrub = bench_median(scrub, ROUNDS), t_small = bench_median(small, ROUNDS);
    double t_mm = bench_median(mm, ROUNDS), t_cp = bench_median(cp, ROUNDS);
    double t_adv = bench_median(adv, ROUNDS);

    /* Ratios are times: below 1, faster than the reference. */
    printf("scrub %u MiB, %zu values (%zu patterns, longest %zu bytes): %.0f MB/s "
           "(ratio %.2f vs memmem per pattern at %.0f MB/s)\n",
           TEXT_BYTES >> 20, NVALUES, jpt__scrub_set_patterns(set), jpt__scrub_set_max_len(set),
           mbps(TEXT_BYTES, t_scrub), t_scrub / t_mm, mbps(TEXT_BYTES, t_mm));
    printf("scrub vs copy: %.0f MB/s (ratio %.2f vs memcpy at %.0f MB/s)\n",
           mbps(TEXT_BYTES, t_scrub), t_scrub / t_cp, mbps(TEXT_BYTES, t_cp));
    printf("scrub near misses of a 4 KiB value: %.0f MB/s (ratio %.2f vs ordinary text)\n",
           mbps(TEXT_BYTES, t_adv), t_adv / t_scrub);
    printf("scrub linearity, time per byte at %u MiB: %.2f ns (ratio %.2f vs %u MiB)\n",
           TEXT_BYTES >> 20, t_scrub / TEXT_BYTES * 1e9, t_scrub / t_small, TEXT_BYTES >> 23);
    /* The work was real: every planted form was replaced. */
    if (replaced != (TEXT_BYTES - CHUNK / 2 - 200) / CHUNK + 1 || written >= TEXT_BYTES)
        die("the planted forms were not all replaced");
    printf("scrub replaced: %llu forms (%zu bytes out of %u; checksum %zu)\n",
           (unsigned long long)replaced, written, TEXT_BYTES, sink_total % 10);
    free(long_value);
    free(near_text);
    free(text);
    jpt__scrub_set_free(set);
    jpt__scrub_set_free(near);
    return 0;
}
