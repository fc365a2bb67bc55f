/* The methods a VFS tool may call and their params (D11 "Protocol
 * methods"), checked and decoded into typed values, so that a method's
 * handler never looks at JSON. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vfs-proto.h"

static const char *const method_names[JPT__VFS_METHODS] = {
    [JPT__VFS_FS_READ] = "fs.read",         [JPT__VFS_FS_WRITE] = "fs.write",
    [JPT__VFS_FS_EXISTS] = "fs.exists",     [JPT__VFS_FS_LIST_DIR] = "fs.list_dir",
    [JPT__VFS_FS_METADATA] = "fs.metadata", [JPT__VFS_FS_DELETE] = "fs.delete",
    [JPT__VFS_FS_RENAME] = "fs.rename",     [JPT__VFS_FS_GREP] = "fs.grep",
    [JPT__VFS_HTTP_GET] = "http.get",       [JPT__VFS_HTTP_POST] = "http.post",
    [JPT__VFS_PROCESS_RUN] = "process.run",
};

int jpt__vfs_method_find(jpt__vfs_span name)
{
    for (int m = 0; m < JPT__VFS_METHODS; m++)
        if (jpt__json_key_is(name, method_names[m]))
            return m;
    return -1;
}

const char *jpt__vfs_method_name(int method)
{
    return method >= 0 && method < JPT__VFS_METHODS ? method_names[method] : "?";
}

/* ---- Fields ---------------------------------------------------------------- */

/* The params' members by name, looked up once. */
#define MAX_FIELDS 8

typedef struct fields {
    const char *names[MAX_FIELDS];
    jpt__vfs_span values[MAX_FIELDS]; /* p NULL: absent (or null) */
    size_t n;
    char *why;
    size_t why_len;
} fields;

static int bad(fields *f, const char *fmt, ...) JPT__PRINTF(2, 3);

static int bad(fields *f, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(f->why, f->why_len, fmt, ap);
    va_end(ap);
    return JPT_ERR_INVALID;
}

/* Finds the members `names` (NULL-terminated) in `params`. A member given
 * twice is refused: which one the policy checked and which one the backend
 * used must never differ. null counts as absent. */
static int collect(fields *f, jpt__vfs_span params, const char *const *names)
{
    jpt__json_iter it;
    jpt__vfs_span key, value;

    for (f->n = 0; names[f->n] != NULL; f->n++) {
        f->names[f->n] = names[f->n];
        f->values[f->n].p = NULL;
    }
    jpt__json_iter_init(&it, params);
    while (jpt__json_next_member(&it, &key, &value)) {
        for (size_t i = 0; i < f->n; i++) {
            if (!jpt__json_key_is(key, f->names[i]))
                continue;
            if (f->values[i].p != NULL)
                return bad(f, "'%s' is given twice", f->names[i]);
            if (jpt__json_type(value) != JPT__JSON_NULL)
                f->values[i] = value;
        }
    }
    return JPT_OK;
}

static jpt__vfs_span *field(fields *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->names[i], name) == 0)
            return &f->values[i];
    return NULL;
}

/* Decodes a string value in place and NUL-terminates it: the decoded text
 * is shorter than the literal, so the terminator lands within it. */
static char *decode_in_place(jpt__vfs_span v, size_t *len)
{
    char *out = (char *)v.p;
    *len = jpt__json_unescape(v, out);
    out[*len] = '\0';
    return out;
}

/* A string field without NUL characters; required or not. */
static int string_field(fields *f, const char *name, bool required, const char **out)
{
    jpt__vfs_span *v = field(f, name);
    size_t len;

    *out = NULL;
    if (v->p == NULL)
        return required ? bad(f, "'%s' is required", name) : JPT_OK;
    if (jpt__json_type(*v) != JPT__JSON_STRING)
        return bad(f, "'%s' must be a string", name);
    *out = decode_in_place(*v, &len);
    if (memchr(*out, '\0', len) != NULL)
        return bad(f, "'%s' must not contain a NUL character", name);
    return JPT_OK;
}

