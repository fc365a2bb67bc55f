/* The host side of the VFS protocol engine (lib/vfs), driven purely with
 * byte buffers: framing, every method's params, every error code, ids of
 * every type, malformed input of every kind (TESTING.md "Protocol abuse"),
 * pipelining, the violation limit, backpressure and bounded memory, the
 * notifications both ways, and allocation failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "test-util.h"
#include "vfs/vfs.h"

/* ---- A host made of byte buffers ---------------------------------------------- */

typedef struct host {
    jpt__vfs_engine *e;
    jpt__vfs_call **calls; /* received, not yet answered by the test */
    size_t ncalls, cap_calls;
    jpt_state *states[16];
    size_t nstates;
    bool answer_now;     /* the handler answers {"ok":true} at once */
    const char *big;     /* …or with this result */
    char *out;           /* everything the engine wrote, as one string */
    size_t out_len;
} host;

static void on_call(void *ud, jpt__vfs_call *call)
{
    host *h = ud;

    if (h->big != NULL) {
        assert_int_equal(jpt__vfs_call_answer_json(call, h->big, strlen(h->big)), JPT_OK);
        return;
    }
    if (h->answer_now) {
        assert_int_equal(jpt__vfs_call_answer_json(call, "{\"ok\":true}", 11), JPT_OK);
        return;
    }
    if (h->ncalls == h->cap_calls) {
        h->cap_calls = h->cap_calls ? h->cap_calls * 2 : 64;
        h->calls = realloc(h->calls, h->cap_calls * sizeof(*h->calls));
        assert_non_null(h->calls);
    }
    h->calls[h->ncalls++] = call;
}

static void on_state(void *ud, jpt_state *st, bool final)
{
    (void)final;
    host *h = ud;

    assert_true(h->nstates < 16);
    h->states[h->nstates++] = st;
}

static jpt__vfs_handlers handlers(host *h)
{
    jpt__vfs_handlers hs = {.state = on_state, .ud = h};
    for (int m = JPT__VFS_FS_READ; m <= JPT__VFS_FS_GREP; m++)
        hs.method[m] = on_call;
    return hs;
}

/* Moves everything the engine queued into h->out. */
static void drain(host *h)
{
    const char *p;
    size_t n = jpt__vfs_engine_output(h->e, &p);

    h->out = realloc(h->out, h->out_len + n + 1);
    assert_non_null(h->out);
    memcpy(h->out + h->out_len, p, n);
    h->out_len += n;
    h->out[h->out_len] = '\0';
    jpt__vfs_engine_output_done(h->e, n);
}

static void host_open(host *h, const jpt__vfs_limits *limits)
{
    jpt__vfs_handlers hs = handlers(h);
    jpt__vfs_init init = {"reader", "{\"path\":\"a\"}", NULL, NULL};
    jpt__errbuf err;

    memset(h, 0, sizeof(*h));
    hs.ud = h;
    assert_int_equal(jpt__vfs_engine_new(limits, &hs, &init, &err, &h->e), JPT_OK);
    drain(h);
    h->out_len = 0; /* the init message; tested on its own */
}

static void host_close(host *h)
{
    jpt__vfs_engine_free(h->e);
    for (size_t i = 0; i < h->nstates; i++)
        jpt_state_unref(h->states[i]);
    free(h->calls);
    free(h->out);
}

/* Feeds `n` bytes; all must be taken. */
static void feed_bytes(host *h, const char *p, size_t n)
{
    size_t used = 0;
    int rc = jpt__vfs_engine_feed(h->e, p, n, &used);
    if (rc != JPT_OK)
        fail_msg("feed: %s: %s", jpt_status_name(rc), jpt__vfs_engine_errmsg(h->e));
    assert_int_equal(used, n);
    drain(h);
}

static void feed(host *h, const char *text)
{
    feed_bytes(h, text, strlen(text));
}

/* The output so far, then forgotten. */
static char *take_out(host *h)
{
    drain(h);
    char *out = h->out != NULL ? h->out : strdup("");
    h->out = NULL;
    h->out_len = 0;
    return out;
}

/* Asserts that the engine wrote exactly the lines `want` (NULL-terminated),
 * each compared as JSON, and forgets them. */
static void expect_lines(host *h, const char *const *want)
{
    char *out = take_out(h), *line = out;
    size_t i = 0;

    for (char *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1, i++) {
        *nl = '\0';
        if (want[i] == NULL)
            fail_msg("unexpected line %zu: %s", i, line);
        tu_assert_json_equal(line, want[i]);
    }
    assert_string_equal(line, "");
    if (want[i] != NULL)
        fail_msg("missing line %zu: %s", i, want[i]);
    free(out);
}

#define LINES(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NO_LINES ((const char *const[]){NULL})

static void expect_error(host *h, const char *id, int code, const char *message)
{
    char want[1024];
    json_t *m = json_string(message);
    char *quoted = json_dumps(m, JSON_ENCODE_ANY);

    snprintf(want, sizeof(want),
             "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":%s}}", id, code,
             quoted);
    free(quoted);
    json_decref(m);
    expect_lines(h, LINES(want));
}

static jpt__vfs_call *only_call(host *h)
{
    assert_int_equal(h->ncalls, 1);
    h->ncalls = 0;
    return h->calls[0];
}

/* A request line for `method` with `params` (JSON text, or NULL). */
static void request(host *h, const char *id, const char *method, const char *params)
{
    char line[4096];

    if (params != NULL)
        snprintf(line, sizeof(line),
                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"%s\",\"params\":%s}\n", id, method,
                 params);
    else
        snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"%s\"}\n", id,
                 method);
    feed(h, line);
}

/* ---- init ------------------------------------------------------------------------- */

static void init_is_the_first_message(void **state)
{
    jpt__vfs_engine *e = NULL;
    host h = {0};
    jpt__vfs_handlers hs = handlers(&h);
    jpt__vfs_init init = {"fs_modify_file", "{\"path\": \"src/main.rs\",\n \"patterns\": []}",
                          "{}", "{\"confirmation_mode\":true}"};
    jpt__errbuf err;
    const char *p;

    (void)state;
    assert_int_equal(jpt__vfs_engine_new(NULL, &hs, &init, &err, &e), JPT_OK);
    size_t n = jpt__vfs_engine_output(e, &p);
    char *text = strndup(p, n);
    /* One line: the arguments' newline became a space. */
    assert_ptr_equal(strchr(text, '\n'), text + n - 1);
    text[n - 1] = '\0';
    tu_assert_json_equal(text, "{\"jsonrpc\":\"2.0\",\"method\":\"init\",\"params\":{\"tool\":"
                               "{\"name\":\"fs_modify_file\",\"arguments\":{\"path\":"
                               "\"src/main.rs\",\"patterns\":[]},\"answers\":{},\"options\":"
                               "{\"confirmation_mode\":true}},\"protocol_version\":\"0.1.0\"}}");
    free(text);
    jpt__vfs_engine_free(e);
}

static void init_without_answers_or_options_sends_empty_objects(void **state)
{
    jpt__vfs_engine *e = NULL;
    host h = {0};
    jpt__vfs_handlers hs = handlers(&h);
    jpt__vfs_init init = {"t", NULL, NULL, NULL};
    jpt__errbuf err;
    const char *p;

    (void)state;
    assert_int_equal(jpt__vfs_engine_new(NULL, &hs, &init, &err, &e), JPT_OK);
    size_t n = jpt__vfs_engine_output(e, &p);
    char *text = strndup(p, n - 1);
    tu_assert_json_equal(text, "{\"jsonrpc\":\"2.0\",\"method\":\"init\",\"params\":{\"tool\":"
                               "{\"name\":\"t\",\"arguments\":{},\"answers\":{},\"options\":{}},"
                               "\"protocol_version\":\"0.1.0\"}}");
    free(text);
    jpt__vfs_engine_free(e);
}

static void init_refuses_arguments_that_are_not_an_object(void **state)
{
    jpt__vfs_engine *e = NULL;
    host h = {0};
    jpt__vfs_handlers hs = handlers(&h);
    jpt__vfs_init bad_json = {"t", "{\"a\":", NULL, NULL};
    jpt__vfs_init not_object = {"t", NULL, "[1]", NULL};
    jpt__vfs_init no_name = {NULL, NULL, NULL, NULL};
    jpt__errbuf err;

    (void)state;
    assert_int_equal(jpt__vfs_engine_new(NULL, &hs, &bad_json, &err, &e), JPT_ERR_INVALID);
    assert_string_equal(err.text, "the tool's arguments are not JSON: expected a value at byte 5");
    assert_int_equal(jpt__vfs_engine_new(NULL, &hs, &not_object, &err, &e), JPT_ERR_INVALID);
    assert_string_equal(err.text, "the tool's answers must be a JSON object");
    assert_int_equal(jpt__vfs_engine_new(NULL, &hs, &no_name, &err, &e), JPT_ERR_INVALID);
    assert_null(e);
}

/* ---- Requests and their params ------------------------------------------------------- */

static void a_request_reaches_its_method_with_typed_params(void **state)
{
    host h;

    (void)state;
    host_open(&h, NULL);
    request(&h, "1", "fs.read", "{\"path\":\"src/ma\\u0069n.rs\",\"extra\":[1,{\"x\":2}]}");
    jpt__vfs_call *c = only_call(&h);
    assert_int_equal(jpt__vfs_call_method(c), JPT__VFS_FS_READ);
    assert_string_equal(jpt__vfs_call_params(c)->path, "src/main.rs");
    assert_string_equal(jpt__vfs_call_id(c), "1");
    assert_ptr_equal(jpt__vfs_call_engine(c), h.e);
    jpt__vfs_call_set_data(c, &h);
    assert_ptr_equal(jpt__vfs_call_get_data(c), &h);
    assert_int_equal(jpt__vfs_engine_calls(h.e), 1);
    assert_int_equal(jpt__vfs_call_answer_json(c, "{\"content\":\"x\",\"size\":1}", 24), JPT_OK);
    expect_lines(&h, LINES("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":\"x\",\"size\":1}}"));
    assert_int_equal(jpt__vfs_engine_calls(h.e), 0);
    host_close(&h);
}

