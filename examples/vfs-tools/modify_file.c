/* modify_file: a VFS tool that replaces text in a file of the workspace,
 * reading and writing it through the host (fs.read, fs.write), and asks
 * before writing over uncommitted changes.
 *
 * Arguments:
 *   path         the file, relative to the workspace root (required)
 *   pattern      what to replace (required, not empty): a plain string, or
 *                with regex a pcre2 regular expression in which ^ and $
 *                match at each line's start and end; it must not match an
 *                empty string
 *   replacement  what to put in its place (required; may be empty); with
 *                regex, $N and ${N} insert group N, ${name} a named group,
 *                and $$ a '$'
 *   regex        boolean (default false)
 *   replace_all  boolean (default false): without it the pattern must
 *                occur exactly once, so that an edit never lands where the
 *                model did not look
 *
 * Before writing, the tool looks at git's index through the host (see
 * git-index.h for what "uncommitted changes" means here). When the file has
 * changes git could not give back, or the tool cannot tell, its result is
 * a question (RFD 058 question block, id "write_anyway", boolean, default
 * false) after a text block saying what it found; the host asks it (the
 * registry's inquiry handler) and runs the tool again with the answer in
 * init's answers: true writes, false ends with an error saying that nothing
 * was written. The write itself is checked by the host's policy, which may
 * ask its policy handler first (the default sandbox is read-only, so
 * writes are "not covered" and asked).
 *
 * The result: "Replaced N occurrence(s) in PATH (line L, ...)." Errors: the
 * host's (not found, denied), a binary file, a pattern not found or found
 * more than once without replace_all, a pattern that does not compile, a
 * declined question, and bad arguments. */
#define _GNU_SOURCE /* memmem */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "git-index.h"
#include "tool-util.h"

#define QUESTION_ID "write_anyway"
/* Line numbers named in the result; the rest are counted. */
#define LINES_SHOWN 10

/* The edit being built: the new content and where each occurrence was. */
typedef struct edit {
    vt_text out;
    size_t count;                /* occurrences */
    size_t nlines;               /* distinct lines they are on */
    uint64_t lines[LINES_SHOWN]; /* the first of those */
    uint64_t last;               /* the line of the latest, 0 before the first */
    const char *data;    /* the old content */
    const char *scanned; /* line numbers are counted up to here */
    uint64_t line;       /* the line `scanned` is on */
} edit;

/* Notes an occurrence at `at` (for its line number). */
static void occurrence(edit *e, const char *at)
{
    for (const char *p = e->scanned; (p = memchr(p, '\n', (size_t)(at - p))) != NULL; p++)
        e->line++;
    e->scanned = at;
    e->count++;
    if (e->line == e->last)
        return;
    e->last = e->line;
    if (e->nlines < LINES_SHOWN)
        e->lines[e->nlines] = e->line;
    e->nlines++;
}

static void replace_literal(edit *e, size_t len, const char *pattern, const char *replacement)
{
    const char *p = e->data, *end = e->data + len, *hit;
    size_t plen = strlen(pattern);

    while ((hit = memmem(p, (size_t)(end - p), pattern, plen)) != NULL) {
        occurrence(e, hit);
        vt_append(&e->out, p, (size_t)(hit - p));
        vt_append(&e->out, replacement, strlen(replacement));
        p = hit + plen;
    }
    vt_append(&e->out, p, (size_t)(end - p));
}

/* ---- Regular expressions ------------------------------------------------------------- */

/* A replacement template, checked: each "$" introduces a group number,
 * {number}, {name} or "$". Names a problem in `why`, or returns true. */
static bool check_template(const pcre2_code *code, const char *tmpl, char *why, size_t n)
{
    uint32_t groups = 0;

    pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &groups);
    for (const char *p = tmpl; (p = strchr(p, '$')) != NULL;) {
        p++;
        if (*p == '$') {
            p++;
            continue;
        }
        char ref[64];
        size_t k = 0;
        if (*p == '{') {
            const char *close = strchr(p, '}');
            if (close == NULL || close == p + 1 || (size_t)(close - p - 1) >= sizeof(ref)) {
                snprintf(why, n, "'${' must be followed by a group number or name and '}'");
                return false;
            }
            k = (size_t)(close - p - 1);
            memcpy(ref, p + 1, k);
            p = close + 1;
        } else {
            while (p[k] >= '0' && p[k] <= '9' && k < 9) {
                ref[k] = p[k];
                k++;
            }
            if (k == 0) {
                snprintf(why, n, "'$' must be followed by a group number, {number}, {name} or "
                                 "another '$'");
                return false;
            }
            p += k;
        }
        ref[k] = '\0';
        if (ref[0] >= '0' && ref[0] <= '9') {
            char *stop;
            unsigned long g = strtoul(ref, &stop, 10);
            if (*stop != '\0' || g > groups) {
                snprintf(why, n, "'$%s': the pattern has %" PRIu32 " group%s", ref, groups,
                         groups == 1 ? "" : "s");
                return false;
            }
        } else if (pcre2_substring_number_from_name(code, (PCRE2_SPTR)ref) < 0) {
            snprintf(why, n, "'${%s}': the pattern has no group of that name", ref);
            return false;
        }
    }
    return true;
}