static int bool_field(fields *f, const char *name, bool *out)
{
    jpt__vfs_span *v = field(f, name);

    *out = false;
    if (v->p == NULL)
        return JPT_OK;
    int type = jpt__json_type(*v);
    if (type != JPT__JSON_TRUE && type != JPT__JSON_FALSE)
        return bad(f, "'%s' must be a boolean", name);
    *out = type == JPT__JSON_TRUE;
    return JPT_OK;
}

static int uint_field(fields *f, const char *name, uint64_t min, uint64_t max,
                      const char *range, uint64_t *out)
{
    jpt__vfs_span *v = field(f, name);

    *out = 0;
    if (v->p == NULL)
        return JPT_OK;
    if (jpt__json_uint(*v, max, out) && *out >= min)
        return JPT_OK;
    return bad(f, "'%s' must be %s", name, range);
}

/* ---- Methods ------------------------------------------------------------------ */

static int decode_path(fields *f, jpt__vfs_span params, jpt__vfs_params *out)
{
    static const char *const names[] = {"path", NULL};
    int rc = collect(f, params, names);
    return rc < 0 ? rc : string_field(f, "path", true, &out->path);
}

static int decode_rename(fields *f, jpt__vfs_span params, jpt__vfs_params *out)
{
    static const char *const names[] = {"from", "to", NULL};
    int rc = collect(f, params, names);
    if (rc == JPT_OK)
        rc = string_field(f, "from", true, &out->from);
    return rc < 0 ? rc : string_field(f, "to", true, &out->to);
}

/* D11 fs.write: `content` is text, or base64 when "encoding":"base64"; the
 * handler receives the bytes to write either way. */
static int decode_write(fields *f, jpt__vfs_span params, jpt__vfs_params *out)
{
    static const char *const names[] = {"path", "content", "encoding", NULL};
    const char *encoding;
    int rc;

    if ((rc = collect(f, params, names)) < 0 ||
        (rc = string_field(f, "path", true, &out->path)) < 0 ||
        (rc = string_field(f, "encoding", false, &encoding)) < 0)
        return rc;
    if (encoding != NULL && strcmp(encoding, "base64") != 0)
        return bad(f, "'%s' must be \"base64\" when given", "encoding");
    jpt__vfs_span *content = field(f, "content");
    if (content->p == NULL)
        return bad(f, "'%s' is required", "content");
    if (jpt__json_type(*content) != JPT__JSON_STRING)
        return bad(f, "'%s' must be a string", "content");
    char *text = decode_in_place(*content, &out->content_len);
    out->content = text;
    out->base64 = encoding != NULL;
    if (out->base64 &&
        !jpt__base64_decode(text, out->content_len, (unsigned char *)text, &out->content_len))
        return bad(f, "'%s' is not valid base64", "content");
    if (out->base64)
        text[out->content_len] = '\0';
    return JPT_OK;
}

/* An optional array of strings, each decoded in place, gathered in
 * `slots` (room for as many strings as the array has elements). */
static int strings_field(fields *f, const char *name, const char **slots,
                         const char *const **out, size_t *count)
{
    jpt__vfs_span *v = field(f, name), element;
    jpt__json_iter it;
    size_t len;

    *out = NULL;
    *count = 0;
    if (v->p == NULL)
        return JPT_OK;
    if (jpt__json_type(*v) != JPT__JSON_ARRAY)
        return bad(f, "'%s' must be an array of strings", name);
    jpt__json_iter_init(&it, *v);
    while (jpt__json_next_element(&it, &element)) {
        if (jpt__json_type(element) != JPT__JSON_STRING)
            return bad(f, "'%s' must be an array of strings", name);
        slots[*count] = decode_in_place(element, &len);
        if (memchr(slots[*count], '\0', len) != NULL)
            return bad(f, "'%s' must not contain a NUL character", name);
        (*count)++;
    }
    *out = slots;
    return JPT_OK;
}