static void each_path_method_gets_its_path(void **state)
{
    static const struct {
        const char *name;
        int method;
    } methods[] = {{"fs.read", JPT__VFS_FS_READ},         {"fs.exists", JPT__VFS_FS_EXISTS},
                   {"fs.list_dir", JPT__VFS_FS_LIST_DIR}, {"fs.metadata", JPT__VFS_FS_METADATA},
                   {"fs.delete", JPT__VFS_FS_DELETE}};
    host h;

    (void)state;
    host_open(&h, NULL);
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        request(&h, "\"x\"", methods[i].name, "{\"path\":\"d/\\\"q\\\"\"}");
        jpt__vfs_call *c = only_call(&h);
        assert_int_equal(jpt__vfs_call_method(c), methods[i].method);
        assert_string_equal(jpt__vfs_call_params(c)->path, "d/\"q\"");
        assert_int_equal(jpt__vfs_call_answer_json(c, "{}", 2), JPT_OK);
        expect_lines(&h, LINES("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}"));
    }
    host_close(&h);
}

static void fs_write_gives_the_bytes_to_write(void **state)
{
    host h;

    (void)state;
    host_open(&h, NULL);
    request(&h, "1", "fs.write",
            "{\"path\":\"a.txt\",\"content\":\"line 1\\nt\\u00e9\\ud83d\\ude00 \\\"q\\\" \\\\\"}");
    jpt__vfs_call *c = only_call(&h);
    const jpt__vfs_params *p = jpt__vfs_call_params(c);
    assert_string_equal(p->path, "a.txt");
    assert_int_equal(p->content_len, strlen("line 1\nt\xc3\xa9\xf0\x9f\x98\x80 \"q\" \\"));
    assert_memory_equal(p->content, "line 1\nt\xc3\xa9\xf0\x9f\x98\x80 \"q\" \\", p->content_len);
    assert_false(p->base64);
    assert_int_equal(jpt__vfs_call_answer_json(c, "{}", 2), JPT_OK);

    /* base64: the bytes, NUL and all. */
    request(&h, "2", "fs.write", "{\"path\":\"b.bin\",\"content\":\"AAEC/w==\",\"encoding\":\"base64\"}");
    c = only_call(&h);
    p = jpt__vfs_call_params(c);
    assert_true(p->base64);
    assert_int_equal(p->content_len, 4);
    assert_memory_equal(p->content, "\x00\x01\x02\xff", 4);
    assert_int_equal(jpt__vfs_call_answer_json(c, "{}", 2), JPT_OK);

    /* Unpadded base64 is read too; an empty content is an empty file. */
    request(&h, "3", "fs.write", "{\"path\":\"c\",\"content\":\"QUI\",\"encoding\":\"base64\"}");
    c = only_call(&h);
    assert_int_equal(jpt__vfs_call_params(c)->content_len, 2);
    assert_memory_equal(jpt__vfs_call_params(c)->content, "AB", 2);
    assert_int_equal(jpt__vfs_call_answer_json(c, "{}", 2), JPT_OK);
    request(&h, "4", "fs.write", "{\"path\":\"d\",\"content\":\"\",\"encoding\":null}");
    c = only_call(&h);
    assert_int_equal(jpt__vfs_call_params(c)->content_len, 0);
    assert_false(jpt__vfs_call_params(c)->base64);
    assert_int_equal(jpt__vfs_call_answer_json(c, "{}", 2), JPT_OK);
    host_close(&h);
}

static void fs_rename_gets_from_and_to(void **state)
{
    host h;

    (void)state;
    host_open(&h, NULL);
    request(&h, "1", "fs.rename", "{\"to\":\"new.rs\",\"from\":\"old.rs\"}");
    jpt__vfs_call *c = only_call(&h);
    assert_int_equal(jpt__vfs_call_method(c), JPT__VFS_FS_RENAME);
    assert_string_equal(jpt__vfs_call_params(c)->from, "old.rs");
    assert_string_equal(jpt__vfs_call_params(c)->to, "new.rs");
    assert_int_equal(jpt__vfs_call_answer_json(c, "{}", 2), JPT_OK);
    host_close(&h);
}

static void fs_grep_gets_every_option(void **state)
{
    host h;

    (void)state;
    host_open(&h, NULL);
    request(&h, "1", "fs.grep",
            "{\"pattern\":\"fn main\",\"paths\":[\"src\",\"lib\"],\"extensions\":[\"rs\"],"
            "\"context\":2,\"case_insensitive\":true,\"fixed_strings\":false,\"max_matches\":50}");
    jpt__vfs_call *c = only_call(&h);
    const jpt__vfs_params *p = jpt__vfs_call_params(c);
    assert_string_equal(p->pattern, "fn main");
    assert_int_equal(p->npaths, 2);
    assert_string_equal(p->paths[0], "src");
    assert_string_equal(p->paths[1], "lib");
    assert_int_equal(p->nextensions, 1);
    assert_string_equal(p->extensions[0], "rs");
    assert_int_equal(p->context, 2);
    assert_true(p->case_insensitive);
    assert_false(p->fixed_strings);
    assert_int_equal(p->max_matches, 50);
    assert_int_equal(jpt__vfs_call_answer_json(c, "{\"matches\":[]}", 14), JPT_OK);

    /* Only the pattern is required; null reads as absent. */
    /* Member names may be escaped, even every character of them. */
    request(&h, "2", "fs.grep",
            "{\"pattern\":\"x\",\"paths\":null,\"context\":null,\"\\u0063\\u0061\\u0073"
            "\\u0065\\u005f\\u0069\\u006e\\u0073\\u0065\\u006e\\u0073\\u0069\\u0074\\u0069"
            "\\u0076\\u0065\":true}");
    c = only_call(&h);
    p = jpt__vfs_call_params(c);
    assert_null(p->paths);
    assert_int_equal(p->npaths, 0);
    assert_null(p->extensions);
    assert_int_equal(p->context, 0);
    assert_int_equal(p->max_matches, 0);
    assert_true(p->case_insensitive);
    assert_int_equal(jpt__vfs_call_answer_json(c, "{\"matches\":[]}", 14), JPT_OK);
    host_close(&h);
}

/* Every params error of every method, with the message that names the
 * field (-32602). */
static void invalid_params_name_the_field(void **state)
{
    static const struct {
        const char *method, *params, *message;
    } cases[] = {
        {"fs.read", NULL, "fs.read needs params"},
        {"fs.read", "[\"a\"]", "'params' must be an object"},
        {"fs.read", "{}", "'path' is required"},
        {"fs.read", "{\"path\":null}", "'path' is required"},
        {"fs.read", "{\"path\":1}", "'path' must be a string"},
        {"fs.read", "{\"path\":\"a\\u0000b\"}", "'path' must not contain a NUL character"},
        {"fs.read", "{\"path\":\"a\",\"pa\\u0074h\":\"b\"}", "'path' is given twice"},
        {"fs.exists", "{\"path\":[]}", "'path' must be a string"},
        {"fs.list_dir", "{\"dir\":\"a\"}", "'path' is required"},
        {"fs.metadata", "{\"path\":true}", "'path' must be a string"},
        {"fs.delete", "{}", "'path' is required"},
        {"fs.write", "{\"content\":\"x\"}", "'path' is required"},
        {"fs.write", "{\"path\":\"a\"}", "'content' is required"},
        {"fs.write", "{\"path\":\"a\",\"content\":5}", "'content' must be a string"},
        {"fs.write", "{\"path\":\"a\",\"content\":\"x\",\"encoding\":\"utf-8\"}",
         "'encoding' must be \"base64\" when given"},
        {"fs.write", "{\"path\":\"a\",\"content\":\"x\",\"encoding\":1}",
         "'encoding' must be a string"},
        {"fs.write", "{\"path\":\"a\",\"content\":\"!!!!\",\"encoding\":\"base64\"}",
         "'content' is not valid base64"},
        {"fs.write", "{\"path\":\"a\",\"content\":\"QUJDR\",\"encoding\":\"base64\"}",
         "'content' is not valid base64"},
        /* Not canonical: "QUJ" has bits set past "AB" (one text, one content). */
        {"fs.write", "{\"path\":\"a\",\"content\":\"QUJ\",\"encoding\":\"base64\"}",
         "'content' is not valid base64"},
        {"fs.rename", "{\"from\":\"a\"}", "'to' is required"},
        {"fs.rename", "{\"to\":\"a\"}", "'from' is required"},
        {"fs.rename", "{\"from\":1,\"to\":\"a\"}", "'from' must be a string"},
        {"fs.grep", "{}", "'pattern' is required"},
        {"fs.grep", "{\"pattern\":1}", "'pattern' must be a string"},
        {"fs.grep", "{\"pattern\":\"x\",\"paths\":\"src\"}", "'paths' must be an array of strings"},
        {"fs.grep", "{\"pattern\":\"x\",\"paths\":[\"a\",2]}", "'paths' must be an array of strings"},
        {"fs.grep", "{\"pattern\":\"x\",\"extensions\":[\"r\\u0000s\"]}",
         "'extensions' must not contain a NUL character"},
        {"fs.grep", "{\"pattern\":\"x\",\"context\":-1}",
         "'context' must be an integer from 0 to 10000"},
        {"fs.grep", "{\"pattern\":\"x\",\"context\":1.5}",
         "'context' must be an integer from 0 to 10000"},
        {"fs.grep", "{\"pattern\":\"x\",\"context\":10001}",
         "'context' must be an integer from 0 to 10000"},
        {"fs.grep", "{\"pattern\":\"x\",\"context\":\"2\"}",
         "'context' must be an integer from 0 to 10000"},
        {"fs.grep", "{\"pattern\":\"x\",\"case_insensitive\":\"yes\"}",
         "'case_insensitive' must be a boolean"},
        {"fs.grep", "{\"pattern\":\"x\",\"fixed_strings\":1}", "'fixed_strings' must be a boolean"},
        {"fs.grep", "{\"pattern\":\"x\",\"max_matches\":0}", "'max_matches' must be a positive integer"},
        {"fs.grep", "{\"pattern\":\"x\",\"max_matches\":18446744073709551616}",
         "'max_matches' must be a positive integer"},
    };
    host h;
    char message[256];

    (void)state;
    host_open(&h, NULL);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        request(&h, "9", cases[i].method, cases[i].params);
        snprintf(message, sizeof(message), "Invalid params: %s", cases[i].message);
        expect_error(&h, "9", JPT_VFS_E_INVALID_PARAMS, message);
        assert_int_equal(h.ncalls, 0);
    }
    /* Asking with wrong params is not breaking the protocol. */
    assert_int_equal(jpt__vfs_engine_violations(h.e), 0);
    assert_int_equal(jpt__vfs_engine_calls(h.e), 0);
    host_close(&h);
}