/* Appends the template with the groups of the match in `md`. */
static void expand(edit *e, const pcre2_code *code, pcre2_match_data *md, const char *tmpl)
{
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    uint32_t pairs = pcre2_get_ovector_count(md);

    for (const char *p = tmpl; *p != '\0';) {
        const char *dollar = strchr(p, '$');
        if (dollar == NULL) {
            vt_append(&e->out, p, strlen(p));
            break;
        }
        vt_append(&e->out, p, (size_t)(dollar - p));
        p = dollar + 1;
        if (*p == '$') {
            vt_append(&e->out, "$", 1);
            p++;
            continue;
        }
        char ref[64];
        size_t k = 0;
        if (*p == '{') {
            const char *close = strchr(p, '}');
            k = (size_t)(close - p - 1);
            memcpy(ref, p + 1, k);
            p = close + 1;
        } else {
            while (p[k] >= '0' && p[k] <= '9' && k < 9) {
                ref[k] = p[k];
                k++;
            }
            p += k;
        }
        ref[k] = '\0';
        int g = ref[0] >= '0' && ref[0] <= '9'
                    ? (int)strtoul(ref, NULL, 10)
                    : pcre2_substring_number_from_name(code, (PCRE2_SPTR)ref);
        /* A group that took no part in the match inserts nothing. */
        if (g >= 0 && (uint32_t)g < pairs && ov[2 * g] != PCRE2_UNSET)
            vt_append(&e->out, e->data + ov[2 * g], ov[2 * g + 1] - ov[2 * g]);
    }
}

static void replace_regex(jpt_vfs_tool *t, edit *e, size_t len, const char *pattern,
                          const char *replacement)
{
    int err;
    PCRE2_SIZE at;
    PCRE2_UCHAR text[256];
    char why[256];
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                                     PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_MULTILINE,
                                     &err, &at, NULL);

    if (code == NULL) {
        pcre2_get_error_message(err, text, sizeof(text));
        vt_fail(t, "argument 'pattern' is not a valid regular expression: %s (at offset %zu)",
                (const char *)text, (size_t)at);
    }
    if (!check_template(code, replacement, why, sizeof(why)))
        vt_fail(t, "argument 'replacement': %s", why);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
    if (md == NULL)
        vt_out_of_memory();
    PCRE2_SIZE start = 0;
    int rc;
    while ((rc = pcre2_match(code, (PCRE2_SPTR)e->data, len, start, 0, md, NULL)) >= 0) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        occurrence(e, e->data + ov[0]);
        if (ov[1] == ov[0])
            vt_fail(t, "argument 'pattern' matches an empty string (on line %" PRIu64 "): "
                       "it must match at least one character",
                    e->line);
        vt_append(&e->out, e->data + start, ov[0] - start);
        expand(e, code, md, replacement);
        start = ov[1];
    }
    if (rc != PCRE2_ERROR_NOMATCH) {
        pcre2_get_error_message(rc, text, sizeof(text));
        vt_fail(t, "matching the pattern failed: %s", (const char *)text);
    }
    vt_append(&e->out, e->data + start, len - start);
    pcre2_match_data_free(md);
    pcre2_code_free(code);
}

/* ---- Asking --------------------------------------------------------------------------- */

/* "line 4", "lines 2, 9 and 30", "lines 1, 2, … (14 lines)". */
static void where(const edit *e, vt_text *b)
{
    size_t shown = e->nlines < LINES_SHOWN ? e->nlines : LINES_SHOWN;

    vt_printf(b, "line%s ", e->nlines == 1 ? "" : "s");
    for (size_t i = 0; i < shown; i++)
        vt_printf(b, "%s%" PRIu64, i == 0 ? "" : i + 1 == e->nlines ? " and " : ", ",
                  e->lines[i]);
    if (e->nlines > shown)
        vt_printf(b, ", … (%zu lines)", e->nlines);
}