static size_t array_length(jpt__vfs_span *v)
{
    jpt__json_iter it;
    jpt__vfs_span element;
    size_t n = 0;

    if (v->p == NULL || jpt__json_type(*v) != JPT__JSON_ARRAY)
        return 0;
    jpt__json_iter_init(&it, *v);
    while (jpt__json_next_element(&it, &element))
        n++;
    return n;
}

/* fs.grep: D11's pattern, paths, extensions and context, and issue 9's
 * case_insensitive, fixed_strings and max_matches. */
static int decode_grep(fields *f, jpt__vfs_span params, jpt__vfs_params *out, void **arrays)
{
    static const char *const names[] = {"pattern",          "paths",         "extensions",
                                        "context",          "case_insensitive",
                                        "fixed_strings",    "max_matches",   NULL};
    uint64_t context;
    int rc;

    if ((rc = collect(f, params, names)) < 0 ||
        (rc = string_field(f, "pattern", true, &out->pattern)) < 0 ||
        (rc = uint_field(f, "context", 0, JPT__VFS_GREP_MAX_CONTEXT,
                         "an integer from 0 to 10000", &context)) < 0 ||
        (rc = uint_field(f, "max_matches", 1, UINT64_MAX, "a positive integer",
                         &out->max_matches)) < 0 ||
        (rc = bool_field(f, "case_insensitive", &out->case_insensitive)) < 0 ||
        (rc = bool_field(f, "fixed_strings", &out->fixed_strings)) < 0)
        return rc;
    out->context = (unsigned)context;

    size_t npaths = array_length(field(f, "paths"));
    size_t next = array_length(field(f, "extensions"));
    const char **slots = jpt__calloc(npaths + next + 1, sizeof(*slots));
    if (slots == NULL)
        return JPT_ERR_NOMEM;
    *arrays = slots;
    if ((rc = strings_field(f, "paths", slots, &out->paths, &out->npaths)) < 0)
        return rc;
    return strings_field(f, "extensions", slots + npaths, &out->extensions,
                         &out->nextensions);
}

/* D11 process.run: the program, its arguments and the variables to
 * forward. */
static int decode_run(fields *f, jpt__vfs_span params, jpt__vfs_params *out, void **arrays)
{
    static const char *const names[] = {"program", "args", "envs", NULL};
    int rc;

    if ((rc = collect(f, params, names)) < 0 ||
        (rc = string_field(f, "program", true, &out->program)) < 0)
        return rc;
    if (out->program[0] == '\0')
        return bad(f, "'%s' must not be empty", "program");
    size_t nargs = array_length(field(f, "args"));
    size_t nenvs = array_length(field(f, "envs"));
    const char **slots = jpt__calloc(nargs + nenvs + 1, sizeof(*slots));
    if (slots == NULL)
        return JPT_ERR_NOMEM;
    *arrays = slots;
    if ((rc = strings_field(f, "args", slots, &out->args, &out->nargs)) < 0)
        return rc;
    return strings_field(f, "envs", slots + nargs, &out->envs, &out->nenvs);
}

/* D11 http.get and http.post: `url`, `headers` as [{"name", "value"}], and
 * http.post's `body`, text, or base64 with "encoding": "base64" (as
 * fs.write's content: a body of any bytes). */
