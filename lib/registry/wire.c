/* The shapes tool calls arrive in and results leave in: jptool's own, and
 * those of OpenAI (Chat Completions and Responses), Anthropic and Gemini,
 * so that a host submits what its provider sent as it came and sends the
 * results back as the provider takes them.
 *
 * Reading is tolerant where one call's arguments would otherwise sink the
 * whole message: a NUL character in a name, or a number jansson cannot
 * hold, fails that call with a reason that names the argument. */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/tools.h"

/* ---- Loading what jansson cannot hold ------------------------------------------ */

/* A number jansson cannot hold becomes a string holding this prefix and the
 * number's text; a name holding a NUL (jansson refuses those even with
 * JSON_ALLOW_NUL) becomes this prefix and a count. Both are then found in
 * the call's arguments and fail it. The NUL in the first makes it a string
 * no call could take anyway. */
static const char number_mark[] = "\\u0000jptool:number:";
static const char number_mark_decoded[] = "\0jptool:number:";
static const char nul_key_mark[] = "jptool\\u0001nul-name\\u0001";
static const char nul_key_mark_decoded[] = "jptool\001nul-name\001";

/* Whether jansson refuses number token p[0..n) as out of range: it reads
 * integers with strtoll and the others with strtod in the C locale's
 * notation ("too big integer", "real number overflow"). */
