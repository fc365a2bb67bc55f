/* The common room: status codes and their texts, version, logging, the
 * allocator's one-way door, and the internal buffers and UTF-8 repair every
 * other room builds on. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "test-util.h"

#include "common/json.h"

/* ARCHITECTURE.md §4: explicit values, never renumbered. */
static void status_codes_have_their_documented_values(void **state)
{
    (void)state;
    assert_int_equal(JPT_OK, 0);
    assert_int_equal(JPT_ERR_INVALID, -1);
    assert_int_equal(JPT_ERR_NOMEM, -2);
    assert_int_equal(JPT_ERR_NOT_FOUND, -3);
    assert_int_equal(JPT_ERR_EXISTS, -4);
    assert_int_equal(JPT_ERR_STATE, -5);
    assert_int_equal(JPT_ERR_UNSUPPORTED, -6);
    assert_int_equal(JPT_ERR_DENIED, -7);
    assert_int_equal(JPT_ERR_TIMEOUT, -8);
    assert_int_equal(JPT_ERR_CANCELLED, -9);
    assert_int_equal(JPT_ERR_IO, -10);
    assert_int_equal(JPT_ERR_PROTOCOL, -11);
    assert_int_equal(JPT_ERR_AGAIN, -12);
    assert_int_equal(JPT_ERR_SANDBOX, -13);
    assert_int_equal(JPT_ERR_LIMIT, -14);
}

static void every_status_has_a_distinct_text_and_name(void **state)
{
    (void)state;
    for (int a = 0; a >= JPT_ERR_LIMIT; a--) {
        assert_non_null(jpt_status_name(a));
        assert_string_not_equal(jpt_strerror(a), "unknown status");
        for (int b = a - 1; b >= JPT_ERR_LIMIT; b--) {
            assert_string_not_equal(jpt_strerror(a), jpt_strerror(b));
            assert_string_not_equal(jpt_status_name(a), jpt_status_name(b));
        }
    }
    assert_string_equal(jpt_strerror(JPT_ERR_NOMEM), "out of memory");
    assert_string_equal(jpt_status_name(JPT_ERR_INVALID), "JPT_ERR_INVALID");
    assert_string_equal(jpt_status_name(JPT_OK), "JPT_OK");
}

static void unknown_status_is_named_as_unknown(void **state)
{
    (void)state;
    assert_string_equal(jpt_strerror(-999), "unknown status");
    assert_string_equal(jpt_strerror(1), "unknown status");
    assert_null(jpt_status_name(-999));
}

static void version_is_the_release(void **state)
{
    (void)state;
    assert_string_equal(jpt_version(), "0.1.0");
}

static void free_accepts_null(void **state)
{
    (void)state;
    jpt_free(NULL);
}

/* The allocator is fixed once memory exists: memory from one allocator must
 * never reach another's free. */
static void allocator_cannot_change_after_first_allocation(void **state)
{
    (void)state;
    jpt_state *s = tu_parse("text");
    jpt_state_unref(s);
    assert_int_equal(jpt_set_allocator(NULL), JPT_ERR_STATE);
}

typedef struct log_record {
    int calls;
    int level;
    char msg[512];
} log_record;

static void record_log(int level, const char *msg, void *ud)
{
    log_record *r = ud;
    r->calls++;
    r->level = level;
    snprintf(r->msg, sizeof(r->msg), "%s", msg);
}

static const char malformed[] = "{\"content\":[{\"type\":\"bogus\"}]}";

static void log_receives_parse_warnings(void **state)
{
    (void)state;
    log_record r = {0};

    jpt_set_log(record_log, &r, JPT_LOG_WARNING);
    jpt_state_unref(tu_parse(malformed));
    jpt_set_log(NULL, NULL, 0);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.level, JPT_LOG_WARNING);
    assert_string_equal(r.msg,
                        "tool output: content[0]: unknown block type 'bogus'; block skipped");
}

static void log_filters_below_min_level(void **state)
{
    (void)state;
    log_record r = {0};

    jpt_set_log(record_log, &r, JPT_LOG_ERROR);
    jpt_state_unref(tu_parse(malformed));
    jpt_set_log(NULL, NULL, 0);
    assert_int_equal(r.calls, 0);
}

static void debug_level_receives_builder_errors(void **state)
{
    (void)state;
    log_record r = {0};
    jpt_state *s = NULL;

    assert_int_equal(jpt_state_new(JPT_STATE_STOPPED, &s), JPT_OK);
    jpt_set_log(record_log, &r, JPT_LOG_DEBUG);
    assert_int_equal(jpt_state_add_text(s, NULL), JPT_ERR_INVALID);
    jpt_set_log(NULL, NULL, 0);
    assert_int_equal(r.level, JPT_LOG_DEBUG);
    assert_string_equal(r.msg, "text block: text is NULL (invalid argument or malformed input)");
    jpt_state_unref(s);
}