/* ---- Ids ------------------------------------------------------------------------------- */

static void ids_are_echoed_exactly_as_given(void **state)
{
    static const char *const ids[] = {
        "0", "7", "-3", "1.5", "1e3", "-0.25E-7", "123456789012345678901234567890",
        "\"abc\"", "\"\"", "\"a\\\"b\\\\c\"", "\"\\u00e9t\\u00E9\"", "\"\xc3\xa9\"",
    };
    host h;
    char want[512];

    (void)state;
    host_open(&h, NULL);
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        request(&h, ids[i], "fs.exists", "{\"path\":\"a\"}");
        assert_int_equal(jpt__vfs_call_answer_json(only_call(&h), "true", 4), JPT_OK);
        snprintf(want, sizeof(want), "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":true}\n", ids[i]);
        char *out = take_out(&h);
        /* Byte for byte, not merely equal as JSON. */
        assert_string_equal(out, want);
        free(out);
    }
    host_close(&h);
}

static void ids_of_other_types_are_invalid_requests_with_id_null(void **state)
{
    static const char *const ids[] = {"null", "{\"a\":1}", "[1]", "true", "false"};
    host h;
    char id[300];

    (void)state;
    host_open(&h, NULL);
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        request(&h, ids[i], "fs.read", "{\"path\":\"a\"}");
        expect_error(&h, "null", JPT_VFS_E_INVALID_REQUEST,
                     "Invalid Request: 'id' must be a string or a number of at most 256 bytes");
    }
    /* An id of 257 bytes is refused, one of 256 echoed. */
    memset(id, '7', 257);
    id[257] = '\0';
    request(&h, id, "fs.read", "{\"path\":\"a\"}");
    expect_error(&h, "null", JPT_VFS_E_INVALID_REQUEST,
                 "Invalid Request: 'id' must be a string or a number of at most 256 bytes");
    id[256] = '\0';
    request(&h, id, "fs.read", "{\"path\":\"a\"}");
    assert_string_equal(jpt__vfs_call_id(only_call(&h)), id);
    host_close(&h);
}

/* ---- Malformed messages ------------------------------------------------------------------ */

static void invalid_json_is_a_parse_error_with_id_null(void **state)
{
    static const struct {
        const char *line, *message;
    } cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"fs.read\"",
         "Parse error: invalid JSON at byte 42: expected ',' or '}'"},
        {"not json", "Parse error: invalid JSON at byte 0: invalid literal"},
        {"@", "Parse error: invalid JSON at byte 0: unexpected character"},
        {"{\"a\":1}}", "Parse error: invalid JSON at byte 7: unexpected text after the value"},
        {"{\"a\":01}", "Parse error: invalid JSON at byte 6: expected ',' or '}'"},
        {"{\"a\":\"\\x\"}", "Parse error: invalid JSON at byte 6: invalid escape in a string"},
        {"{\"a\":\"\\ud800\"}",
         "Parse error: invalid JSON at byte 6: high surrogate without its low surrogate in a "
         "string"},
        {"{\"a\":\"\\udc00\"}", "Parse error: invalid JSON at byte 6: lone low surrogate in a string"},
        {"{\"a\":\"tab\there\"}",
         "Parse error: invalid JSON at byte 9: raw control character in a string"},
        {"{'a':1}", "Parse error: invalid JSON at byte 1: expected a member name"},
        {"{\"a\":tru}", "Parse error: invalid JSON at byte 5: invalid literal"},
        {"{\"a\":-}", "Parse error: invalid JSON at byte 6: invalid number"},
        {"{\"a\":1.}", "Parse error: invalid JSON at byte 7: invalid number"},
        {"{\"a\" 1}", "Parse error: invalid JSON at byte 5: expected ':'"},
        {"[1,2", "Parse error: invalid JSON at byte 4: expected ',' or ']'"},
        {"{\"a\":\"open", "Parse error: invalid JSON at byte 5: unterminated string"},
    };
    host h;
    char line[256];

    (void)state;
    host_open(&h, NULL);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(line, sizeof(line), "%s\n", cases[i].line);
        feed(&h, line);
        expect_error(&h, "null", JPT_VFS_E_PARSE, cases[i].message);
    }
    assert_int_equal(jpt__vfs_engine_violations(h.e), sizeof(cases) / sizeof(cases[0]));
    host_close(&h);
}

static void nul_bytes_and_invalid_utf8_are_parse_errors(void **state)
{
    static const char nul_outside[] = "{\"jsonrpc\":\"2.0\",\0\"id\":1}\n";
    static const char nul_inside[] = "{\"a\":\"x\0y\"}\n";
    host h;

    (void)state;
    host_open(&h, NULL);
    feed_bytes(&h, nul_outside, sizeof(nul_outside) - 1);
    expect_error(&h, "null", JPT_VFS_E_PARSE,
                 "Parse error: invalid JSON at byte 17: expected a member name");
    feed_bytes(&h, nul_inside, sizeof(nul_inside) - 1);
    expect_error(&h, "null", JPT_VFS_E_PARSE, "Parse error: invalid JSON at byte 7: NUL byte in a string");
    feed(&h, "{\"a\":\"\xc3\x28\"}\n");
    expect_error(&h, "null", JPT_VFS_E_PARSE, "Parse error: invalid JSON at byte 6: invalid UTF-8 in a string");
    feed(&h, "{\"a\":\"\xed\xa0\x80\"}\n"); /* an encoded surrogate */
    expect_error(&h, "null", JPT_VFS_E_PARSE, "Parse error: invalid JSON at byte 6: invalid UTF-8 in a string");
    feed(&h, "{\"a\":\"\xc0\xaf\"}\n"); /* overlong */
    expect_error(&h, "null", JPT_VFS_E_PARSE, "Parse error: invalid JSON at byte 6: invalid UTF-8 in a string");
    feed(&h, "\xff\n");
    expect_error(&h, "null", JPT_VFS_E_PARSE, "Parse error: invalid JSON at byte 0: unexpected character");
    /* The session goes on. */
    request(&h, "1", "fs.read", "{\"path\":\"ok\"}");
    assert_string_equal(jpt__vfs_call_params(only_call(&h))->path, "ok");
    host_close(&h);
}

static char *nested(size_t depth)
{
    char *s = malloc(depth * 2 + 128);
    size_t n = (size_t)sprintf(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"fs.read\",\"x\":");

    for (size_t i = 1; i < depth; i++)
        s[n++] = '[';
    for (size_t i = 1; i < depth; i++)
        s[n++] = ']';
    strcpy(s + n, ",\"params\":{\"path\":\"deep\"}}\n");
    return s;
}

/* JPT_JSON_MAX_DEPTH (256) levels are read, one more is refused. */
static void deep_nesting_is_refused_past_the_depth_limit(void **state)
{
    host h;

    (void)state;
    host_open(&h, NULL);
    char *ok = nested(JPT_JSON_MAX_DEPTH), *deep = nested(JPT_JSON_MAX_DEPTH + 1);
    feed(&h, ok);
    assert_string_equal(jpt__vfs_call_params(only_call(&h))->path, "deep");
    feed(&h, deep);
    expect_error(&h, "null", JPT_VFS_E_PARSE,
                 "Parse error: invalid JSON at byte 302: nested deeper than 256 levels");
    free(ok);
    free(deep);
    host_close(&h);
}

static void valid_json_that_is_not_a_request_is_invalid(void **state)
{
    static const struct {
        const char *line, *id, *message;
    } cases[] = {
        {"42", "null", "Invalid Request: a message must be a JSON object"},
        {"\"fs.read\"", "null", "Invalid Request: a message must be a JSON object"},
        {"null", "null", "Invalid Request: a message must be a JSON object"},
        {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"fs.read\"}]", "null",
         "Invalid Request: batches are not supported (D11)"},
        {"{}", "null", "Invalid Request: 'jsonrpc' must be \"2.0\""},
        {"{\"id\":4,\"method\":\"fs.read\",\"params\":{\"path\":\"a\"}}", "4",
         "Invalid Request: 'jsonrpc' must be \"2.0\""},
        {"{\"jsonrpc\":\"1.0\",\"id\":\"s\",\"method\":\"fs.read\"}", "\"s\"",
         "Invalid Request: 'jsonrpc' must be \"2.0\""},
        {"{\"jsonrpc\":2.0,\"id\":1,\"method\":\"fs.read\"}", "1",
         "Invalid Request: 'jsonrpc' must be \"2.0\""},
        {"{\"jsonrpc\":\"2.0\",\"id\":5}", "5", "Invalid Request: no 'method'"},
        {"{\"jsonrpc\":\"2.0\"}", "null", "Invalid Request: no 'method'"},
        {"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":7}", "6",
         "Invalid Request: 'method' must be a string"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"fs.read\"}", "null",
         "Invalid Request: member 'id' is given twice"},
        /* Issue 16 §4: the id is readable, and echoed. */
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"fs.read\",\"method\":\"fs.delete\"}", "1",
         "Invalid Request: member 'method' is given twice"},
        {"{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"jsonrpc\":\"2.0\",\"method\":\"fs.read\"}", "\"x\"",
         "Invalid Request: member 'jsonrpc' is given twice"},

    };
    host h;
    char line[256];

    (void)state;
    host_open(&h, NULL);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(line, sizeof(line), "%s\n", cases[i].line);
        feed(&h, line);
        expect_error(&h, cases[i].id, JPT_VFS_E_INVALID_REQUEST, cases[i].message);
    }
    assert_int_equal(h.ncalls, 0);
    assert_int_equal(jpt__vfs_engine_violations(h.e), sizeof(cases) / sizeof(cases[0]));
    host_close(&h);
}