static int decode_http(fields *f, jpt__vfs_span params, bool post, jpt__vfs_params *out,
                       void **arrays)
{
    static const char *const get_names[] = {"url", "headers", NULL};
    static const char *const post_names[] = {"url", "headers", "body", "encoding", NULL};
    int rc;

    if ((rc = collect(f, params, post ? post_names : get_names)) < 0 ||
        (rc = string_field(f, "url", true, &out->url)) < 0)
        return rc;
    if (post) {
        const char *encoding;
        if ((rc = string_field(f, "encoding", false, &encoding)) < 0)
            return rc;
        if (encoding != NULL && strcmp(encoding, "base64") != 0)
            return bad(f, "'%s' must be \"base64\" when given", "encoding");
        jpt__vfs_span *body = field(f, "body");
        if (body->p != NULL) {
            if (jpt__json_type(*body) != JPT__JSON_STRING)
                return bad(f, "'%s' must be a string", "body");
            char *text = decode_in_place(*body, &out->body_len);
            out->body = text;
            if (encoding != NULL &&
                !jpt__base64_decode(text, out->body_len, (unsigned char *)text, &out->body_len))
                return bad(f, "'%s' is not valid base64", "body");
        } else if (encoding != NULL)
            return bad(f, "'%s' is given without '%s'", "encoding", "body");
    }

    jpt__vfs_span *headers = field(f, "headers"), element, key, value;
    if (headers->p == NULL)
        return JPT_OK;
    if (jpt__json_type(*headers) != JPT__JSON_ARRAY)
        return bad(f, "'%s' must be an array of {\"name\", \"value\"} objects", "headers");
    size_t n = array_length(headers);
    const char **slots = jpt__calloc(2 * n + 1, sizeof(*slots));
    if (slots == NULL)
        return JPT_ERR_NOMEM;
    *arrays = slots;
    out->header_names = slots;
    out->header_values = slots + n;
    jpt__json_iter it, members;
    jpt__json_iter_init(&it, *headers);
    for (size_t i = 0; jpt__json_next_element(&it, &element); i++) {
        if (jpt__json_type(element) != JPT__JSON_OBJECT)
            return bad(f, "'headers[%zu]' must be a {\"name\", \"value\"} object", i);
        const char **name = &slots[i], **val = &slots[n + i];
        jpt__json_iter_init(&members, element);
        while (jpt__json_next_member(&members, &key, &value)) {
            bool is_name = jpt__json_key_is(key, "name");
            if (!is_name && !jpt__json_key_is(key, "value"))
                return bad(f, "'headers[%zu]' has a member other than 'name' and 'value'", i);
            const char **slot = is_name ? name : val;
            size_t len;
            if (*slot != NULL)
                return bad(f, "'headers[%zu].%s' is given twice", i, is_name ? "name" : "value");
            if (jpt__json_type(value) != JPT__JSON_STRING)
                return bad(f, "'headers[%zu].%s' must be a string", i, is_name ? "name" : "value");
            *slot = decode_in_place(value, &len);
            if (memchr(*slot, '\0', len) != NULL)
                return bad(f, "'headers[%zu].%s' must not contain a NUL character", i,
                           is_name ? "name" : "value");
        }
        if (*name == NULL || *val == NULL)
            return bad(f, "'headers[%zu]' needs both 'name' and 'value'", i);
        out->nheaders++;
    }
    return JPT_OK;
}

int jpt__vfs_params_decode(int method, jpt__vfs_span params, jpt__vfs_params *out,
                           void **arrays, char *why, size_t why_len)
{
    fields f = {.why = why, .why_len = why_len};

    memset(out, 0, sizeof(*out));
    *arrays = NULL;
    if (params.p == NULL)
        return bad(&f, "%s needs params", method_names[method]);
    if (jpt__json_type(params) != JPT__JSON_OBJECT)
        return bad(&f, "'%s' must be an object", "params");
    switch (method) {
    case JPT__VFS_FS_WRITE:
        return decode_write(&f, params, out);
    case JPT__VFS_FS_RENAME:
        return decode_rename(&f, params, out);
    case JPT__VFS_FS_GREP:
        return decode_grep(&f, params, out, arrays);
    case JPT__VFS_PROCESS_RUN:
        return decode_run(&f, params, out, arrays);
    case JPT__VFS_HTTP_GET:
    case JPT__VFS_HTTP_POST:
        return decode_http(&f, params, method == JPT__VFS_HTTP_POST, out, arrays);
    default:
        return decode_path(&f, params, out);
    }
}
