/* bench-grep: fs.grep over a large tree against ripgrep with one thread
 * on the same tree, measured in the same run (issue 9 §5, issue 16 §2).
 *
 * The tree is /usr/include (or the directory given as the first
 * argument). rg is run with the flags that give fs.grep's file set
 * (--no-ignore --hidden -g '!.git') and prints every matching line with
 * its number, into a pipe this program reads; fs.grep builds its whole
 * JSON result (max_matches high enough for every match). fs.grep judges
 * lines as `rg -P` does, so its match count must be rg -P's, or the run
 * fails. Each figure is the median of interleaved rounds after a warm-up,
 * so every side finds the tree in the page cache; CPU time (this process's,
 * rg's as a reaped child) is printed too, steadier than wall time where
 * other work shares the machine. Target: at most rg -j1's
 * time (ratio <= 1.0), against ripgrep's own engine where it can run the
 * pattern, else against rg -j1 -P (lookaround, \A: only PCRE2 has them).
 * The patterns take each of the matcher's ways: a literal alone, a
 * literal and the regex on its lines, the regex over many lines at once,
 * and the regex on each line alone.
 *
 * A second figure slices the same grep as a VFS host does (steps of a 2 ms
 * budget through the internal interface): the longest step, which is what
 * the host's loop waits for at most, and the total against one step. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <limits.h>

#include <jansson.h>
#include <jptool/jptool.h>

#include "files/files.h"

#include "bench-util.h"

#define ROUNDS 7

typedef struct pattern {
    const char *name;
    const char *pattern;
    bool caseless;
    bool pcre2_only; /* ripgrep's own engine cannot run it */
    const char *subdir; /* searched instead of the whole tree, else NULL */
} pattern;

static const pattern patterns[] = {
    {"literal", "pthread_mutex_lock", false, false, NULL},
    {"regex-with-literal", "struct \\w+_ops\\b", false, false, NULL},
    {"posix-class-literal", "[[:digit:]]+\\.[[:digit:]]+", false, false, NULL},
    {"regex-common-literal", "[A-Z]{3,}_[0-9]{2,}\\b", false, false, NULL},
    {"regex-no-literal", "\\b[0-9a-f]{12,}\\b", false, false, NULL},
    {"unicode-classes-no-literal", "[[:upper:]]{4,}[[:digit:]]{3}", false, false, NULL},
    {"case-insensitive", "copyright", true, false, NULL},
    /* Over /usr/include these two match half a million lines, a result
     * past JPT_VFS_GREP_RESULT_LIMIT: they search one directory of it. */
    {"lookahead-literal", ";(?!\\s)", false, true, "linux"},
    {"no-literal-line-by-line", "\\A\\s+\\w", false, true, "linux"},
    {"lookbehind-line-by-line", "(?<![\\w.])[0-9]{4}\\b", false, true, NULL},
};

static char *grep_params(const pattern *p)
{
    json_t *pat = json_string(p->pattern);
    char *quoted = json_dumps(pat, JSON_ENCODE_ANY);
    char *params = NULL;

    json_decref(pat);
    if (quoted == NULL ||
        asprintf(&params, "{\"pattern\":%s,\"max_matches\":100000000%s%s%s%s}", quoted,
                 p->caseless ? ",\"case_insensitive\":true" : "",
                 p->subdir != NULL ? ",\"paths\":[\"" : "", p->subdir != NULL ? p->subdir : "",
                 p->subdir != NULL ? "\"]" : "") < 0)
        params = NULL;
    free(quoted);
    return params;
}

/* rg -j1 -P on the pattern: -i is written (?i), bench_rg_lines taking one
 * flag. */
static long rg_pcre2_lines(const char *rg, const char *root, const pattern *p)
{
    char pcre[512];

    snprintf(pcre, sizeof(pcre), "%s%s", p->caseless ? "(?i)" : "", p->pattern);
    return bench_rg_lines(rg, root, "-P", pcre);
}

static size_t last_result_len;