/* Reads what was written to a temporary file standing in for fd `fd`. */
static size_t bytes_written_during_parse(int fd)
{
    char path[] = "/tmp/jpt-test-common-XXXXXX";
    int tmp = mkstemp(path);
    assert_true(tmp >= 0);
    unlink(path);
    fflush(NULL);
    int saved = dup(fd);
    assert_true(saved >= 0);
    dup2(tmp, fd);

    jpt_state_unref(tu_parse(malformed));
    fflush(NULL);

    dup2(saved, fd);
    close(saved);
    off_t size = lseek(tmp, 0, SEEK_END);
    close(tmp);
    return (size_t)size;
}

/* Nothing is printed unless the host installs a log function. */
static void library_prints_nothing_without_a_log_function(void **state)
{
    (void)state;
    jpt_set_log(NULL, NULL, JPT_LOG_DEBUG);
    assert_int_equal(bytes_written_during_parse(STDOUT_FILENO), 0);
    assert_int_equal(bytes_written_during_parse(STDERR_FILENO), 0);
}

static void buffer_grows_through_printf(void **state)
{
    (void)state;
    jpt__buf b = JPT__BUF_INIT;
    char big[1000];

    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(jpt__buf_printf(&b, "%d:%s", 42, big), JPT_OK);
    assert_int_equal(b.len, 3 + 999);
    assert_memory_equal(b.data, "42:xxx", 6);
    assert_int_equal(b.data[b.len], '\0');
    char *s = jpt__buf_take(&b);
    assert_null(b.data);
    assert_int_equal(strlen(s), 1002);
    jpt_free(s);
}

static void empty_buffer_takes_as_empty_string(void **state)
{
    (void)state;
    jpt__buf b = JPT__BUF_INIT;
    char *s = jpt__buf_take(&b);

    assert_string_equal(s, "");
    jpt_free(s);
}

static void utf8_validation_follows_unicode(void **state)
{
    (void)state;
    assert_true(jpt__utf8_valid("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80", 15));
    assert_false(jpt__utf8_valid("\xC0\xAF", 2));         /* overlong */
    assert_false(jpt__utf8_valid("\xED\xA0\x80", 3));     /* surrogate */
    assert_false(jpt__utf8_valid("\xF4\x90\x80\x80", 4)); /* > U+10FFFF */
    assert_int_equal(jpt__utf8_valid_prefix("ab\xFF" "cd", 5), 2);
    assert_int_equal(jpt__utf8_length("h\xC3\xA9\xE2\x82\xAC", 6), 3);
}

static void utf8_validation_stops_at_the_first_bad_byte_at_any_offset(void **state)
{
    (void)state;
    char text[40];

    /* The ASCII runs are skipped eight bytes at a time: a bad byte in any
     * position of a word, and in the tail after the last whole word. */
    for (size_t at = 0; at < 33; at++) {
        memset(text, 'a', sizeof(text));
        text[at] = '\xFF';
        assert_int_equal(jpt__utf8_valid_prefix(text, at + 1), at);
        assert_int_equal(jpt__utf8_valid_prefix(text, sizeof(text)), at);
        text[at] = '\xC3';
        text[at + 1] = '\xA9';
        assert_true(jpt__utf8_valid(text, sizeof(text)));
    }
}

/* The literal jpt__buf_json_string() must give, one byte at a time: the
 * short escapes JSON has (\b and \f too), \u00XX for the other controls. */
static void reference_literal(jpt__buf *b, const char *p, size_t n)
{
    jpt__buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\n')
            jpt__buf_puts(b, "\\n");
        else if (c == '\t')
            jpt__buf_puts(b, "\\t");
        else if (c == '\r')
            jpt__buf_puts(b, "\\r");
        else if (c == '\b')
            jpt__buf_puts(b, "\\b");
        else if (c == '\f')
            jpt__buf_puts(b, "\\f");
        else if (c == '"' || c == '\\') {
            jpt__buf_putc(b, '\\');
            jpt__buf_putc(b, (char)c);
        } else if (c < 0x20)
            jpt__buf_printf(b, "\\u%04x", c);
        else
            jpt__buf_putc(b, (char)c);
    }
    jpt__buf_putc(b, '"');
}