static int number_overflows(const char *p, size_t n, bool *overflows)
{
    char *text = jpt__memdup0(p, n);
    bool real = memchr(p, '.', n) != NULL || memchr(p, 'e', n) != NULL ||
                memchr(p, 'E', n) != NULL;

    if (text == NULL)
        return JPT_ERR_NOMEM;
    for (char *c = text; *c != '\0'; c++)
        if (*c == '.')
            *c = localeconv()->decimal_point[0];
    errno = 0;
    if (real) {
        double d = strtod(text, NULL);
        *overflows = (d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE;
    } else {
        (void)strtoll(text, NULL, 10);
        *overflows = errno == ERANGE;
    }
    jpt__free(text);
    return JPT_OK;
}

/* After the string that ended before `i`, is a ':' next (it was a name)? */
static bool is_name(const char *p, size_t i, size_t n)
{
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    return i < n && p[i] == ':';
}

/* A copy of p[0..n) with what jansson cannot load marked (see above), in
 * `out`; nothing is appended when there is nothing to mark. The text need
 * not be valid JSON: whatever else is wrong, jansson says afterwards. */
static int mark_unloadable(const char *p, size_t n, jpt__buf *out)
{
    size_t i = 0, copied = 0, names = 0;
    int rc = JPT_OK;

    while (rc == JPT_OK && i < n) {
        size_t start = i;
        if (p[i] == '"') {
            bool nul = false;
            for (i++; i < n && p[i] != '"'; i++)
                if (p[i] == '\\' && i + 1 < n) {
                    nul = nul || (i + 5 < n && memcmp(p + i + 1, "u0000", 5) == 0);
                    i++;
                }
            i = i < n ? i + 1 : n;
            if (nul && is_name(p, i, n) &&
                (rc = jpt__buf_append(out, p + copied, start - copied)) == JPT_OK) {
                rc = jpt__buf_printf(out, "\"%s%zu\"", nul_key_mark, names++);
                copied = i;
            }
        } else if (p[i] == '-' || (p[i] >= '0' && p[i] <= '9')) {
            bool overflows = false;
            while (i < n && p[i] != '\0' && strchr("0123456789+-.eE", p[i]) != NULL)
                i++;
            if ((rc = number_overflows(p + start, i - start, &overflows)) == JPT_OK &&
                overflows && (rc = jpt__buf_append(out, p + copied, start - copied)) == JPT_OK &&
                (rc = jpt__buf_printf(out, "\"%s", number_mark)) == JPT_OK &&
                (rc = jpt__buf_append(out, p + start, i - start)) == JPT_OK) {
                rc = jpt__buf_putc(out, '"');
                copied = i;
            }
        } else
            i++;
    }
    if (rc == JPT_OK && copied > 0)
        rc = jpt__buf_append(out, p + copied, n - copied);
    return rc;
}

/* jpt__json_load() that keeps NULs in strings and, where jansson fails on
 * a number or a name it cannot hold, loads the text with those marked. */
static int load_tolerant(const char *p, size_t n, json_t **out, json_error_t *jerr)
{
    int rc = jpt__json_load(p, n, JSON_ALLOW_NUL | JSON_DECODE_ANY, out, jerr);
    jpt__buf marked = JPT__BUF_INIT;

    if (rc != JPT_ERR_INVALID)
        return rc;
    if ((rc = mark_unloadable(p, n, &marked)) == JPT_OK)
        rc = marked.len > 0 ? jpt__json_load(marked.data, marked.len,
                                             JSON_ALLOW_NUL | JSON_DECODE_ANY, out, jerr)
                            : JPT_ERR_INVALID;
    jpt__buf_free(&marked);
    return rc;
}

/* ---- What a call's arguments may not hold ---------------------------------------- */

static bool starts_with(const char *s, size_t n, const char *prefix, size_t plen)
{
    return n >= plen && memcmp(s, prefix, plen) == 0;
}

/* Appends "/token" to the JSON Pointer in `path`; returns the length to
 * restore. */
static size_t path_push(jpt__buf *path, const char *token, int *rc)
{
    size_t mark = path->len;

    if (*rc == JPT_OK)
        *rc = jpt__buf_putc(path, '/');
    for (const char *c = token; *rc == JPT_OK && *c != '\0'; c++)
        *rc = *c == '~' ? jpt__buf_puts(path, "~0")
              : *c == '/' ? jpt__buf_puts(path, "~1")
                          : jpt__buf_putc(path, *c);
    return mark;
}

static void path_pop(jpt__buf *path, size_t mark)
{
    path->len = mark;
    if (path->data != NULL)
        path->data[mark] = '\0';
}

/* The first value in `v` a tool cannot be given, described in `why`: a
 * marked number, a marked name (jansson holds neither). */
static int find_unusable(const json_t *v, jpt__buf *path, jpt__buf *why)
{
    const char *where = path->len > 0 ? path->data : "the top level";
    int rc = JPT_OK;

    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        size_t plen = sizeof(number_mark_decoded) - 1;
        if (starts_with(s, n, number_mark_decoded, plen))
            return jpt__buf_printf(why, "the argument at %s is a number out of range: %.*s",
                                   where, (int)(n - plen), s + plen);
        /* A NUL in a string is a character like any other (state.h, the
         * one rule): what cannot carry one (a command line) says so. */
        return JPT_OK;
    }
    const char *key;
    const json_t *member;
    size_t i;
    json_object_foreach((json_t *)v, key, member) {
        if (starts_with(key, strlen(key), nul_key_mark_decoded,
                        sizeof(nul_key_mark_decoded) - 1))
            return jpt__buf_printf(why, "an argument name at %s holds a NUL character "
                                        "(U+0000)", where);
        size_t mark = path_push(path, key, &rc);
        if (rc == JPT_OK)
            rc = find_unusable(member, path, why);
        path_pop(path, mark);
        if (rc < 0 || why->len > 0)
            return rc;
    }
    json_array_foreach(v, i, member) {
        char token[32];
        snprintf(token, sizeof(token), "%zu", i);
        size_t mark = path_push(path, token, &rc);
        if (rc == JPT_OK)
            rc = find_unusable(member, path, why);
        path_pop(path, mark);
        if (rc < 0 || why->len > 0)
            return rc;
    }
    return rc;
}

/* Whether `schema`, a part of `root`, lets a value be null. Its $refs
 * point into `root`, so it is checked as a part of it: through a $ref,
 * from a copy of `root` without the keywords that would judge the null
 * themselves. */
static int takes_null(const json_t *root, const json_t *schema, bool *yes)
{
    static const char *const judging[] = {"type", "enum", "const", "allOf", "anyOf", "oneOf",
                                          "not",  "if",   "then",  "else",  "$ref"};
    json_t *wrapper = json_copy((json_t *)root);
    json_t *null = json_null();
    int rc = JPT_ERR_NOMEM;

    *yes = false;
    if (wrapper == NULL)
        return rc;
    for (size_t i = 0; i < sizeof(judging) / sizeof(*judging); i++)
        json_object_del(wrapper, judging[i]);
    if (json_object_set(wrapper, "$jptool:part", (json_t *)schema) == 0 &&
        json_object_set_new(wrapper, "$ref", json_string("#/$jptool:part")) == 0)
        rc = jpt__schema_check_json(wrapper, null, NULL);
    json_decref(wrapper);
    *yes = rc == JPT_OK;
    /* A part that cannot be checked alone takes no null: the call's check
     * against the whole schema says the rest. */
    return rc == JPT_ERR_NOMEM ? rc : JPT_OK;
}