/* JSON-RPC 2.0 §6 (issue 16 §4): a batch of notifications alone is
 * answered with nothing; D11 processes none of it, and counts it. */
static void a_batch_of_notifications_is_not_answered(void **state)
{
    host h;

    (void)state;
    host_open(&h, NULL);
    feed(&h, "[{\"jsonrpc\":\"2.0\",\"method\":\"result\",\"params\":{\"content\":\"x\"}},"
             "{\"jsonrpc\":\"2.0\",\"method\":\"notify_hello\",\"params\":[7]}]\n");
    expect_lines(&h, NO_LINES);
    assert_int_equal(h.nstates, 0);
    assert_int_equal(jpt__vfs_engine_violations(h.e), 1);
    /* One that is not all notifications is answered, once. */
    feed(&h, "[{\"jsonrpc\":\"2.0\",\"method\":\"cancel\"},{\"jsonrpc\":\"2.0\","
             "\"method\":\"fs.read\",\"id\":1}]\n");
    expect_error(&h, "null", JPT_VFS_E_INVALID_REQUEST,
                 "Invalid Request: batches are not supported (D11)");
    feed(&h, "[{\"jsonrpc\":\"2.0\",\"method\":\"cancel\"},{\"method\":\"x\"}]\n");
    expect_error(&h, "null", JPT_VFS_E_INVALID_REQUEST,
                 "Invalid Request: batches are not supported (D11)");
    feed(&h, "[]\n");
    expect_error(&h, "null", JPT_VFS_E_INVALID_REQUEST, "Invalid Request: an empty batch");
    assert_int_equal(h.ncalls, 0);
    assert_int_equal(jpt__vfs_engine_violations(h.e), 4);
    host_close(&h);
}

/* The JSON-RPC 2.0 specification's own examples (its section 7), each
 * exchange as the specification writes it, against this engine: the
 * request line, and the response the specification gives or NULL for
 * none. Responses compare as JSON, but for error messages, which need
 * only begin with the specification's words (§5.1: the message "SHOULD
 * be limited to a concise single sentence"; this host adds why). Where
 * D11 narrows JSON-RPC 2.0 the expected response is adapted, and the
 * comment says how. */
static void the_json_rpc_specification_examples_are_answered_as_it_says(void **state)
{
    static const struct {
        const char *request, *response;
    } examples[] = {
        /* "rpc call with positional parameters": D11's methods take their
         * params by name (D11 "Protocol"), so positional ones are Invalid
         * params; "subtract" becomes a method this host serves. */
        {"{\"jsonrpc\": \"2.0\", \"method\": \"fs.read\", \"params\": [42, 23], \"id\": 1}",
         "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32602, \"message\": \"Invalid params\"}, "
         "\"id\": 1}"},
        {"{\"jsonrpc\": \"2.0\", \"method\": \"fs.read\", \"params\": [23, 42], \"id\": 2}",
         "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32602, \"message\": \"Invalid params\"}, "
         "\"id\": 2}"},
        /* "rpc call with named parameters": a served method with its named
         * params; the host's handler answers {"ok": true}. */
        {"{\"jsonrpc\": \"2.0\", \"method\": \"fs.read\", \"params\": {\"path\": \"a\"}, \"id\": 3}",
         "{\"jsonrpc\": \"2.0\", \"result\": {\"ok\": true}, \"id\": 3}"},
        {"{\"jsonrpc\": \"2.0\", \"method\": \"fs.exists\", \"params\": {\"path\": \"b\"}, "
         "\"id\": 4}",
         "{\"jsonrpc\": \"2.0\", \"result\": {\"ok\": true}, \"id\": 4}"},
        /* "a Notification" */
        {"{\"jsonrpc\": \"2.0\", \"method\": \"update\", \"params\": [1,2,3,4,5]}", NULL},
        {"{\"jsonrpc\": \"2.0\", \"method\": \"foobar\"}", NULL},
        /* "rpc call of non-existent method" */
        {"{\"jsonrpc\": \"2.0\", \"method\": \"foobar\", \"id\": \"1\"}",
         "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32601, \"message\": \"Method not found\"}, "
         "\"id\": \"1\"}"},
        /* "rpc call with invalid JSON" */
        {"{\"jsonrpc\": \"2.0\", \"method\": \"foobar, \"params\": \"bar\", \"baz]",
         "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32700, \"message\": \"Parse error\"}, "
         "\"id\": null}"},
        /* "rpc call with invalid Request object" */
        {"{\"jsonrpc\": \"2.0\", \"method\": 1, \"params\": \"bar\"}",
         "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32600, \"message\": \"Invalid Request\"}, "
         "\"id\": null}"},
        /* "rpc call Batch, invalid JSON" (on one line: D11 frames NDJSON) */
        {"[{\"jsonrpc\": \"2.0\", \"method\": \"sum\", \"params\": [1,2,4], \"id\": \"1\"},"
         "{\"jsonrpc\": \"2.0\", \"method\"]",
         "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32700, \"message\": \"Parse error\"}, "
         "\"id\": null}"},
        /* "rpc call with an empty Array" */
        {"[]",
         "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32600, \"message\": \"Invalid Request\"}, "
         "\"id\": null}"},
        /* "rpc call with an invalid Batch (but not empty)": §6 answers an
         * array of one error; D11 has no batches, so one error, alone. */
        {"[1]",
         "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32600, \"message\": \"Invalid Request\"}, "
         "\"id\": null}"},
        /* "rpc call with invalid Batch": §6 answers three errors; D11
         * one. */
        {"[1,2,3]",
         "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32600, \"message\": \"Invalid Request\"}, "
         "\"id\": null}"},
        /* "rpc call Batch": §6 answers each request; D11 processes none
         * and answers the batch with one error. */
        {"[{\"jsonrpc\": \"2.0\", \"method\": \"sum\", \"params\": [1,2,4], \"id\": \"1\"},"
         "{\"jsonrpc\": \"2.0\", \"method\": \"notify_hello\", \"params\": [7]},"
         "{\"jsonrpc\": \"2.0\", \"method\": \"subtract\", \"params\": [42,23], \"id\": \"2\"},"
         "{\"foo\": \"boo\"},"
         "{\"jsonrpc\": \"2.0\", \"method\": \"foo.get\", \"params\": {\"name\": \"myself\"}, "
         "\"id\": \"5\"},"
         "{\"jsonrpc\": \"2.0\", \"method\": \"get_data\", \"id\": \"9\"}]",
         "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32600, \"message\": \"Invalid Request\"}, "
         "\"id\": null}"},
        /* "rpc call Batch (all notifications)": nothing, as §6 says. */
        {"[{\"jsonrpc\": \"2.0\", \"method\": \"notify_sum\", \"params\": [1,2,4]},"
         "{\"jsonrpc\": \"2.0\", \"method\": \"notify_hello\", \"params\": [7]}]",
         NULL},
    };
    host h;
    char line[1024];

    (void)state;
    host_open(&h, NULL);
    h.answer_now = true;
    for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
        snprintf(line, sizeof(line), "%s\n", examples[i].request);
        feed(&h, line);
        char *out = take_out(&h);
        if (examples[i].response == NULL) {
            if (out[0] != '\0')
                fail_msg("example %zu: %s\nanswered %s, the specification: nothing", i,
                         examples[i].request, out);
            free(out);
            continue;
        }
        json_error_t jerr;
        json_t *got = json_loads(out, 0, &jerr);
        json_t *want = json_loads(examples[i].response, 0, &jerr);
        if (got == NULL || strchr(out, '\n') != strrchr(out, '\n'))
            fail_msg("example %zu: %s\nanswered %s, not one response", i, examples[i].request,
                     out);
        assert_non_null(want);
        json_t *got_error = json_object_get(got, "error");
        const char *got_message = json_string_value(json_object_get(got_error, "message"));
        const char *want_message =
            json_string_value(json_object_get(json_object_get(want, "error"), "message"));
        if (want_message != NULL) {
            if (got_message == NULL || strncmp(got_message, want_message, strlen(want_message)) != 0)
                fail_msg("example %zu: %s\nanswered %s, the specification: %s", i,
                         examples[i].request, out, examples[i].response);
            json_object_set_new(got_error, "message", json_string(want_message));
        }
        if (!json_equal(got, want))
            fail_msg("example %zu: %s\nanswered %s, the specification: %s", i,
                     examples[i].request, out, examples[i].response);
        json_decref(got);
        json_decref(want);
        free(out);
    }
    host_close(&h);
}