/* CPU seconds (user and system) of this process, and of its children
 * reaped so far: on a machine other work shares, these hold still where
 * wall time does not. */
static double cpu_self(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_children(void)
{
    struct rusage ru;

    getrusage(RUSAGE_CHILDREN, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Runs fs.grep; returns the matching lines of its result, or -1. */
static long run_fs_grep(jpt_files *f, const char *params, double *seconds, double *cpu)
{
    char *result = NULL;
    double start = bench_now(), cpu_start = cpu_self();

    if (jpt_files_grep(f, params, &result) != JPT_OK) {
        fprintf(stderr, "bench-grep: fs.grep failed: %s\n", jpt_files_errmsg(f));
        return -1;
    }
    *seconds = bench_now() - start;
    *cpu = cpu_self() - cpu_start;
    last_result_len = strlen(result);
    json_t *r = json_loads(result, 0, NULL), *file, *line;
    size_t i, j;
    long matches = 0;
    json_array_foreach(json_object_get(r, "matches"), i, file)
        json_array_foreach(json_object_get(file, "lines"), j, line)
            matches += json_is_true(json_object_get(line, "is_match"));
    if (json_is_true(json_object_get(r, "truncated"))) {
        fprintf(stderr, "bench-grep: the result was cut at its limit (%zu bytes): the counts "
                        "cannot be compared\n", last_result_len);
        matches = -1;
    }
    json_decref(r);
    jpt_free(result);
    return matches;
}

typedef struct sliced_answer {
    int status;
    size_t len;
} sliced_answer;

static void done(void *ud, int status, const jpt__vfs_fs_result *result, const char *message)
{
    sliced_answer *a = ud;

    (void)message;
    a->status = status;
    a->len = result != NULL ? result->json_len : 0;
}

/* The grep in steps of `budget_ns`: prints the longest step. The result
 * must be as long as the one-step result's `whole_len`. */
static int sliced(jpt_files *f, const char *params_text, double whole, size_t whole_len)
{
    const uint64_t budget_ns = 2000000;
    char *text = strdup(params_text), why[256];
    jpt__vfs_span span = {text, text != NULL ? strlen(text) : 0};
    jpt__vfs_params params;
    void *arrays = NULL;
    jpt__files_call *c = NULL;
    static double steps[200000], steps_cpu[200000];
    double start = bench_now();
    sliced_answer a = {1, 0};
    int n = 0;

    /* The params as the VFS engine decodes them (the text is valid JSON). */
    int rc = text == NULL ? JPT_ERR_NOMEM
                          : jpt__vfs_params_decode(JPT__VFS_FS_GREP, span, &params, &arrays, why,
                                                   sizeof(why));
    if (rc == JPT_OK)
        rc = jpt__files_submit(f, JPT__VFS_FS_GREP, &params, NULL, done, &a, &c);
    jpt__free(arrays);
    free(text);
    if (rc < 0 || c == NULL)
        return 1;
    for (int more = 1; more && n < 200000; n++) {
        double t = bench_now(), cpu = cpu_self();
        more = jpt__files_step(c, budget_ns);
        steps[n] = bench_now() - t;
        steps_cpu[n] = cpu_self() - cpu;
    }
    double total = bench_now() - start;
    double longest = bench_percentile(steps, n, 1.0), p99 = bench_percentile(steps, n, 0.99);
    printf("fs.grep sliced: %d steps of a 2 ms budget, longest %.2f ms (%.2f ms CPU), p99 "
           "%.2f ms; %.1f ms in all (ratio %.2f vs one step)\n", n, longest * 1e3,
           bench_percentile(steps_cpu, n, 1.0) * 1e3, p99 * 1e3, total * 1e3, total / whole);
    if (a.len != whole_len)
        printf("fs.grep sliced: a result of %zu bytes, not %zu\n", a.len, whole_len);
    return a.status != JPT_OK || a.len != whole_len;
}

int main(int argc, char **argv)
{
    const char *root = argc > 1 ? argv[1] : "/usr/include";
    const char *found = bench_find_program("rg");
    jpt_files *f;
    int failed = 0;

    if (found == NULL) {
        printf("bench-grep: rg is not installed (Debian package ripgrep); skipped\n");
        return 77;
    }
    char *rg = strdup(found);
    if (rg == NULL || jpt_files_open_dir(root, 0, &f) != JPT_OK) {
        fprintf(stderr, "bench-grep: cannot open %s\n", root);
        free(rg);
        return 1;
    }
    printf("tree: %s\n", root);
    for (size_t k = 0; k < sizeof(patterns) / sizeof(patterns[0]); k++) {
        const pattern *p = &patterns[k];
        char *params = grep_params(p), where[PATH_MAX];
        snprintf(where, sizeof(where), "%s%s%s", root, p->subdir != NULL ? "/" : "",
                 p->subdir != NULL ? p->subdir : "");
        const char *flag = p->caseless ? "-i" : NULL;
        double ours[ROUNDS], native[ROUNDS], pcre2[ROUNDS], t, c;
        double ours_cpu[ROUNDS], native_cpu[ROUNDS], pcre2_cpu[ROUNDS];
        long n_ours = params != NULL ? run_fs_grep(f, params, &t, &c) : -1; /* warm-up */
        long n_rg = rg_pcre2_lines(rg, where, p);
        long n_native = p->pcre2_only ? 0 : bench_rg_lines(rg, where, flag, p->pattern);

        for (int r = 0; r < ROUNDS && n_ours >= 0 && n_rg >= 0 && n_native >= 0; r++) {
            double start = bench_now(), cpu = cpu_children();
            if (!p->pcre2_only && bench_rg_lines(rg, where, flag, p->pattern) != n_native)
                n_native = -1;
            native[r] = bench_now() - start;
            native_cpu[r] = cpu_children() - cpu;
            start = bench_now();
            cpu = cpu_children();
            if (rg_pcre2_lines(rg, where, p) != n_rg)
                n_rg = -1;
            pcre2[r] = bench_now() - start;
            pcre2_cpu[r] = cpu_children() - cpu;
            if (run_fs_grep(f, params, &ours[r], &ours_cpu[r]) != n_ours)
                n_ours = -1;
        }
        free(params);
        if (n_ours < 0 || n_rg < 0 || n_native < 0 || n_ours != n_rg) {
            printf("fs.grep %s '%s': match counts differ: fs.grep %ld, rg -P %ld\n", p->name,
                   p->pattern, n_ours, n_rg);
            failed = 1;
            continue;
        }
        double mine = bench_median(ours, ROUNDS), ref_pcre2 = bench_median(pcre2, ROUNDS);
        double ref = p->pcre2_only ? ref_pcre2 : bench_median(native, ROUNDS);
        double mine_cpu = bench_median(ours_cpu, ROUNDS);
        double ref_cpu = bench_median(p->pcre2_only ? pcre2_cpu : native_cpu, ROUNDS);
        printf("rg -j1%s %s '%s': %.1f ms (%.1f ms CPU), %ld matching lines",
               p->pcre2_only ? " -P" : "", p->name, p->pattern, ref * 1e3, ref_cpu * 1e3, n_rg);
        if (p->subdir != NULL)
            printf(" in %s/", p->subdir);
        if (!p->pcre2_only && n_native != n_rg)
            printf(" (%ld without -P)", n_native);
        printf("\n");
        printf("fs.grep %s: %.1f ms (ratio %.2f vs rg -j1%s, target <= 1.0; CPU %.1f ms, ratio "
               "%.2f; %.2f vs rg -j1 -P)\n", p->name, mine * 1e3, mine / ref,
               p->pcre2_only ? " -P" : "", mine_cpu * 1e3, mine_cpu / ref_cpu, mine / ref_pcre2);
        if (k == 0) {
            char *again = grep_params(p);
            failed |= again == NULL || sliced(f, again, mine, last_result_len);
            free(again);
        }
    }
    jpt_files_free(f);
    free(rg);
    return failed;
}