static void json_string_escapes_every_byte_at_any_offset(void **state)
{
    (void)state;
    char text[40];

    /* Each byte a literal escapes, and some it does not, in every position
     * of an eight-byte word and in the tail; appended after what the
     * buffer holds. */
    for (int c = 0; c < 0x80; c++) {
        if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7F && c != '/')
            continue;
        for (size_t at = 0; at < 34; at++) {
            jpt__buf got = JPT__BUF_INIT, want = JPT__BUF_INIT;
            memset(text, 'a', sizeof(text));
            text[at] = (char)c;
            text[sizeof(text) - 1] = '"';
            assert_int_equal(jpt__buf_puts(&got, "x:"), JPT_OK);
            assert_int_equal(jpt__buf_json_string(&got, text, sizeof(text)), JPT_OK);
            jpt__buf_puts(&want, "x:");
            reference_literal(&want, text, sizeof(text));
            assert_int_equal(got.len, want.len);
            assert_string_equal(got.data, want.data);
            jpt__buf_free(&got);
            jpt__buf_free(&want);
        }
    }
}

static void json_string_repairs_bad_utf8_and_keeps_nul(void **state)
{
    (void)state;
    jpt__buf b = JPT__BUF_INIT;

    assert_int_equal(jpt__buf_json_string(&b, "", 0), JPT_OK);
    assert_string_equal(b.data, "\"\"");
    b.len = 0;
    assert_int_equal(jpt__buf_json_string(&b, "caf\xC3\xA9 \xFF\"\0z", 10), JPT_OK);
    assert_int_equal(b.len, 20);
    assert_string_equal(b.data, "\"caf\xC3\xA9 \xEF\xBF\xBD\\\"\\u0000z\"");
    jpt__buf_free(&b);
}

static void utf8_repair_replaces_each_maximal_subpart(void **state)
{
    (void)state;
    jpt__buf b = JPT__BUF_INIT;

    /* Unicode §3.9 table 3-8: F0 80 80 is three ill-formed units (F0 cannot
     * be followed by 80); E2 82 cut short is one maximal subpart. */
    assert_int_equal(jpt__buf_append_utf8(&b, "a\xF0\x80\x80z\xE2\x82", 7, false), JPT_OK);
    assert_string_equal(b.data, "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz\xEF\xBF\xBD");
    jpt__buf_free(&b);
}

static void utf8_repair_replaces_nul_unless_kept(void **state)
{
    (void)state;
    jpt__buf b = JPT__BUF_INIT;

    assert_int_equal(jpt__buf_append_utf8(&b, "a\0b", 3, false), JPT_OK);
    assert_string_equal(b.data, "a\xEF\xBF\xBD" "b");
    jpt__buf_free(&b);
    assert_int_equal(jpt__buf_append_utf8(&b, "a\0b", 3, true), JPT_OK);
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.data, "a\0b", 3);
    jpt__buf_free(&b);
}

static void error_text_is_cut_to_its_buffer(void **state)
{
    (void)state;
    jpt__errbuf e;
    char long_text[2 * JPT__ERRMSG_MAX];

    memset(long_text, 'e', sizeof(long_text) - 1);
    long_text[sizeof(long_text) - 1] = '\0';
    assert_int_equal(jpt__err(&e, JPT_ERR_IO, "%s", long_text), JPT_ERR_IO);
    assert_int_equal(strlen(e.text), JPT__ERRMSG_MAX - 1);
    jpt__err_clear(&e);
    assert_string_equal(e.text, "");
}

/* The hand-written JSON strings (the await's response) must parse back to
 * the same text: quotes, backslashes and control characters escaped,
 * invalid UTF-8 replaced. */
static void json_string_escapes_what_json_requires(void **state)
{
    (void)state;
    jpt__buf b = JPT__BUF_INIT;
    static const char raw[] = "a\"b\\c\nd\te\rf\x01g\x1f/\xc3\xa9\xff";

    assert_int_equal(jpt__buf_json_string(&b, raw, sizeof(raw) - 1), JPT_OK);
    assert_string_equal(b.data, "\"a\\\"b\\\\c\\nd\\te\\rf\\u0001g\\u001f/\xc3\xa9\xef\xbf\xbd\"");
    json_t *v = json_loads(b.data, JSON_DECODE_ANY, NULL);
    assert_non_null(v);
    assert_string_equal(json_string_value(v), "a\"b\\c\nd\te\rf\x01g\x1f/\xc3\xa9\xef\xbf\xbd");
    json_decref(v);
    jpt__buf_free(&b);
    assert_int_equal(jpt__buf_json_string(&b, "n\0ul", 4), JPT_OK);
    assert_string_equal(b.data, "\"n\\u0000ul\"");
    jpt__buf_free(&b);
}