/* `s`, or the schema its local $refs lead to (JPT_DIALECT_STRICT lists
 * them inlined, so the model's nulls are inside their targets). */
static const json_t *resolved(const json_t *root, const json_t *s)
{
    for (int hops = 0; hops < 32; hops++) {
        const json_t *ref = json_object_get(s, "$ref");
        const json_t *target = json_is_string(ref)
                                   ? jpt__schema_ref_target(root, json_string_value(ref))
                                   : NULL;
        if (target == NULL)
            return s;
        s = target;
    }
    return s;
}

/* OpenAI's strict mode has the model send every property, null for those
 * it leaves out (JPT_DIALECT_STRICT makes the optional ones nullable): a
 * null where `schema` does not take one means absent, and goes. `root`
 * is the tool's schema, which $refs point into. */
static int drop_nulls(const json_t *root, const json_t *schema, json_t *obj)
{
    const json_t *props = json_object_get(resolved(root, schema), "properties");
    const char *key;
    json_t *member;
    void *tmp;
    int rc = JPT_OK;

    json_object_foreach_safe(obj, tmp, key, member) {
        const json_t *sub = resolved(root, json_object_get(props, key));
        const json_t *items = resolved(root, json_object_get(sub, "items"));
        bool keep = false;
        if (json_is_null(member)) {
            if (sub != NULL && (rc = takes_null(root, sub, &keep)) < 0)
                return rc;
            if (!keep)
                json_object_del(obj, key);
        } else if (json_is_object(member) && json_is_object(sub)) {
            if ((rc = drop_nulls(root, sub, member)) < 0)
                return rc;
        } else if (json_is_array(member) && json_is_object(items)) {
            json_t *item;
            size_t i;
            json_array_foreach(member, i, item)
                if (json_is_object(item) && (rc = drop_nulls(root, items, item)) < 0)
                    return rc;
        }
    }
    return rc;
}

/* The schema the arguments of a call to `name` answer to (the await tool's
 * too), or NULL for an unknown tool. */
static const json_t *call_schema(jpt_registry *r, const char *name)
{
    const jpt__tool *t = jpt__tool_find(r, name);

    return t != NULL ? t->parameters : NULL;
}

/* ---- Reading one call -------------------------------------------------------------- */

/* Sets the arguments of `wc` from `value`, what the shape calls `what`: an
 * object, a JSON string holding one (OpenAI sends text), or nothing. What
 * cannot be used becomes the call's problem. */
static int take_arguments(jpt_registry *r, jpt__wire_call *wc, const json_t *value,
                          const char *what)
{
    jpt__buf why = JPT__BUF_INIT, path = JPT__BUF_INIT;
    json_error_t jerr;
    json_t *args = NULL;
    int rc = JPT_OK;

    if (value == NULL || json_is_null(value) ||
        (json_is_string(value) && json_string_length(value) == 0))
        /* An empty string is what some providers send for no arguments. */
        args = json_object();
    else if (json_is_object(value))
        args = json_incref((json_t *)value);
    else if (json_is_string(value)) {
        rc = load_tolerant(json_string_value(value), json_string_length(value), &args, &jerr);
        if (rc == JPT_ERR_INVALID)
            rc = jpt__buf_printf(&why, "the %s string is not a JSON object: %s", what,
                                 jerr.text);
        else if (rc == JPT_OK && !json_is_object(args))
            rc = jpt__buf_printf(&why, "the %s string is not a JSON object", what);
    } else
        rc = jpt__buf_printf(&why, "`%s` is %s, not an object or a JSON string holding one",
                             what, jpt__json_type_phrase(value));
    if (rc == JPT_OK && args == NULL && why.len == 0)
        rc = JPT_ERR_NOMEM;
    if (rc == JPT_OK && why.len == 0)
        rc = find_unusable(args, &path, &why);
    if (rc == JPT_OK && why.len == 0) {
        rc = drop_nulls(call_schema(r, wc->name), call_schema(r, wc->name), args);
    }
    if (rc == JPT_OK && why.len > 0 && (wc->problem = jpt__buf_take(&why)) == NULL)
        rc = JPT_ERR_NOMEM;
    if (rc == JPT_OK && wc->problem == NULL)
        wc->arguments = json_incref(args);
    json_decref(args);
    jpt__buf_free(&why);
    jpt__buf_free(&path);
    return rc;
}