/* The answer to the question, if init brought one: 1 yes, 0 no, -1 none. */
static int answered(jpt_vfs_tool *t)
{
    json_t *answers = json_loads(jpt_vfs_tool_answers(t), 0, NULL);
    const json_t *a = json_object_get(answers, QUESTION_ID);
    int yes = a == NULL ? -1 : json_is_true(a) ? 1 : 0;

    if (a != NULL && !json_is_boolean(a))
        vt_fail(t, "the answer to '%s' must be true or false", QUESTION_ID);
    json_decref(answers);
    return yes;
}

_Noreturn static void ask(jpt_vfs_tool *t, const char *finding)
{
    json_t *blocks = json_pack("[{s:s, s:s}, {s:s, s:{s:s, s:s, s:{s:s}, s:b}}]", "type", "text",
                               "text", finding, "type", "question", "question", "id",
                               QUESTION_ID, "text", "Write the replacement anyway?", "schema",
                               "type", "boolean", "default", 0);

    if (blocks == NULL)
        vt_out_of_memory();
    vt_done_blocks(t, blocks);
}

/* Ends with the question unless the file may be written. */
static void check_uncommitted(jpt_vfs_tool *t, const char *path, const char *data, size_t len,
                              const edit *e)
{
    char why[512];
    vt_text finding = {0};
    int answer = answered(t);

    if (answer == 1)
        return;
    switch (git_file_status(t, path, data, len, why, sizeof(why))) {
    case GIT_NO_REPOSITORY:
    case GIT_UNTRACKED:
    case GIT_CLEAN:
        return;
    case GIT_CHANGED:
        vt_printf(&finding, "'%s' has uncommitted changes: its content differs from the "
                            "version in git's index, so git holds no copy of it.",
                  path);
        break;
    case GIT_UNMERGED:
        vt_printf(&finding, "'%s' has unresolved merge conflicts in git's index.", path);
        break;
    case GIT_UNKNOWN:
        vt_printf(&finding, "modify_file cannot tell whether '%s' has uncommitted changes: %s.",
                  path, why);
        break;
    }
    if (answer == 0)
        vt_fail(t, "'%s' was not written: the answer was not to write over what git does not "
                   "hold (%s)",
                path, vt_str(&finding));
    vt_printf(&finding, " The replacement (%zu occurrence%s, ", e->count,
              e->count == 1 ? "" : "s");
    where(e, &finding);
    vt_printf(&finding, ") would be written over it.");
    ask(t, vt_str(&finding));
}

int main(void)
{
    static const char *const known[] = {"path", "pattern", "replacement", "regex",
                                        "replace_all", NULL};
    json_t *args;
    jpt_vfs_tool *t = vt_connect("modify_file", known, &args);
    char *path = vt_normal_path(t, "path", vt_arg_string(t, args, "path", true, true));
    const char *pattern = vt_arg_string(t, args, "pattern", true, true);
    const char *replacement = vt_arg_string(t, args, "replacement", true, false);
    bool regex = vt_arg_bool(t, args, "regex", false);
    bool replace_all = vt_arg_bool(t, args, "replace_all", false);
    char *data = NULL;
    size_t len = 0;

    if (strcmp(path, ".") == 0)
        vt_fail(t, "argument 'path' names the workspace root, not a file");
    if (jpt_vfs_tool_read(t, path, &data, &len) != JPT_OK)
        vt_fail_host(t);
    if (memchr(data, '\0', len) != NULL)
        vt_fail(t, "'%s' is not a text file: it holds NUL bytes", path);

    edit e = {.data = data, .scanned = data, .line = 1};
    if (regex)
        replace_regex(t, &e, len, pattern, replacement);
    else
        replace_literal(&e, len, pattern, replacement);
    if (e.count == 0)
        vt_fail(t, "the %s '%s' does not occur in '%s'", regex ? "pattern" : "text", pattern,
                path);
    if (e.count > 1 && !replace_all) {
        vt_text at = {0};
        where(&e, &at);
        vt_fail(t, "the %s '%s' occurs %zu times in '%s' (%s): make it longer so that it "
                   "occurs once, or set replace_all to replace every one",
                regex ? "pattern" : "text", pattern, e.count, path, vt_str(&at));
    }
    if (e.out.len == len && memcmp(e.out.p, data, len) == 0)
        vt_done_text(t, "Nothing to write: the replacement is the same as what it replaces.");

    check_uncommitted(t, path, data, len, &e);
    if (jpt_vfs_tool_write(t, path, e.out.p, e.out.len) != JPT_OK)
        vt_fail_host(t);
    vt_text done = {0};
    vt_printf(&done, "Replaced %zu occurrence%s in %s (", e.count, e.count == 1 ? "" : "s",
              path);
    where(&e, &done);
    vt_append(&done, ").", 2);
    vt_done_text(t, vt_str(&done));
}
