/* The example VFS tools' shared part; see tool-util.h. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool-util.h"

/* For messages to stderr, where a failure goes when the host cannot hear. */
static const char *program = "vfs-tool";

_Noreturn static void die(jpt_vfs_tool *t, const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", program, what,
            t != NULL ? jpt_vfs_tool_errmsg(t) : "out of memory");
    jpt_vfs_tool_free(t);
    exit(1);
}

void vt_out_of_memory(void)
{
    fprintf(stderr, "%s: out of memory\n", program);
    exit(1);
}

void *vt_xmalloc(size_t n)
{
    void *p = malloc(n != 0 ? n : 1);
    if (p == NULL)
        vt_out_of_memory();
    return p;
}

void *vt_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n != 0 ? n : 1);
    if (q == NULL)
        vt_out_of_memory();
    return q;
}

char *vt_xstrdup(const char *s)
{
    char *p = strdup(s);
    if (p == NULL)
        vt_out_of_memory();
    return p;
}

/* ---- Text ----------------------------------------------------------------------------- */

void vt_append(vt_text *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->p = vt_xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void vt_printf(vt_text *b, const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;

    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        vt_out_of_memory();
    vt_append(b, s, (size_t)n);
    free(s);
}

const char *vt_str(vt_text *b)
{
    return b->p != NULL ? b->p : "";
}

void vt_text_free(vt_text *b)
{
    free(b->p);
    *b = (vt_text){0};
}

/* ---- The end of a run ----------------------------------------------------------------- */

void vt_fail(jpt_vfs_tool *t, const char *fmt, ...)
{
    va_list ap;
    char *message = NULL;

    va_start(ap, fmt);
    int n = vasprintf(&message, fmt, ap);
    va_end(ap);
    if (n < 0)
        vt_out_of_memory();
    if (jpt_vfs_tool_error(t, message, NULL, 0, 0) != JPT_OK)
        die(t, "sending the error");
    free(message);
    jpt_vfs_tool_free(t);
    exit(0);
}

void vt_fail_host(jpt_vfs_tool *t)
{
    vt_fail(t, "%s", jpt_vfs_tool_errmsg(t));
}

void vt_done_text(jpt_vfs_tool *t, const char *text)
{
    if (jpt_vfs_tool_result_text(t, text) != JPT_OK)
        die(t, "sending the result");
    jpt_vfs_tool_free(t);
    exit(0);
}

void vt_done_blocks(jpt_vfs_tool *t, json_t *blocks)
{
    char *text = json_dumps(blocks, JSON_COMPACT);

    if (text == NULL)
        vt_out_of_memory();
    if (jpt_vfs_tool_result(t, text) != JPT_OK)
        die(t, "sending the result");
    free(text);
    json_decref(blocks);
    jpt_vfs_tool_free(t);
    exit(0);
}

/* ---- Arguments -------------------------------------------------------------------------- */

jpt_vfs_tool *vt_connect(const char *name, const char *const *known, json_t **args)
{
    jpt_vfs_tool *t = NULL;
    json_error_t error;

    program = name;
    if (jpt_vfs_tool_connect(&t) != JPT_OK)
        die(t, "connecting to the host");
    /* The host sends an object; another host might send anything. */
    json_t *a = json_loads(jpt_vfs_tool_arguments(t), JSON_DECODE_ANY, &error);
    if (!json_is_object(a))
        vt_fail(t, "the arguments must be a JSON object, not %s", jpt_vfs_tool_arguments(t));
    const char *key;
    json_t *value;
    json_object_foreach(a, key, value) {
        size_t i = 0;
        while (known[i] != NULL && strcmp(known[i], key) != 0)
            i++;
        if (known[i] == NULL) {
            vt_text names = {0};
            for (i = 0; known[i] != NULL; i++)
                vt_printf(&names, "%s'%s'", i > 0 ? ", " : "", known[i]);
            vt_fail(t, "unknown argument '%s': %s takes %s", key, name, vt_str(&names));
        }
    }
    *args = a;
    return t;
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number with a fraction";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "a JSON value";
}

const char *vt_arg_string(jpt_vfs_tool *t, const json_t *args, const char *name, bool required,
                          bool nonempty)
{
    const json_t *v = json_object_get(args, name);

    if (v == NULL) {
        if (required)
            vt_fail(t, "argument '%s' is required", name);
        return NULL;
    }
    if (!json_is_string(v))
        vt_fail(t, "argument '%s' must be a string, not %s", name, type_name(v));
    if (nonempty && json_string_length(v) == 0)
        vt_fail(t, "argument '%s' must not be empty", name);
    if (strlen(json_string_value(v)) != json_string_length(v))
        vt_fail(t, "argument '%s' must not hold a NUL character", name);
    return json_string_value(v);
}

bool vt_arg_bool(jpt_vfs_tool *t, const json_t *args, const char *name, bool dflt)
{
    const json_t *v = json_object_get(args, name);

    if (v == NULL)
        return dflt;
    if (!json_is_boolean(v))
        vt_fail(t, "argument '%s' must be true or false, not %s", name, type_name(v));
    return json_is_true(v);
}

uint64_t vt_arg_uint(jpt_vfs_tool *t, const json_t *args, const char *name, uint64_t dflt,
                     uint64_t min, uint64_t max)
{
    const json_t *v = json_object_get(args, name);

    if (v == NULL)
        return dflt;
    if (!json_is_integer(v))
        vt_fail(t, "argument '%s' must be a whole number from %llu to %llu, not %s", name,
                (unsigned long long)min, (unsigned long long)max, type_name(v));
    json_int_t n = json_integer_value(v);
    if (n < 0 || (uint64_t)n < min || (uint64_t)n > max)
        vt_fail(t, "argument '%s' must be a whole number from %llu to %llu, not %lld", name,
                (unsigned long long)min, (unsigned long long)max, (long long)n);
    return (uint64_t)n;
}

const char **vt_arg_strings(jpt_vfs_tool *t, const json_t *args, const char *name, size_t *n)
{
    const json_t *v = json_object_get(args, name), *e;
    size_t i;

    *n = 0;
    if (v == NULL)
        return NULL;
    if (!json_is_array(v))
        vt_fail(t, "argument '%s' must be an array of strings, not %s", name, type_name(v));
    const char **list = vt_xmalloc((json_array_size(v) + 1) * sizeof(*list));
    json_array_foreach(v, i, e) {
        if (!json_is_string(e) || json_string_length(e) == 0)
            vt_fail(t, "argument '%s': element %zu must be a non-empty string", name, i);
        list[i] = json_string_value(e);
    }
    list[json_array_size(v)] = NULL;
    *n = json_array_size(v);
    return list;
}

char *vt_normal_path(jpt_vfs_tool *t, const char *arg, const char *path)
{
    vt_text out = {0};
    const char *p = path;

    if (path[0] == '/')
        vt_fail(t, "argument '%s': '%s' is absolute: paths are relative to the workspace root",
                arg, path);
    while (*p != '\0') {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            vt_fail(t, "argument '%s': '%s' has a '..' name: paths stay inside the workspace",
                    arg, path);
        if (n > 0 && !(n == 1 && p[0] == '.')) {
            if (out.len > 0)
                vt_append(&out, "/", 1);
            vt_append(&out, p, n);
        }
        p += n;
        if (*p == '/')
            p++;
    }
    if (out.len == 0)
        vt_append(&out, ".", 1);
    return out.p;
}
