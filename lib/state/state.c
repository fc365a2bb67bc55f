/* jpt_state as an object: allocation, reference counting, accessors and the
 * builders hosts and builtin tools use. */
#include <stdio.h>
#include <string.h>

#include "state/impl.h"

jpt_state *jpt__state_alloc(int kind)
{
    jpt_state *s = jpt__calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    atomic_init(&s->refs, 1);
    atomic_init(&s->shared, false);
    s->kind = kind;
    return s;
}

static void strv_free(jpt__strv *sv)
{
    for (size_t i = 0; i < sv->n; i++)
        jpt__free(sv->v[i]);
    jpt__free(sv->v);
    memset(sv, 0, sizeof(*sv));
}

int jpt__strv_push(jpt__strv *sv, const char *p, size_t n)
{
    char **v = jpt__array_reserve(sv->v, &sv->cap, sv->n + 1, sizeof(*v), 4);
    if (v == NULL)
        return JPT_ERR_NOMEM;
    sv->v = v;
    char *copy = jpt__memdup0(p, n);
    if (copy == NULL)
        return JPT_ERR_NOMEM;
    sv->v[sv->n++] = copy;
    return JPT_OK;
}

int jpt__state_push_block(jpt_state *s, jpt__block *b)
{
    jpt__block *blocks =
        jpt__array_reserve(s->blocks, &s->cap_blocks, s->nblocks + 1, sizeof(*blocks), 4);
    if (blocks == NULL) {
        jpt__block_clear(b);
        return JPT_ERR_NOMEM;
    }
    s->blocks = blocks;
    s->blocks[s->nblocks++] = *b;
    memset(b, 0, sizeof(*b));
    return JPT_OK;
}

int jpt__state_warn(jpt_state *s, const char *fmt, ...)
{
    char text[512];
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (n < 0)
        return JPT_ERR_INVALID;
    jpt__log(JPT_LOG_WARNING, "tool output: %s", text);
    return jpt__strv_push(&s->warnings, text, strlen(text));
}

int jpt__state_set_error_from_blocks(jpt_state *s, bool transient)
{
    jpt__buf msg = JPT__BUF_INIT;

    for (size_t i = 0; i < s->nblocks; i++) {
        const jpt__field *t = &s->blocks[i].f[JPT_FIELD_TEXT];
        if (s->blocks[i].type != JPT_BLOCK_TEXT)
            continue;
        if ((msg.len > 0 && jpt__buf_putc(&msg, '\n') < 0) ||
            jpt__buf_append(&msg, t->ptr, t->len) < 0) {
            jpt__buf_free(&msg);
            return JPT_ERR_NOMEM;
        }
    }
    size_t len = msg.len;
    char *text = jpt__buf_take(&msg);
    if (text == NULL)
        return JPT_ERR_NOMEM;
    jpt__free(s->error_message);
    s->error_message = text;
    s->error_message_len = len;
    s->is_error = true;
    s->transient = transient;
    s->kind = JPT_STATE_STOPPED;
    return JPT_OK;
}

size_t jpt__state_question_count(const jpt_state *s)
{
    size_t n = 0;

    for (size_t i = 0; i < s->nblocks; i++)
        n += s->blocks[i].type == JPT_BLOCK_QUESTION;
    return n;
}

/* ---- Reference counting -------------------------------------------------- */