static void unknown_methods_are_method_not_found_naming_the_method(void **state)
{
    jpt__vfs_handlers hs;
    jpt__vfs_init init = {"t", NULL, NULL, NULL};
    jpt__errbuf err;
    host h;

    (void)state;
    host_open(&h, NULL);
    request(&h, "1", "fs.nope", "{}");
    expect_error(&h, "1", JPT_VFS_E_METHOD_NOT_FOUND, "Method not found: 'fs.nope'");
    request(&h, "2", "fs.re\\u0061d2", "{}");
    expect_error(&h, "2", JPT_VFS_E_METHOD_NOT_FOUND, "Method not found: 'fs.read2'");
    request(&h, "3", "http.get", "{\"url\":\"https://example.com\"}");
    expect_error(&h, "3", JPT_VFS_E_METHOD_NOT_FOUND,
                 "Method not found: 'http.get' is not served by this host");
    request(&h, "4", "http.post", "{}");
    expect_error(&h, "4", JPT_VFS_E_METHOD_NOT_FOUND,
                 "Method not found: 'http.post' is not served by this host");
    request(&h, "5", "process.run", "{\"program\":\"cargo\"}");
    expect_error(&h, "5", JPT_VFS_E_METHOD_NOT_FOUND,
                 "Method not found: 'process.run' is not served by this host");
    request(&h, "6", "result", "{\"content\":\"x\"}");
    expect_error(&h, "6", JPT_VFS_E_METHOD_NOT_FOUND,
                 "Method not found: 'result' is a notification; send it without an id");
    char long_name[200];
    memset(long_name, 'm', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    request(&h, "7", long_name, "{}");
    expect_error(&h, "7", JPT_VFS_E_METHOD_NOT_FOUND,
                 "Method not found: 'mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm...'");
    /* Not a violation: the tool asked for something this host lacks. */
    assert_int_equal(jpt__vfs_engine_violations(h.e), 0);
    host_close(&h);

    /* A method the host does not serve. */
    memset(&h, 0, sizeof(h));
    hs = (jpt__vfs_handlers){.state = on_state, .ud = &h};
    hs.method[JPT__VFS_FS_READ] = on_call;
    assert_int_equal(jpt__vfs_engine_new(NULL, &hs, &init, &err, &h.e), JPT_OK);
    drain(&h);
    h.out_len = 0;
    request(&h, "1", "fs.write", "{\"path\":\"a\",\"content\":\"\"}");
    expect_error(&h, "1", JPT_VFS_E_METHOD_NOT_FOUND,
                 "Method not found: 'fs.write' is not served by this host");
    host_close(&h);
}

static void unknown_notifications_are_ignored(void **state)
{
    host h;

    (void)state;
    host_open(&h, NULL);
    feed(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"progress\",\"params\":{\"pct\":50}}\n");
    feed(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"fs.read\",\"params\":{\"path\":\"a\"}}\n");
    expect_lines(&h, NO_LINES);
    assert_int_equal(h.ncalls, 0);
    assert_int_equal(h.nstates, 0);
    assert_int_equal(jpt__vfs_engine_violations(h.e), 0);
    host_close(&h);
}

static void responses_to_nothing_are_ignored_and_counted(void **state)
{
    host h;

    (void)state;
    host_open(&h, NULL);
    feed(&h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
    feed(&h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-1,\"message\":\"x\"}}\n");
    expect_lines(&h, NO_LINES);
    assert_int_equal(jpt__vfs_engine_violations(h.e), 2);
    assert_int_equal(jpt__vfs_engine_messages(h.e), 2);
    host_close(&h);
}

/* ---- Framing ----------------------------------------------------------------------------- */

static void crlf_and_empty_lines_are_accepted(void **state)
{
    host h;

    (void)state;
    host_open(&h, NULL);
    feed(&h, "\n\r\n  \t \r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"fs.read\",\"params\":"
             "{\"path\":\"a\"}}\r\n\n");
    assert_string_equal(jpt__vfs_call_params(only_call(&h))->path, "a");
    expect_lines(&h, NO_LINES);
    assert_int_equal(jpt__vfs_engine_messages(h.e), 1);
    assert_int_equal(jpt__vfs_engine_violations(h.e), 0);
    host_close(&h);
}

static void a_message_fed_a_byte_at_a_time_is_read_once(void **state)
{
    static const char text[] = "{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":\"fs.write\",\"params\":"
                               "{\"path\":\"x\",\"content\":\"a\\nb\"}}\r\n"
                               "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"fs.delete\",\"params\":"
                               "{\"path\":\"y\"}}\n";
    host h;

    (void)state;
    host_open(&h, NULL);
    for (size_t i = 0; i + 1 < sizeof(text); i++)
        feed_bytes(&h, text + i, 1);
    assert_int_equal(h.ncalls, 2);
    assert_memory_equal(jpt__vfs_call_params(h.calls[0])->content, "a\nb", 3);
    assert_string_equal(jpt__vfs_call_params(h.calls[1])->path, "y");
    host_close(&h);
}

/* An fs.write request up to its content, and what follows the content. */
static const char write_head[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"fs.write\","
                                 "\"params\":{\"path\":\"p\",\"content\":\"";
#define WRITE_HEAD (sizeof(write_head) - 1)
#define WRITE_TAIL 3 /* "}} */

/* An fs.write request line of `size` bytes before its newline. */
static char *write_request(size_t size)
{
    char *s = malloc(size + 2);

    memcpy(s, write_head, WRITE_HEAD);
    memset(s + WRITE_HEAD, 'c', size - WRITE_HEAD - WRITE_TAIL);
    memcpy(s + size - WRITE_TAIL, "\"}}\n", 5);
    return s;
}

static void a_line_at_the_limit_is_taken_and_one_byte_more_is_not(void **state)
{
    jpt__vfs_limits limits = {.max_message = 1000};
    host h;

    (void)state;
    host_open(&h, &limits);
    char *at = write_request(1000), *over = write_request(1001);
    feed(&h, at);
    assert_int_equal(jpt__vfs_call_params(only_call(&h))->content_len,
                     1000 - WRITE_HEAD - WRITE_TAIL);
    feed(&h, over);
    expect_error(&h, "null", JPT_VFS_E_INVALID_REQUEST,
                 "Invalid Request: message longer than the limit of 1000 bytes");
    /* A '\r' before the newline counts. */
    char crlf[1003];
    memcpy(crlf, at, 1000);
    memcpy(crlf + 1000, "\r\n", 3);
    feed(&h, crlf);
    expect_error(&h, "null", JPT_VFS_E_INVALID_REQUEST,
                 "Invalid Request: message longer than the limit of 1000 bytes");
    free(at);
    free(over);
    host_close(&h);
}

/* Feeds an fs.write request with `content` bytes in 64 KiB pieces and
 * returns the most memory the library held meanwhile. */
static size_t feed_long_line(host *h, size_t content)
{
    static char chunk[64 << 10];
    size_t sent = 0, total = content, peak;

    tu_peak_bytes();
    feed(h, write_head);
    memset(chunk, 'x', sizeof(chunk));
    while (sent < total) {
        size_t n = total - sent < sizeof(chunk) ? total - sent : sizeof(chunk);
        feed_bytes(h, chunk, n);
        sent += n;
    }
    feed(h, "\"}}\n");
    peak = tu_peak_bytes();
    return peak;
}

static void a_100_mb_line_is_refused_with_bounded_memory(void **state)
{
    jpt__vfs_limits limits = {.max_message = 1 << 20};
    host h;

    (void)state;
    size_t before = tu_live_bytes();
    host_open(&h, &limits);
    size_t peak = feed_long_line(&h, 100u << 20);
    /* The line was never kept whole: at most the limit, doubled by the
     * buffer's growth, beyond what the engine held before. */
    if (peak - before > (2u << 20) + (64u << 10))
        fail_msg("a 100 MB line made the library hold %zu bytes", peak - before);
    expect_error(&h, "null", JPT_VFS_E_INVALID_REQUEST,
                 "Invalid Request: message longer than the limit of 1048576 bytes");
    assert_int_equal(jpt__vfs_engine_violations(h.e), 1);
    /* What follows the long line is read as usual. */
    request(&h, "2", "fs.read", "{\"path\":\"after\"}");
    assert_string_equal(jpt__vfs_call_params(only_call(&h))->path, "after");
    host_close(&h);
}

static void the_default_limit_takes_10_mib_of_content_and_refuses_100_mb(void **state)
{
    host h;

    (void)state;
    size_t before = tu_live_bytes();
    host_open(&h, NULL);
    /* 10 MiB of content plus its envelope: taken. */
    feed_long_line(&h, JPT_VFS_CONTENT_LIMIT);
    jpt__vfs_call *c = only_call(&h);
    assert_int_equal(jpt__vfs_call_params(c)->content_len, JPT_VFS_CONTENT_LIMIT);
    assert_int_equal(jpt__vfs_call_answer_json(c, "{}", 2), JPT_OK);
    free(take_out(&h));
    size_t peak = feed_long_line(&h, 100u << 20);
    if (peak - before > 2 * (size_t)JPT__VFS_MAX_MESSAGE + (1u << 20))
        fail_msg("a 100 MB line made the library hold %zu bytes", peak - before);
    expect_error(&h, "null", JPT_VFS_E_INVALID_REQUEST,
                 "Invalid Request: message longer than the limit of 10551296 bytes");
    host_close(&h);
}

static void eof_inside_a_line_is_a_protocol_error(void **state)
{
    jpt__vfs_limits limits = {.max_message = 100};
    host h;

    (void)state;
    host_open(&h, &limits);
    feed(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"result\",\"params\":{\"content\":\"done\"}}\n");
    assert_int_equal(jpt__vfs_engine_eof(h.e), JPT_OK);
    feed(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"result\"");
    assert_int_equal(jpt__vfs_engine_eof(h.e), JPT_ERR_PROTOCOL);
    assert_string_equal(jpt__vfs_engine_errmsg(h.e),
                        "the tool's output ended inside a message (34 bytes without a newline)");
    host_close(&h);

    /* Also inside a line being dropped for its length. */
    host_open(&h, &limits);
    char line[300];
    memset(line, 'x', sizeof(line) - 1);
    line[sizeof(line) - 1] = '\0';
    feed(&h, line);
    expect_error(&h, "null", JPT_VFS_E_INVALID_REQUEST,
                 "Invalid Request: message longer than the limit of 100 bytes");
    assert_int_equal(jpt__vfs_engine_eof(h.e), JPT_ERR_PROTOCOL);
    assert_string_equal(jpt__vfs_engine_errmsg(h.e),
                        "the tool's output ended inside a message (299 bytes without a newline)");
    host_close(&h);
}

/* ---- Pipelining -------------------------------------------------------------------------- */

static void ten_thousand_pipelined_requests_are_answered_out_of_order(void **state)
{
    enum { N = 10000 };
    host h;
    char *text = malloc((size_t)N * 100), *p = text;

    (void)state;
    host_open(&h, NULL);
    for (int i = 0; i < N; i++) {
        if (i % 2)
            p += sprintf(p, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"fs.read\",\"params\":"
                            "{\"path\":\"f%d\"}}\n", i, i);
        else
            p += sprintf(p, "{\"jsonrpc\":\"2.0\",\"id\":\"s%d\",\"method\":\"fs.read\","
                            "\"params\":{\"path\":\"f%d\"}}\n", i, i);
    }
    feed_bytes(&h, text, (size_t)(p - text));
    assert_int_equal(h.ncalls, N);
    assert_int_equal(jpt__vfs_engine_calls(h.e), N);
    /* Answered in an order unrelated to the requests': a stride through
     * them, each with its own path as the content. */
    for (size_t k = 0, i = 0; k < N; k++, i = (i + 7919) % N) {
        jpt__vfs_call *c = h.calls[i];
        const char *path = jpt__vfs_call_params(c)->path;
        assert_int_equal(jpt__vfs_call_answer_read(c, path, strlen(path)), JPT_OK);
    }
    assert_int_equal(jpt__vfs_engine_calls(h.e), 0);
    drain(&h);
    char *out = take_out(&h), *line = out;
    size_t seen = 0;
    for (char *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1, seen++) {
        json_t *v = json_loadb(line, (size_t)(nl - line), 0, NULL);
        assert_non_null(v);
        json_t *id = json_object_get(v, "id");
        const char *content = json_string_value(json_object_get(json_object_get(v, "result"), "content"));
        int n = json_is_integer(id) ? (int)json_integer_value(id)
                                    : atoi(json_string_value(id) + 1);
        char want[16];
        snprintf(want, sizeof(want), "f%d", n);
        assert_string_equal(content, want);
        assert_int_equal(json_is_integer(id), n % 2 == 1);
        json_decref(v);
    }
    assert_int_equal(seen, N);
    free(out);
    free(text);
    h.ncalls = 0;
    host_close(&h);
}

/* ---- Violations ---------------------------------------------------------------------------- */

static void past_the_violation_limit_the_tool_must_be_stopped(void **state)
{
    host h;
    size_t used;

    (void)state;
    host_open(&h, NULL);
    for (int i = 0; i < 16; i++)
        feed(&h, "garbage\n");
    assert_int_equal(jpt__vfs_engine_violations(h.e), 16);
    assert_true(jpt__vfs_engine_wants_input(h.e));
    request(&h, "1", "fs.read", "{\"path\":\"still served\"}");
    assert_int_equal(h.ncalls, 1);
    free(take_out(&h));

    static const char seventeenth[] = "{\"jsonrpc\":\"2.0\",\"id\":{}}\nmore\n";
    assert_int_equal(jpt__vfs_engine_feed(h.e, seventeenth, sizeof(seventeenth) - 1, &used),
                     JPT_ERR_PROTOCOL);
    assert_int_equal(used, 26); /* up to the end of the line that broke it */
    assert_string_equal(jpt__vfs_engine_errmsg(h.e),
                        "the tool broke the VFS protocol 17 times, more than the 16 allowed; the "
                        "last: line 18: Invalid Request: no 'method'");
    drain(&h);
    expect_error(&h, "null", JPT_VFS_E_INVALID_REQUEST, "Invalid Request: no 'method'");
    assert_false(jpt__vfs_engine_wants_input(h.e));
    assert_int_equal(jpt__vfs_engine_feed(h.e, "x\n", 2, &used), JPT_ERR_PROTOCOL);
    assert_int_equal(used, 0);
    /* The call taken before can still be answered. */
    assert_int_equal(jpt__vfs_call_answer_error(only_call(&h), JPT_VFS_E_CANCELLED, "stopping"),
                     JPT_OK);
    host_close(&h);
}

static void the_violation_limit_is_configurable(void **state)
{
    jpt__vfs_limits limits = {.max_violations = 2};
    host h;
    size_t used;

    (void)state;
    host_open(&h, &limits);
    feed(&h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
    feed(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"state\",\"params\":{\"type\":\"done\"}}\n");
    assert_int_equal(jpt__vfs_engine_feed(h.e, "[]\n", 3, &used), JPT_ERR_PROTOCOL);
    assert_string_equal(jpt__vfs_engine_errmsg(h.e),
                        "the tool broke the VFS protocol 3 times, more than the 2 allowed; the "
                        "last: line 3: Invalid Request: an empty batch");
    host_close(&h);
}

/* ---- Backpressure -------------------------------------------------------------------------- */

static void a_tool_that_never_reads_stops_being_read(void **state)
{
    jpt__vfs_limits limits = {.output_high_water = 4096};
    char big[1100];
    host h;
    char *text = malloc(100 * 80), *p = text;
    size_t used, total = 0;

    (void)state;
    host_open(&h, &limits);
    snprintf(big, sizeof(big), "{\"content\":\"%01080d\"}", 0);
    h.big = big;
    for (int i = 0; i < 100; i++)
        p += sprintf(p, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"fs.read\",\"params\":"
                        "{\"path\":\"f\"}}\n", i);
    size_t n = (size_t)(p - text);
    /* Each answer is ~1.1 KB: past 4096 queued bytes the engine stops
     * taking requests, however many the tool wrote. */
    assert_int_equal(jpt__vfs_engine_feed(h.e, text, n, &used), JPT_OK);
    assert_true(used < n);
    assert_false(jpt__vfs_engine_wants_input(h.e));
    const char *out;
    size_t queued = jpt__vfs_engine_output(h.e, &out);
    assert_true(queued > 4096 && queued <= 4096 + 1200);
    total += used;
    /* Taking nothing while the output is full. */
    assert_int_equal(jpt__vfs_engine_feed(h.e, text + total, n - total, &used), JPT_OK);
    assert_int_equal(used, 0);
    /* The tool reads part of its stdin: still above the mark. */
    jpt__vfs_engine_output_done(h.e, 100);
    assert_int_equal(jpt__vfs_engine_output(h.e, &out), queued - 100);
    assert_false(jpt__vfs_engine_wants_input(h.e));
    /* Once it reads, the rest is taken. */
    while (total < n) {
        drain(&h);
        assert_true(jpt__vfs_engine_wants_input(h.e));
        assert_int_equal(jpt__vfs_engine_feed(h.e, text + total, n - total, &used), JPT_OK);
        assert_true(used > 0);
        total += used;
    }
    drain(&h);
    size_t lines = 0;
    for (size_t i = 0; i < h.out_len; i++)
        lines += h.out[i] == '\n';
    assert_int_equal(lines, 100);
    free(text);
    host_close(&h);
}

static void unanswered_calls_past_the_limit_stop_the_reading(void **state)
{
    jpt__vfs_limits limits = {.max_calls = 3, .max_call_bytes = 1 << 20};
    static const char two[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"fs.read\",\"params\":{\"path\":\"a\"}}\n"
                              "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"fs.read\",\"params\":{\"path\":\"b\"}}\n";
    host h;
    size_t used;

    (void)state;
    host_open(&h, &limits);
    feed(&h, two);
    assert_true(jpt__vfs_engine_wants_input(h.e));
    assert_int_equal(jpt__vfs_engine_feed(h.e, two, sizeof(two) - 1, &used), JPT_OK);
    assert_int_equal(used, (sizeof(two) - 1) / 2);
    assert_int_equal(h.ncalls, 3);
    assert_false(jpt__vfs_engine_wants_input(h.e));
    assert_int_equal(jpt__vfs_call_answer_error(h.calls[0], JPT_VFS_E_NOT_FOUND, "no '%s'", "a"),
                     JPT_OK);
    assert_true(jpt__vfs_engine_wants_input(h.e));
    host_close(&h);

    /* And params holding more than max_call_bytes. */
    limits = (jpt__vfs_limits){.max_call_bytes = 100};
    host_open(&h, &limits);
    char *w = write_request(300);
    feed(&h, w);
    assert_false(jpt__vfs_engine_wants_input(h.e));
    assert_int_equal(jpt__vfs_call_answer_json(only_call(&h), "{}", 2), JPT_OK);
    assert_true(jpt__vfs_engine_wants_input(h.e));
    free(w);
    host_close(&h);
}

/* ---- Answers -------------------------------------------------------------------------------- */

static void fs_read_answers_text_as_text_and_the_rest_as_base64(void **state)
{
    static const char text[] = "fn main() {\n\t\"x\" \\ \x01 caf\xc3\xa9\n}";
    host h;

    (void)state;
    host_open(&h, NULL);
    request(&h, "1", "fs.read", "{\"path\":\"a\"}");
    assert_int_equal(jpt__vfs_call_answer_read(only_call(&h), text, sizeof(text) - 1), JPT_OK);
    expect_lines(&h, LINES("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":\"fn main() "
                           "{\\n\\t\\\"x\\\" \\\\ \\u0001 caf\xc3\xa9\\n}\",\"size\":28}}"));
    request(&h, "2", "fs.read", "{\"path\":\"b\"}");
    assert_int_equal(jpt__vfs_call_answer_read(only_call(&h), "\x89PNG\r\n", 6), JPT_OK);
    expect_lines(&h, LINES("{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":\"iVBORw0K\","
                           "\"encoding\":\"base64\",\"size\":6}}"));
    /* A NUL byte makes a file binary, even when it is valid UTF-8. */
    request(&h, "3", "fs.read", "{\"path\":\"c\"}");
    assert_int_equal(jpt__vfs_call_answer_read(only_call(&h), "a\0b", 3), JPT_OK);
    expect_lines(&h, LINES("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":\"YQBi\","
                           "\"encoding\":\"base64\",\"size\":3}}"));
    request(&h, "4", "fs.read", "{\"path\":\"d\"}");
    assert_int_equal(jpt__vfs_call_answer_read(only_call(&h), "", 0), JPT_OK);
    expect_lines(&h, LINES("{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"content\":\"\",\"size\":0}}"));
    host_close(&h);
}

static void fs_read_of_every_byte_decodes_back_exactly(void **state)
{
    unsigned char all[256 * 8];
    host h;

    (void)state;
    for (size_t i = 0; i < sizeof(all); i++)
        all[i] = (unsigned char)(i * 7 + i / 256);
    host_open(&h, NULL);
    for (size_t len = 0; len < 40; len++) {
        request(&h, "1", "fs.read", "{\"path\":\"a\"}");
        assert_int_equal(jpt__vfs_call_answer_read(only_call(&h), all, len), JPT_OK);
        char *out = take_out(&h);
        json_t *v = json_loads(out, 0, NULL);
        json_t *r = json_object_get(v, "result");
        const char *content = json_string_value(json_object_get(r, "content"));
        unsigned char decoded[64];
        size_t n;
        assert_true(jpt__base64_decode(content, strlen(content), decoded, &n));
        assert_int_equal(n, len);
        assert_memory_equal(decoded, all, len);
        json_decref(v);
        free(out);
    }
    host_close(&h);
}

static void answers_are_one_line_and_checked(void **state)
{
    host h;

    (void)state;
    host_open(&h, NULL);
    request(&h, "1", "fs.list_dir", "{\"path\":\"src\"}");
    jpt__vfs_call *c = only_call(&h);
    assert_int_equal(jpt__vfs_call_answer_json(c, "{\"entries\":", 11), JPT_ERR_INVALID);
    assert_string_equal(jpt__vfs_engine_errmsg(h.e),
                        "the result for request 1 is not JSON: expected a value at byte 11");
    static const char pretty[] = "{\n  \"entries\": [\r\n    {\"path\": \"main.rs\", \"kind\": \"file\"}\n  ]\n}";
    assert_int_equal(jpt__vfs_call_answer_json(c, pretty, sizeof(pretty) - 1), JPT_OK);
    char *out = take_out(&h);
    assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
    assert_null(strchr(out, '\r'));
    out[strlen(out) - 1] = '\0';
    tu_assert_json_equal(out, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"entries\":[{\"path\":"
                              "\"main.rs\",\"kind\":\"file\"}]}}");
    free(out);
    host_close(&h);
}

static void error_answers_carry_each_code_and_their_message(void **state)
{
    static const int codes[] = {JPT_VFS_E_ACCESS_DENIED, JPT_VFS_E_NOT_FOUND, JPT_VFS_E_EXISTS,
                                JPT_VFS_E_TIMEOUT,       JPT_VFS_E_CANCELLED, JPT_VFS_E_INTERNAL};
    char message[700], quoted[800];
    host h;

    (void)state;
    host_open(&h, NULL);
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        request(&h, "\"r\"", "fs.read", "{\"path\":\".env\"}");
        assert_int_equal(jpt__vfs_call_answer_error(only_call(&h), codes[i],
                                                    "Access denied: path '%s' is \"%s\"", ".env",
                                                    "sensitive"),
                         JPT_OK);
        expect_error(&h, "\"r\"", codes[i], "Access denied: path '.env' is \"sensitive\"");
    }
    /* A message longer than any buffer on the way. */
    memset(message, 'm', sizeof(message) - 1);
    message[sizeof(message) - 1] = '\0';
    request(&h, "2", "fs.read", "{\"path\":\"a\"}");
    assert_int_equal(jpt__vfs_call_answer_error(only_call(&h), JPT_VFS_E_NOT_FOUND, "%s", message),
                     JPT_OK);
    snprintf(quoted, sizeof(quoted), "%s", message);
    expect_error(&h, "2", JPT_VFS_E_NOT_FOUND, quoted);
    host_close(&h);
}

static void pending_apply_and_cancel_are_written_as_notifications(void **state)
{
    host h;

    (void)state;
    host_open(&h, NULL);
    request(&h, "\"req-1\"", "fs.write", "{\"path\":\"a\",\"content\":\"\"}");
    jpt__vfs_call *c = only_call(&h);
    assert_int_equal(jpt__vfs_call_pending(c, "awaiting user approval"), JPT_OK);
    assert_int_equal(jpt__vfs_engine_apply(h.e, "\"y\"", 3), JPT_OK);
    assert_int_equal(jpt__vfs_engine_apply(h.e, "{\n\"answer\": true}", 17), JPT_OK);
    assert_int_equal(jpt__vfs_engine_apply(h.e, "{", 1), JPT_ERR_INVALID);
    assert_int_equal(jpt__vfs_engine_cancel(h.e), JPT_OK);
    drain(&h);
    expect_lines(&h, LINES("{\"jsonrpc\":\"2.0\",\"method\":\"pending\",\"params\":{\"request_id\":"
                           "\"req-1\",\"reason\":\"awaiting user approval\"}}",
                           "{\"jsonrpc\":\"2.0\",\"method\":\"apply\",\"params\":{\"input\":\"y\"}}",
                           "{\"jsonrpc\":\"2.0\",\"method\":\"apply\",\"params\":{\"input\":"
                           "{\"answer\":true}}}",
                           "{\"jsonrpc\":\"2.0\",\"method\":\"cancel\"}"));
    assert_int_equal(jpt__vfs_call_answer_error(c, JPT_VFS_E_CANCELLED, "cancelled"), JPT_OK);
    host_close(&h);
}

/* ---- Notifications from the tool --------------------------------------------------------------- */

static void a_result_becomes_a_stopped_state(void **state)
{
    host h;

    (void)state;
    host_open(&h, NULL);
    feed(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"result\",\"params\":{\"content\":\"Modified 2 files.\"}}\n");
    feed(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"result\",\"params\":{\"content\":[{\"type\":\"text\","
             "\"text\":\"a\"},{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///p/x.rs\","
             "\"text\":\"x\"}}],\"type\":\"running\"}}\n");
    assert_int_equal(h.nstates, 2);
    jpt_state *s = h.states[0];
    assert_int_equal(jpt_state_kind(s), JPT_STATE_STOPPED);
    assert_false(jpt_state_is_error(s));
    assert_int_equal(jpt_state_block_count(s), 1);
    assert_string_equal(jpt_state_block_field(s, 0, JPT_FIELD_TEXT, NULL), "Modified 2 files.");
    /* A stray "type" does not turn a result into a ToolState. */
    s = h.states[1];
    assert_int_equal(jpt_state_kind(s), JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_block_count(s), 2);
    assert_int_equal(jpt_state_block_type(s, 1), JPT_BLOCK_RESOURCE);
    expect_lines(&h, NO_LINES);
    assert_int_equal(jpt__vfs_engine_violations(h.e), 0);
    host_close(&h);
}

static void an_error_becomes_an_error_state(void **state)
{
    host h;

    (void)state;
    host_open(&h, NULL);
    feed(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"error\",\"params\":{\"message\":\"Failed to parse "
             "input\",\"trace\":[\"a\",\"b\"],\"transient\":true}}\n");
    feed(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"error\",\"params\":{\"message\":\"plain\"}}\n");
    assert_int_equal(h.nstates, 2);
    jpt_state *s = h.states[0];
    assert_int_equal(jpt_state_kind(s), JPT_STATE_STOPPED);
    assert_true(jpt_state_is_error(s));
    assert_string_equal(jpt_state_error_message(s), "Failed to parse input");
    assert_true(jpt_state_error_transient(s));
    assert_int_equal(jpt_state_error_trace_count(s), 2);
    assert_string_equal(jpt_state_error_trace(s, 1), "b");
    s = h.states[1];
    assert_true(jpt_state_is_error(s));
    assert_string_equal(jpt_state_error_message(s), "plain");
    assert_false(jpt_state_error_transient(s));
    assert_int_equal(jpt_state_error_trace_count(s), 0);
    host_close(&h);
}

static void state_notifications_drive_the_handle(void **state)
{
    host h;

    (void)state;
    host_open(&h, NULL);
    feed(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"state\",\"params\":{\"type\":\"running\",\"content\":"
             "\"Next hunk: ...\"}}\n");
    feed(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"state\",\"params\":{\"type\":\"waiting\",\"content\":"
             "\"Confirm?\",\"question\":{\"id\":\"ok\",\"text\":\"Stage it?\",\"answer_type\":"
             "\"Boolean\"}}}\n");
    feed(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"state\",\"params\":{\"type\":\"stopped\",\"result\":"
             "\"Staged 3 hunks.\"}}\n");
    assert_int_equal(h.nstates, 3);
    assert_int_equal(jpt_state_kind(h.states[0]), JPT_STATE_RUNNING);
    assert_string_equal(jpt_state_block_field(h.states[0], 0, JPT_FIELD_TEXT, NULL),
                        "Next hunk: ...");
    assert_int_equal(jpt_state_kind(h.states[1]), JPT_STATE_WAITING);
    assert_int_equal(jpt_state_block_type(h.states[1], 1), JPT_BLOCK_QUESTION);
    assert_int_equal(jpt_state_kind(h.states[2]), JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_warning_count(h.states[2]), 0);
    assert_string_equal(jpt_state_block_field(h.states[2], 0, JPT_FIELD_TEXT, NULL),
                        "Staged 3 hunks.");
    /* RFD 009's own form, and an error result. */
    feed(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"state\",\"params\":{\"type\":\"stopped\",\"result\":"
             "{\"Ok\":\"fine\"}}}\n");
    feed(&h, "{\"jsonrpc\":\"2.0\",\"method\":\"state\",\"params\":{\"result\":{\"Err\":"
             "{\"message\":\"broke\",\"transient\":true}},\"type\":\"stopped\"}}\n");
    assert_int_equal(h.nstates, 5);
    assert_string_equal(jpt_state_block_field(h.states[3], 0, JPT_FIELD_TEXT, NULL), "fine");
    assert_true(jpt_state_is_error(h.states[4]));
    assert_string_equal(jpt_state_error_message(h.states[4]), "broke");
    assert_true(jpt_state_error_transient(h.states[4]));
    host_close(&h);
}

static void malformed_notifications_are_violations(void **state)
{
    static const char *const lines[] = {
        "{\"jsonrpc\":\"2.0\",\"method\":\"result\"}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"result\",\"params\":{\"text\":\"x\"}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"result\",\"params\":{\"content\":5}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"result\",\"params\":{\"content\":\"a\",\"content\":\"b\"}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"error\",\"params\":[\"x\"]}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"error\",\"params\":{\"trace\":[]}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"error\",\"params\":{\"message\":\"m\",\"trace\":\"t\"}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"error\",\"params\":{\"message\":\"m\",\"trace\":[1]}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"error\",\"params\":{\"message\":\"m\",\"transient\":1}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"state\"}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"state\",\"params\":{\"type\":\"spawned\"}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"state\",\"params\":{\"content\":\"x\"}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"state\",\"params\":{\"type\":\"running\",\"type\":\"stopped\"}}",
    };
    host h;
    char line[256];

    (void)state;
    host_open(&h, NULL);
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        snprintf(line, sizeof(line), "%s\n", lines[i]);
        feed(&h, line);
        assert_int_equal(jpt__vfs_engine_violations(h.e), i + 1);
    }
    /* Notifications are never answered, not even malformed ones. */
    expect_lines(&h, NO_LINES);
    assert_int_equal(h.nstates, 0);
    host_close(&h);
}

/* ---- Large messages through the fast paths -------------------------------------------------------- */

static void a_large_write_with_escapes_arrives_exact(void **state)
{
    size_t n = 3u << 20;
    char *content = malloc(n), *line;
    host h;

    (void)state;
    for (size_t i = 0; i < n; i++)
        content[i] = "ab\"\\\n\t\x01\xc3\xa9z"[i % 10];
    content[n - 1] = 'z'; /* no split UTF-8 sequence at the end */
    json_t *req = json_pack("{s:s,s:i,s:s,s:{s:s,s:s%}}", "jsonrpc", "2.0", "id", 1, "method",
                            "fs.write", "params", "path", "big", "content", content, n);
    line = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    host_open(&h, NULL);
    size_t len = strlen(line);
    for (size_t off = 0; off < len; off += 65536)
        feed_bytes(&h, line + off, len - off < 65536 ? len - off : 65536);
    feed(&h, "\n");
    jpt__vfs_call *c = only_call(&h);
    assert_int_equal(jpt__vfs_call_params(c)->content_len, n);
    assert_memory_equal(jpt__vfs_call_params(c)->content, content, n);
    /* And back through fs.read's encoder. */
    assert_int_equal(jpt__vfs_call_answer_read(c, content, n), JPT_OK);
    char *out = take_out(&h);
    json_t *v = json_loads(out, 0, NULL);
    json_t *r = json_object_get(v, "result");
    assert_int_equal(json_string_length(json_object_get(r, "content")), n);
    assert_memory_equal(json_string_value(json_object_get(r, "content")), content, n);
    assert_int_equal(json_integer_value(json_object_get(r, "size")), n);
    json_decref(v);
    free(out);
    free(line);
    free(content);
    host_close(&h);
}

/* ---- Allocation failure ----------------------------------------------------------------------------- */

/* A session that touches every path that allocates: init, a request of
 * each kind (small and stolen), params errors, parse errors, answers of
 * each kind, pending, notifications, apply, cancel. */
static int session(char **transcript)
{
    static const char input[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"fs.read\",\"params\":{\"path\":\"a\"}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"fs.grep\",\"params\":{\"pattern\":\"x\","
        "\"paths\":[\"a\",\"b\"],\"extensions\":[\"c\"]}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"fs.read\",\"params\":{}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"nope\"}\n"
        "bad\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"state\",\"params\":{\"type\":\"running\",\"content\":\"r\"}}\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"error\",\"params\":{\"message\":\"m\",\"trace\":[\"t\"]}}\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"state\",\"params\":{\"type\":\"stopped\",\"result\":\"s\"}}\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"result\",\"params\":{\"content\":\"done\"}}\n";
    jpt__vfs_init init = {"t", "{\"a\":1}", NULL, NULL};
    jpt__errbuf err;
    host h;
    int rc;
    size_t used;

    memset(&h, 0, sizeof(h));
    jpt__vfs_handlers hs = handlers(&h);
    if ((rc = jpt__vfs_engine_new(NULL, &hs, &init, &err, &h.e)) < 0)
        return rc;
    if ((rc = jpt__vfs_engine_feed(h.e, input, sizeof(input) - 1, &used)) == JPT_OK) {
        /* Large enough for the call to take the framer's buffer. */
        char *big = write_request(200 << 10);
        size_t len = strlen(big);
        for (size_t off = 0; rc == JPT_OK && off < len; off += 65536)
            rc = jpt__vfs_engine_feed(h.e, big + off, len - off < 65536 ? len - off : 65536,
                                      &used);
        free(big);
    }
    for (size_t i = 0; rc == JPT_OK && i < h.ncalls; i++) {
        jpt__vfs_call *c = h.calls[i];
        if ((rc = jpt__vfs_call_pending(c, "asking")) < 0)
            break;
        if (i == 0)
            rc = jpt__vfs_call_answer_read(c, "text", 4);
        else if (i == 1)
            rc = jpt__vfs_call_answer_json(c, "{\"matches\":[]}", 14);
        else
            rc = jpt__vfs_call_answer_error(c, JPT_VFS_E_EXISTS, "exists: %s", "p");
        if (rc < 0)
            h.ncalls = i; /* the rest go with the engine */
    }
    h.ncalls = 0;
    if (rc == JPT_OK && (rc = jpt__vfs_engine_apply(h.e, "\"in\"", 4)) == JPT_OK)
        rc = jpt__vfs_engine_cancel(h.e);
    if (rc == JPT_OK) {
        drain(&h);
        *transcript = take_out(&h);
    }
    host_close(&h);
    return rc;
}

/* One run under tu_sweep: whatever succeeds says exactly what an
 * unhindered run says. */
static int session_op(void *ctx)
{
    const char *expected = ctx;
    char *got = NULL;
    int rc = session(&got);

    if (rc == JPT_OK) {
        assert_string_equal(got, expected);
        free(got);
    }
    return rc;
}

static void the_engine_survives_every_allocation_failure(void **state)
{
    char *expected = NULL;

    (void)state;
    assert_int_equal(session(&expected), JPT_OK);
    tu_sweep("the engine", session_op, expected);
    free(expected);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(init_is_the_first_message),
        cmocka_unit_test(init_without_answers_or_options_sends_empty_objects),
        cmocka_unit_test(init_refuses_arguments_that_are_not_an_object),
        cmocka_unit_test(a_request_reaches_its_method_with_typed_params),
        cmocka_unit_test(each_path_method_gets_its_path),
        cmocka_unit_test(fs_write_gives_the_bytes_to_write),
        cmocka_unit_test(fs_rename_gets_from_and_to),
        cmocka_unit_test(fs_grep_gets_every_option),
        cmocka_unit_test(invalid_params_name_the_field),
        cmocka_unit_test(ids_are_echoed_exactly_as_given),
        cmocka_unit_test(ids_of_other_types_are_invalid_requests_with_id_null),
        cmocka_unit_test(invalid_json_is_a_parse_error_with_id_null),
        cmocka_unit_test(nul_bytes_and_invalid_utf8_are_parse_errors),
        cmocka_unit_test(deep_nesting_is_refused_past_the_depth_limit),
        cmocka_unit_test(valid_json_that_is_not_a_request_is_invalid),
        cmocka_unit_test(a_batch_of_notifications_is_not_answered),
        cmocka_unit_test(the_json_rpc_specification_examples_are_answered_as_it_says),
        cmocka_unit_test(unknown_methods_are_method_not_found_naming_the_method),
        cmocka_unit_test(unknown_notifications_are_ignored),
        cmocka_unit_test(responses_to_nothing_are_ignored_and_counted),
        cmocka_unit_test(crlf_and_empty_lines_are_accepted),
        cmocka_unit_test(a_message_fed_a_byte_at_a_time_is_read_once),
        cmocka_unit_test(a_line_at_the_limit_is_taken_and_one_byte_more_is_not),
        cmocka_unit_test(a_100_mb_line_is_refused_with_bounded_memory),
        cmocka_unit_test(the_default_limit_takes_10_mib_of_content_and_refuses_100_mb),
        cmocka_unit_test(eof_inside_a_line_is_a_protocol_error),
        cmocka_unit_test(ten_thousand_pipelined_requests_are_answered_out_of_order),
        cmocka_unit_test(past_the_violation_limit_the_tool_must_be_stopped),
        cmocka_unit_test(the_violation_limit_is_configurable),
        cmocka_unit_test(a_tool_that_never_reads_stops_being_read),
        cmocka_unit_test(unanswered_calls_past_the_limit_stop_the_reading),
        cmocka_unit_test(fs_read_answers_text_as_text_and_the_rest_as_base64),
        cmocka_unit_test(fs_read_of_every_byte_decodes_back_exactly),
        cmocka_unit_test(answers_are_one_line_and_checked),
        cmocka_unit_test(error_answers_carry_each_code_and_their_message),
        cmocka_unit_test(pending_apply_and_cancel_are_written_as_notifications),
        cmocka_unit_test(a_result_becomes_a_stopped_state),
        cmocka_unit_test(an_error_becomes_an_error_state),
        cmocka_unit_test(state_notifications_drive_the_handle),
        cmocka_unit_test(malformed_notifications_are_violations),
        cmocka_unit_test(a_large_write_with_escapes_arrives_exact),
        cmocka_unit_test(the_engine_survives_every_allocation_failure),
    };

    tu_install_counting_allocator();
    return TU_RUN(tests);
}