/* A string field of a call: present, a string, without NUL. */
static const char *text_field(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);

    if (!json_is_string(v) || memchr(json_string_value(v), '\0', json_string_length(v)))
        return NULL;
    return json_string_value(v);
}

static int refuse(jpt_registry *r, size_t index, const char *shape, const char *fields)
{
    return jpt__err(&r->err, JPT_ERR_INVALID,
                    "submit: call %zu must be %s with string %s (without NUL characters)",
                    index, shape, fields);
}

/* `id` and `name` for a call of `dialect`; NULL id: a Gemini call without
 * one, named "<name>#<index>". */
static int take_names(jpt__wire_call *wc, int dialect, const char *id, const char *name,
                      size_t index)
{
    jpt__buf made = JPT__BUF_INIT;

    wc->dialect = dialect;
    wc->id_made = id == NULL;
    if (id != NULL)
        wc->id = jpt__strdup(id);
    else if (jpt__buf_printf(&made, "%s#%zu", name, index) == JPT_OK)
        wc->id = jpt__buf_take(&made);
    wc->name = jpt__strdup(name);
    jpt__buf_free(&made);
    return wc->id != NULL && wc->name != NULL ? JPT_OK : JPT_ERR_NOMEM;
}

/* Gemini's parts that are not calls: what the model said or thought. */
static bool is_other_gemini_part(const json_t *c)
{
    static const char *const keys[] = {"text", "thought", "thoughtSignature", "inlineData",
                                       "fileData", "executableCode", "codeExecutionResult"};

    if (json_object_get(c, "id") != NULL || json_object_get(c, "name") != NULL ||
        json_object_get(c, "arguments") != NULL)
        return false;
    for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
        if (json_object_get(c, keys[i]) != NULL)
            return true;
    return false;
}

/* Reads element `index`: 1 and `wc` filled for a call, 0 for a block or
 * item that is not one (text, thinking, reasoning…), or an error. */
static int read_call(jpt_registry *r, const json_t *c, size_t index, jpt__wire_call *wc)
{
    const char *type = text_field(c, "type");
    const json_t *gemini = json_object_get(c, "functionCall");
    const json_t *fn = json_object_get(c, "function");
    const char *id = NULL, *name = NULL, *what = "arguments";
    const json_t *value;
    int dialect, rc;

    if (!json_is_object(c))
        return refuse(r, index, "an object", "\"id\" and \"name\"");
    if (gemini == NULL && type == NULL && json_object_get(c, "args") != NULL &&
        json_object_get(c, "arguments") == NULL)
        gemini = c; /* a bare FunctionCall */
    if (json_is_object(gemini)) {
        dialect = JPT_DIALECT_GEMINI;
        id = text_field(gemini, "id");
        value = json_object_get(gemini, "args");
        what = "args";
        if ((name = text_field(gemini, "name")) == NULL)
            return refuse(r, index, "a Gemini functionCall", "\"name\"");
    } else if (type == NULL && is_other_gemini_part(c)) {
        return 0;
    } else if (type == NULL) {
        dialect = JPT__DIALECT_OWN;
        value = json_object_get(c, "arguments");
        if ((id = text_field(c, "id")) == NULL || (name = text_field(c, "name")) == NULL)
            return refuse(r, index, "an object", "\"id\" and \"name\"");
    } else if (strcmp(type, "function") == 0) {
        dialect = JPT_DIALECT_OPENAI;
        value = json_object_get(fn, "arguments");
        if ((id = text_field(c, "id")) == NULL || (name = text_field(fn, "name")) == NULL)
            return refuse(r, index, "an OpenAI tool call", "\"id\" and \"function\".\"name\"");
    } else if (strcmp(type, "function_call") == 0) {
        dialect = JPT_DIALECT_OPENAI_RESPONSES;
        value = json_object_get(c, "arguments");
        if ((id = text_field(c, "call_id")) == NULL || (name = text_field(c, "name")) == NULL)
            return refuse(r, index, "an OpenAI function_call", "\"call_id\" and \"name\"");
    } else if (strcmp(type, "tool_use") == 0) {
        dialect = JPT_DIALECT_ANTHROPIC;
        value = json_object_get(c, "input");
        what = "input";
        if ((id = text_field(c, "id")) == NULL || (name = text_field(c, "name")) == NULL)
            return refuse(r, index, "an Anthropic tool_use block", "\"id\" and \"name\"");
    } else
        return 0;
    if ((rc = take_names(wc, dialect, id, name, index)) < 0 ||
        (rc = take_arguments(r, wc, value, what)) < 0)
        return rc;
    return 1;
}