/* Arrays grow by doubling from their initial capacity; a size that would
 * overflow is refused and leaves the array as it was. */
static void array_reserve_doubles_and_refuses_overflow(void **state)
{
    size_t cap = 0;
    int *v = NULL;

    (void)state;
    v = jpt__array_reserve(v, &cap, 1, sizeof(*v), 4);
    assert_non_null(v);
    assert_int_equal(cap, 4);
    assert_ptr_equal(jpt__array_reserve(v, &cap, 4, sizeof(*v), 4), v);
    assert_int_equal(cap, 4);
    v = jpt__array_reserve(v, &cap, 9, sizeof(*v), 4);
    assert_non_null(v);
    assert_int_equal(cap, 16);
    assert_null(jpt__array_reserve(v, &cap, SIZE_MAX / 2, sizeof(*v), 4));
    assert_int_equal(cap, 16);
    jpt__free(v);
}

/* The width the model reads: NUL and each maximal invalid subpart are the
 * 3 bytes of U+FFFD; prefixes and suffixes never split a character. */
static void render_width_counts_repairs_and_cuts_on_characters(void **state)
{
    (void)state;
    /* "a", NUL, "é" (2 bytes), an invalid "\xE0\x80" (one subpart), "z" */
    const char text[] = "a\0\xC3\xA9\xE0\x80z";
    size_t n = sizeof(text) - 1;

    assert_int_equal(jpt__render_width(text, n), 1 + 3 + 2 + 3 + 3 + 1);
    jpt__buf repaired = JPT__BUF_INIT;
    assert_int_equal(jpt__buf_append_utf8(&repaired, text, n, false), JPT_OK);
    assert_int_equal(repaired.len, jpt__render_width(text, n));
    jpt__buf_free(&repaired);
    assert_int_equal(jpt__render_prefix(text, n, 0), 0);
    assert_int_equal(jpt__render_prefix(text, n, 3), 1);   /* the NUL needs 3 more */
    assert_int_equal(jpt__render_prefix(text, n, 4), 2);
    assert_int_equal(jpt__render_prefix(text, n, 5), 2);   /* "é" needs 2 */
    assert_int_equal(jpt__render_prefix(text, n, 6), 4);
    assert_int_equal(jpt__render_prefix(text, n, 100), n);
    assert_int_equal(jpt__render_suffix(text, n, 1), n - 1);
    assert_int_equal(jpt__render_suffix(text, n, 3), n - 1); /* the invalid pair needs 4 */
    assert_int_equal(jpt__render_suffix(text, n, 100), 0);
    /* 20 000 NULs render as 60 000 bytes: 10 000 of them fit 30 000. */
    char *nuls = calloc(20000, 1);
    assert_non_null(nuls);
    assert_int_equal(jpt__render_width(nuls, 20000), 60000);
    assert_int_equal(jpt__render_prefix(nuls, 20000, 15000), 5000);
    assert_int_equal(jpt__render_suffix(nuls, 20000, 15000), 15000);
    free(nuls);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(status_codes_have_their_documented_values),
        cmocka_unit_test(every_status_has_a_distinct_text_and_name),
        cmocka_unit_test(unknown_status_is_named_as_unknown),
        cmocka_unit_test(version_is_the_release),
        cmocka_unit_test(free_accepts_null),
        cmocka_unit_test(array_reserve_doubles_and_refuses_overflow),
        cmocka_unit_test(allocator_cannot_change_after_first_allocation),
        cmocka_unit_test(log_receives_parse_warnings),
        cmocka_unit_test(log_filters_below_min_level),
        cmocka_unit_test(debug_level_receives_builder_errors),
        cmocka_unit_test(library_prints_nothing_without_a_log_function),
        cmocka_unit_test(buffer_grows_through_printf),
        cmocka_unit_test(empty_buffer_takes_as_empty_string),
        cmocka_unit_test(utf8_validation_follows_unicode),
        cmocka_unit_test(utf8_validation_stops_at_the_first_bad_byte_at_any_offset),
        cmocka_unit_test(json_string_escapes_every_byte_at_any_offset),
        cmocka_unit_test(json_string_repairs_bad_utf8_and_keeps_nul),
        cmocka_unit_test(utf8_repair_replaces_each_maximal_subpart),
        cmocka_unit_test(utf8_repair_replaces_nul_unless_kept),
        cmocka_unit_test(render_width_counts_repairs_and_cuts_on_characters),
        cmocka_unit_test(error_text_is_cut_to_its_buffer),
        cmocka_unit_test(json_string_escapes_what_json_requires),
    };
    return TU_RUN(tests);
}