JPT_EXPORT jpt_state *jpt_state_ref(jpt_state *s)
{
    if (s != NULL) {
        atomic_store_explicit(&s->shared, true, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    }
    return s;
}

JPT_EXPORT void jpt_state_unref(jpt_state *s)
{
    if (s == NULL ||
        atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i < s->nblocks; i++)
        jpt__block_clear(&s->blocks[i]);
    jpt__free(s->blocks);
    strv_free(&s->trace);
    strv_free(&s->warnings);
    jpt__free(s->error_message);
    jpt__free(s->structured);
    jpt__free(s);
}

/* ---- Accessors ------------------------------------------------------------ */

JPT_EXPORT int jpt_state_kind(const jpt_state *s)
{
    return s != NULL ? s->kind : JPT_ERR_INVALID;
}

JPT_EXPORT int jpt_state_is_error(const jpt_state *s)
{
    return s != NULL && s->is_error;
}

JPT_EXPORT const char *jpt_state_error_message(const jpt_state *s)
{
    return s != NULL && s->error_message != NULL ? s->error_message : "";
}

JPT_EXPORT int jpt_state_error_transient(const jpt_state *s)
{
    return s != NULL && s->transient;
}

JPT_EXPORT size_t jpt_state_error_trace_count(const jpt_state *s)
{
    return s != NULL ? s->trace.n : 0;
}

JPT_EXPORT const char *jpt_state_error_trace(const jpt_state *s, size_t i)
{
    return s != NULL && i < s->trace.n ? s->trace.v[i] : NULL;
}

JPT_EXPORT const char *jpt_state_structured_content(const jpt_state *s)
{
    return s != NULL ? s->structured : NULL;
}

JPT_EXPORT size_t jpt_state_block_count(const jpt_state *s)
{
    return s != NULL ? s->nblocks : 0;
}

JPT_EXPORT int jpt_state_block_type(const jpt_state *s, size_t i)
{
    return s != NULL && i < s->nblocks ? s->blocks[i].type : 0;
}

JPT_EXPORT const char *jpt_state_block_field(const jpt_state *s, size_t i,
                                             int field, size_t *len)
{
    if (s == NULL || i >= s->nblocks || field < 1 || field > JPT__FIELD_MAX)
        return NULL;
    const jpt__field *f = &s->blocks[i].f[field];
    if (len != NULL)
        *len = f->ptr != NULL ? f->len : 0;
    return f->ptr;
}

JPT_EXPORT size_t jpt_state_warning_count(const jpt_state *s)
{
    return s != NULL ? s->warnings.n : 0;
}

JPT_EXPORT const char *jpt_state_warning(const jpt_state *s, size_t i)
{
    return s != NULL && i < s->warnings.n ? s->warnings.v[i] : NULL;
}

JPT_EXPORT const char *jpt_state_errmsg(const jpt_state *s)
{
    return s != NULL ? s->err.text : "";
}

/* ---- Builders ------------------------------------------------------------- */

JPT_EXPORT int jpt_state_new(int kind, jpt_state **out)
{
    jpt__fail_clear();
    if (out == NULL)
        return jpt__fail(JPT_ERR_INVALID, "jpt_state_new: out is NULL");
    *out = NULL;
    if (kind != JPT_STATE_RUNNING && kind != JPT_STATE_WAITING &&
        kind != JPT_STATE_STOPPED)
        return jpt__fail(JPT_ERR_INVALID, "jpt_state_new: kind %d is not a JPT_STATE_* kind",
                         kind);
    *out = jpt__state_alloc(kind);
    return *out != NULL ? JPT_OK : jpt__fail(JPT_ERR_NOMEM, "jpt_state_new: out of memory");
}

/* Every builder starts here: a shared state is immutable, and content ends
 * when the error is set (the error message is derived from it). */
static int check_mutable(jpt_state *s, bool adds_content)
{
    jpt__err_clear(&s->err);
    if (atomic_load_explicit(&s->shared, memory_order_relaxed))
        return jpt__err(&s->err, JPT_ERR_STATE,
                        "the state is shared and can no longer change");
    if (adds_content && s->is_error)
        return jpt__err(&s->err, JPT_ERR_STATE,
                        "the error is set; content can no longer be added");
    return JPT_OK;
}

static int push_or_report(jpt_state *s, jpt__block *b)
{
    int rc = jpt__state_push_block(s, b);

    if (rc < 0)
        return jpt__err(&s->err, rc, "out of memory adding a block");
    return JPT_OK;
}

int jpt__state_add_text(jpt_state *s, const char *text, size_t n)
{
    jpt__block b = {.type = JPT_BLOCK_TEXT};
    int rc = jpt__field_set(&b.f[JPT_FIELD_TEXT], text, n);

    return rc < 0 ? rc : jpt__state_push_block(s, &b);
}

JPT_EXPORT int jpt_state_add_text(jpt_state *s, const char *text)
{
    jpt__block b = {.type = JPT_BLOCK_TEXT};
    int rc;

    if (s == NULL)
        return JPT_ERR_INVALID;
    if ((rc = check_mutable(s, true)) < 0)
        return rc;
    if (text == NULL)
        return jpt__err(&s->err, JPT_ERR_INVALID, "text block: text is NULL");
    if (jpt__field_set(&b.f[JPT_FIELD_TEXT], text, strlen(text)) < 0)
        return jpt__err(&s->err, JPT_ERR_NOMEM, "out of memory adding a block");
    return push_or_report(s, &b);
}

/* Builders take JSON text; parsing it through the same block parser as tool
 * output keeps one definition of what a well-formed block is. */
static int add_block_from_json_value(jpt_state *s, json_t *j)
{
    char why[256];
    jpt__block b, pre;
    int rc = jpt__block_from_json(j, &b, &pre, why, sizeof(why));

    if (rc == JPT_ERR_NOMEM)
        return jpt__err(&s->err, rc, "out of memory adding a block");
    if (rc < 0)
        return jpt__err(&s->err, rc, "%s", why);
    bool has_pre = pre.type != 0;
    if (has_pre && (rc = push_or_report(s, &pre)) < 0) {
        jpt__block_clear(&b);
        return rc;
    }
    if ((rc = push_or_report(s, &b)) < 0 && has_pre)
        jpt__block_clear(&s->blocks[--s->nblocks]); /* leave the state as it was */
    return rc;
}

/* Sets obj[key] to the string `value` when it is not NULL; the caller has
 * checked it is UTF-8, so a failure is memory. */
static int set_optional_string(json_t *obj, const char *key, const char *value)
{
    if (value == NULL)
        return JPT_OK;
    return json_object_set_new(obj, key, json_string(value)) < 0 ? JPT_ERR_NOMEM
                                                                 : JPT_OK;
}

/* Parses builder-supplied JSON text into obj[key]. */
static int set_json_member(jpt_state *s, json_t *obj, const char *key,
                           const char *json, const char *what)
{
    json_error_t jerr;

    if (json == NULL)
        return JPT_OK;
    json_t *v;
    int rc = jpt__json_load(json, strlen(json), JSON_DECODE_ANY | JSON_ALLOW_NUL, &v,
                            &jerr);
    if (rc == JPT_ERR_NOMEM)
        return jpt__err(&s->err, rc, "out of memory adding a block");
    if (rc < 0)
        return jpt__err(&s->err, rc, "%s is not JSON: %s", what, jerr.text);
    if (json_object_set_new(obj, key, v) < 0)
        return jpt__err(&s->err, JPT_ERR_NOMEM, "out of memory adding a block");
    return JPT_OK;
}

static int check_utf8(jpt_state *s, const char *const *strings, size_t n,
                      const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (strings[i] != NULL && !jpt__utf8_valid(strings[i], strlen(strings[i])))
            return jpt__err(&s->err, JPT_ERR_INVALID,
                            "%s: a string is not valid UTF-8", what);
    return JPT_OK;
}

JPT_EXPORT int jpt_state_add_resource(jpt_state *s, const jpt_resource *r)
{
    int rc;

    if (s == NULL)
        return JPT_ERR_INVALID;
    if ((rc = check_mutable(s, true)) < 0)
        return rc;
    if (r == NULL)
        return jpt__err(&s->err, JPT_ERR_INVALID, "resource: the struct is NULL");
    if ((rc = jpt__struct_check(r, r->size, sizeof(*r))) < 0)
        return jpt__err(&s->err, rc, rc == JPT_ERR_INVALID
                                         ? "resource: size is smaller than sizeof(jpt_resource)"
                                         : "resource: fields this library does not know are "
                                           "set");
    const char *strings[] = {r->uri, r->mime_type, r->text, r->blob,
                             r->formatted, r->name, r->title, r->description};
    if ((rc = check_utf8(s, strings, sizeof(strings) / sizeof(strings[0]),
                         "resource")) < 0)
        return rc;

    json_t *res = json_object();
    json_t *block = json_pack("{s:s, s:o}", "type", "resource", "resource", res);
    if (block == NULL)
        return jpt__err(&s->err, JPT_ERR_NOMEM, "out of memory adding a block");
    if (set_optional_string(res, "uri", r->uri) < 0 ||
        set_optional_string(res, "mimeType", r->mime_type) < 0 ||
        set_optional_string(res, "text", r->text) < 0 ||
        set_optional_string(res, "blob", r->blob) < 0 ||
        set_optional_string(res, "name", r->name) < 0 ||
        set_optional_string(res, "title", r->title) < 0 ||
        set_optional_string(res, "description", r->description) < 0 ||
        set_optional_string(block, "formatted", r->formatted) < 0)
        rc = jpt__err(&s->err, JPT_ERR_NOMEM, "out of memory adding a block");
    else if ((rc = set_json_member(s, block, "annotations", r->annotations_json,
                                   "resource annotations")) == JPT_OK)
        rc = add_block_from_json_value(s, block);
    json_decref(block);
    return rc;
}

JPT_EXPORT int jpt_state_add_question(jpt_state *s, const char *id,
                                      const char *text, const char *schema_json,
                                      const char *default_json)
{
    int rc;

    if (s == NULL)
        return JPT_ERR_INVALID;
    if ((rc = check_mutable(s, true)) < 0)
        return rc;
    if (id == NULL || text == NULL)
        return jpt__err(&s->err, JPT_ERR_INVALID, "question: id or text is NULL");
    const char *strings[] = {id, text};
    if ((rc = check_utf8(s, strings, 2, "question")) < 0)
        return rc;

    json_t *q = json_object();
    json_t *block = json_pack("{s:s, s:o}", "type", "question", "question", q);
    if (block == NULL)
        return jpt__err(&s->err, JPT_ERR_NOMEM, "out of memory adding a block");
    if (set_optional_string(q, "id", id) < 0 ||
        set_optional_string(q, "text", text) < 0)
        rc = jpt__err(&s->err, JPT_ERR_NOMEM, "out of memory adding a block");
    else if ((rc = set_json_member(s, q, "schema", schema_json,
                                   "question schema")) == JPT_OK &&
             (rc = set_json_member(s, q, "default", default_json,
                                   "question default")) == JPT_OK)
        rc = add_block_from_json_value(s, block);
    json_decref(block);
    return rc;
}

JPT_EXPORT int jpt_state_add_block_json(jpt_state *s, const char *block_json)
{
    json_error_t jerr;
    int rc;

    if (s == NULL)
        return JPT_ERR_INVALID;
    if ((rc = check_mutable(s, true)) < 0)
        return rc;
    if (block_json == NULL)
        return jpt__err(&s->err, JPT_ERR_INVALID, "block: JSON is NULL");
    json_t *block;
    rc = jpt__json_load(block_json, strlen(block_json), JSON_ALLOW_NUL, &block,
                        &jerr);
    if (rc == JPT_ERR_NOMEM)
        return jpt__err(&s->err, rc, "out of memory adding a block");
    if (rc < 0)
        return jpt__err(&s->err, rc, "block is not a JSON object: %s", jerr.text);
    rc = add_block_from_json_value(s, block);
    json_decref(block);
    return rc;
}

JPT_EXPORT int jpt_state_set_structured_content(jpt_state *s, const char *json)
{
    json_error_t jerr;
    char *text;
    int rc;

    if (s == NULL)
        return JPT_ERR_INVALID;
    if ((rc = check_mutable(s, false)) < 0)
        return rc;
    if (json == NULL)
        return jpt__err(&s->err, JPT_ERR_INVALID, "structuredContent is NULL");
    json_t *v;
    rc = jpt__json_load(json, strlen(json), JSON_DECODE_ANY | JSON_ALLOW_NUL, &v, &jerr);
    if (rc == JPT_ERR_NOMEM)
        return jpt__err(&s->err, rc, "out of memory setting structuredContent");
    if (rc < 0)
        return jpt__err(&s->err, rc, "structuredContent is not JSON: %s", jerr.text);
    rc = jpt__json_dump(v, JSON_COMPACT | JSON_ENCODE_ANY, &text);
    json_decref(v);
    if (rc < 0)
        return jpt__err(&s->err, rc, "out of memory setting structuredContent");
    jpt__free(s->structured);
    s->structured = text;
    return JPT_OK;
}

JPT_EXPORT int jpt_state_set_error(jpt_state *s, const char *message,
                                   int transient)
{
    int rc;

    if (s == NULL)
        return JPT_ERR_INVALID;
    if ((rc = check_mutable(s, true)) < 0)
        return rc;
    if (message == NULL)
        return jpt__err(&s->err, JPT_ERR_INVALID, "error message is NULL");
    if (message[0] != '\0') {
        jpt__block b = {.type = JPT_BLOCK_TEXT};
        if (jpt__field_set(&b.f[JPT_FIELD_TEXT], message, strlen(message)) < 0)
            return jpt__err(&s->err, JPT_ERR_NOMEM, "out of memory setting the error");
        if ((rc = push_or_report(s, &b)) < 0)
            return rc;
    }
    if (jpt__state_set_error_from_blocks(s, transient != 0) < 0) {
        if (message[0] != '\0')
            jpt__block_clear(&s->blocks[--s->nblocks]);
        return jpt__err(&s->err, JPT_ERR_NOMEM, "out of memory setting the error");
    }
    return JPT_OK;
}

JPT_EXPORT int jpt_state_add_error_trace(jpt_state *s, const char *line)
{
    int rc;

    if (s == NULL)
        return JPT_ERR_INVALID;
    if ((rc = check_mutable(s, false)) < 0)
        return rc;
    if (!s->is_error)
        return jpt__err(&s->err, JPT_ERR_STATE, "no error is set to add a trace to");
    if (line == NULL)
        return jpt__err(&s->err, JPT_ERR_INVALID, "trace line is NULL");
    if (jpt__strv_push(&s->trace, line, strlen(line)) < 0)
        return jpt__err(&s->err, JPT_ERR_NOMEM, "out of memory adding a trace line");
    return JPT_OK;
}

const char *jpt__state_kind_name(int kind)
{
    return kind == JPT_STATE_RUNNING   ? "running"
           : kind == JPT_STATE_WAITING ? "waiting"
                                       : "stopped";
}

const jpt__block *jpt__state_blocks(const jpt_state *s, size_t *n)
{
    *n = s->nblocks;
    return s->blocks;
}

bool jpt__state_is_raw(const jpt_state *s)
{
    return s->raw;
}

bool jpt__state_is_transient(const jpt_state *s)
{
    return s->transient;
}

const jpt__strv *jpt__state_trace(const jpt_state *s)
{
    return &s->trace;
}

int jpt__state_add_trace(jpt_state *s, const char *line)
{
    return jpt__strv_push(&s->trace, line, strlen(line));
}