void jpt__wire_free(jpt__wire_call *calls, size_t n)
{
    for (size_t i = 0; calls != NULL && i < n; i++) {
        jpt__free(calls[i].id);
        jpt__free(calls[i].name);
        json_decref(calls[i].arguments);
        jpt__free(calls[i].problem);
    }
    jpt__free(calls);
}

int jpt__wire_read(jpt_registry *r, const char *text, jpt__wire_call **out, size_t *nout)
{
    json_error_t jerr;
    json_t *list = NULL;
    const json_t *c;
    size_t i, n = 0;
    int rc = load_tolerant(text, strlen(text), &list, &jerr);

    *out = NULL;
    *nout = 0;
    if (rc == JPT_ERR_NOMEM)
        return jpt__err(&r->err, rc, "out of memory reading the calls");
    if (rc < 0 || !json_is_array(list)) {
        json_decref(list);
        return jpt__err(&r->err, JPT_ERR_INVALID, "submit: the calls must be a JSON array%s%s",
                        rc < 0 ? ": " : "", rc < 0 ? jerr.text : "");
    }
    jpt__wire_call *calls = jpt__calloc(json_array_size(list) + 1, sizeof(*calls));
    rc = calls != NULL ? JPT_OK : JPT_ERR_NOMEM;
    json_array_foreach(list, i, c) {
        if (rc < 0)
            break;
        if ((rc = read_call(r, c, i, &calls[n])) > 0)
            n++;
    }
    json_decref(list);
    if (rc == JPT_ERR_NOMEM)
        jpt__err(&r->err, rc, "out of memory reading the calls");
    if (rc < 0) {
        jpt__wire_free(calls, calls != NULL ? n + 1 : 0);
        return rc;
    }
    *out = calls;
    *nout = n;
    return JPT_OK;
}

/* ---- Results ----------------------------------------------------------------------- */

json_t *jpt__wire_result(const jpt__wire_result_of *c, int dialect)
{
    /* Without even memory for "out of memory", the content is empty. */
    const char *content = c->content != NULL ? c->content : "";
    jpt__field f = {(char *)content, strlen(content)};
    json_t *text = jpt__json_from_field(&f);
    json_t *response;

    switch (dialect) {
    case JPT_DIALECT_OPENAI:
        return json_pack("{s:s, s:s, s:o}", "role", "tool", "tool_call_id", c->id, "content",
                         text);
    case JPT_DIALECT_OPENAI_RESPONSES:
        return json_pack("{s:s, s:s, s:o}", "type", "function_call_output", "call_id", c->id,
                         "output", text);
    case JPT_DIALECT_ANTHROPIC:
        /* Anthropic's content is optional, and an empty text is refused. */
        if (content[0] == '\0') {
            json_decref(text);
            return json_pack("{s:s, s:s, s:b}", "type", "tool_result", "tool_use_id", c->id,
                             "is_error", c->is_error);
        }
        return json_pack("{s:s, s:s, s:o, s:b}", "type", "tool_result", "tool_use_id", c->id,
                         "content", text, "is_error", c->is_error);
    case JPT_DIALECT_GEMINI:
        /* Gemini: "Use "output" key to specify function output and "error"
         * key to specify error details". */
        response = json_pack("{s:s, s:{s:o}}", "name", c->name, "response",
                             c->is_error ? "error" : "output", text);
        if (!c->id_made && json_object_set_new(response, "id", json_string(c->id)) < 0) {
            json_decref(response);
            return NULL;
        }
        return json_pack("{s:o}", "functionResponse", response);
    default:
        return json_pack("{s:s, s:o, s:b}", "id", c->id, "content", text, "is_error",
                         c->is_error);
    }
}
