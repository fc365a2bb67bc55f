/* Content blocks as JSON: reading one block (RFD 058, MCP) with the checks
 * that decide whether it is well formed, and writing it back. Questions are
 * read in both RFD 058's form and JP's legacy form. */
#include <stdio.h>
#include <string.h>

#include "state/impl.h"

/* Records why a block is malformed and yields JPT_ERR_INVALID. */
#define WHY(...) (snprintf(why, why_len, __VA_ARGS__), JPT_ERR_INVALID)

/* Copies obj[key] into `f` if it is a string. A missing member is fine unless
 * `required`; a member of another type is malformed. */
static int take_string(const json_t *obj, const char *key, bool required,
                       jpt__field *f, const char *what, char *why,
                       size_t why_len)
{
    const json_t *v = json_object_get(obj, key);

    if (v == NULL)
        return required ? WHY("%s has no %s", what, key) : JPT_OK;
    if (!json_is_string(v))
        return WHY("%s: %s is %s, not a string", what, key,
                   jpt__json_type_phrase(v));
    return jpt__field_set(f, json_string_value(v), json_string_length(v));
}

static bool is_base64_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '+' || c == '/';
}

/* Checks standard base64 (RFC 4648 §4; line breaks tolerated, padding
 * optional) and gives the decoded size. */
static bool base64_decoded_size(const char *p, size_t n, size_t *size)
{
    size_t digits = 0, pad = 0;

    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\n' || c == '\r' || c == ' ' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        if (pad > 0 || !is_base64_char(c))
            return false;
        digits++;
    }
    if (pad > 2 || (pad > 0 && (digits + pad) % 4 != 0) || digits % 4 == 1)
        return false;
    *size = digits / 4 * 3 + (digits % 4 ? digits % 4 - 1 : 0);
    return true;
}

static int take_base64(const json_t *obj, const char *key, jpt__block *b,
                       const char *what, char *why, size_t why_len)
{
    char size_text[32];
    size_t size;
    int rc = take_string(obj, key, true, &b->f[JPT_FIELD_BLOB], what, why, why_len);

    if (rc < 0)
        return rc;
    if (!base64_decoded_size(b->f[JPT_FIELD_BLOB].ptr, b->f[JPT_FIELD_BLOB].len,
                             &size))
        return WHY("%s: %s is not valid base64", what, key);
    int n = snprintf(size_text, sizeof(size_text), "%zu", size);
    return jpt__field_set(&b->f[JPT_FIELD_BLOB_SIZE], size_text, (size_t)n);
}

/* MCP annotations sit on the block; RFD 065's Resource carries them inside
 * the resource. Either place is read. */
static int take_annotations(const json_t *block, const json_t *inner,
                            jpt__block *b, const char *what, char *why,
                            size_t why_len)
{
    const json_t *a = json_object_get(block, "annotations");

    if (a == NULL && inner != NULL)
        a = json_object_get(inner, "annotations");
    if (a == NULL)
        return JPT_OK;
    if (!json_is_object(a))
        return WHY("%s: annotations are %s, not an object", what,
                   jpt__json_type_phrase(a));
    return jpt__field_set_json(&b->f[JPT_FIELD_ANNOTATIONS], a);
}

/* JP's answer_type ("Boolean", "Text", {"Select": {"options": [...]}}) as
 * the JSON Schema RFD 058 uses for the same prompt. */
static int schema_from_answer_type(const json_t *at, jpt__field *f,
                                   const char *id, char *why, size_t why_len)
{
    json_t *schema = NULL;
    const char *name = json_string_value(at);

    if (name != NULL && strcmp(name, "Boolean") == 0)
        schema = json_pack("{s:s}", "type", "boolean");
    else if (name != NULL && strcmp(name, "Text") == 0)
        schema = json_pack("{s:s}", "type", "string");
    else if (json_is_object(at) && json_object_get(at, "Select") != NULL) {
        const json_t *options =
            json_object_get(json_object_get(at, "Select"), "options");
        if (!json_is_array(options))
            return WHY("question '%s': Select answer_type has no options array", id);
        bool all_strings = true;
        size_t i;
        const json_t *o;
        json_array_foreach(options, i, o) all_strings = all_strings && json_is_string(o);
        schema = all_strings ? json_pack("{s:s, s:O}", "type", "string", "enum", options)
                             : json_pack("{s:O}", "enum", options);
    } else
        return WHY("question '%s': unknown answer_type (expected \"Boolean\", "
                   "\"Text\" or {\"Select\": …})", id);
    if (schema == NULL)
        return JPT_ERR_NOMEM;
    int rc = jpt__field_set_json(f, schema);
    json_decref(schema);
    return rc;
}

int jpt__question_from_json(const json_t *q, jpt__block *out,
                            const char **pre_amble, char *why, size_t why_len)
{
    char what[96];
    int rc;

    memset(out, 0, sizeof(*out));
    out->type = JPT_BLOCK_QUESTION;
    *pre_amble = NULL;
    if (!json_is_object(q))
        return WHY("question is %s, not an object", jpt__json_type_phrase(q));
    if ((rc = take_string(q, "id", true, &out->f[JPT_FIELD_ID], "question",
                          why, why_len)) < 0)
        goto fail;
    if (out->f[JPT_FIELD_ID].len == 0) {
        rc = WHY("question has an empty id");
        goto fail;
    }
    snprintf(what, sizeof(what), "question '%.64s'", out->f[JPT_FIELD_ID].ptr);
    if ((rc = take_string(q, "text", true, &out->f[JPT_FIELD_TEXT], what, why,
                          why_len)) < 0)
        goto fail;

    const json_t *schema = json_object_get(q, "schema");
    const json_t *answer_type = json_object_get(q, "answer_type");
    if (schema != NULL) {
        if (!json_is_object(schema) && !json_is_boolean(schema)) {
            rc = WHY("%s: schema is %s, not an object or a boolean", what,
                     jpt__json_type_phrase(schema));
            goto fail;
        }
        /* A schema the checker would half-apply is refused here, where the
         * question is asked, not when it is answered (issue 16 §3). */
        char *found = NULL;
        if ((rc = jpt__schema_lint(schema, &found)) < 0) {
            if (rc != JPT_ERR_NOMEM)
                rc = WHY("%s: its schema %s: %s", what,
                         rc == JPT_ERR_UNSUPPORTED ? "uses what jptool does not check"
                                                   : "is malformed",
                         found);
            jpt__free(found);
            goto fail;
        }
        rc = jpt__field_set_json(&out->f[JPT_FIELD_SCHEMA], schema);
    } else if (answer_type != NULL)
        rc = schema_from_answer_type(answer_type, &out->f[JPT_FIELD_SCHEMA],
                                     out->f[JPT_FIELD_ID].ptr, why, why_len);
    if (rc < 0)
        goto fail;

    const json_t *def = json_object_get(q, "default");
    if (def != NULL &&
        (rc = jpt__field_set_json(&out->f[JPT_FIELD_DEFAULT], def)) < 0)
        goto fail;

    const json_t *pre = json_object_get(q, "pre_amble");
    if (pre != NULL && !json_is_null(pre)) {
        if (!json_is_string(pre)) {
            rc = WHY("%s: pre_amble is %s, not a string", what,
                     jpt__json_type_phrase(pre));
            goto fail;
        }
        *pre_amble = json_string_value(pre);
    }
    return JPT_OK;

fail:
    jpt__block_clear(out);
    return rc;
}

static int resource_from_json(const json_t *j, jpt__block *b, char *why,
                              size_t why_len)
{
    const json_t *res = json_object_get(j, "resource");
    char what[96];
    int rc;

    if (!json_is_object(res))
        return WHY("resource block has no resource object");
    if ((rc = take_string(res, "uri", true, &b->f[JPT_FIELD_URI],
                          "resource block", why, why_len)) < 0)
        return rc;
    if (b->f[JPT_FIELD_URI].len == 0)
        return WHY("resource block has an empty uri");
    snprintf(what, sizeof(what), "resource '%.64s'", b->f[JPT_FIELD_URI].ptr);

    bool has_text = json_object_get(res, "text") != NULL;
    bool has_blob = json_object_get(res, "blob") != NULL;
    if (has_text && has_blob)
        return WHY("%s has both text and blob", what);
    if (!has_text && !has_blob)
        return WHY("%s has neither text nor blob", what);
    if (has_text)
        rc = take_string(res, "text", true, &b->f[JPT_FIELD_TEXT], what, why, why_len);
    else
        rc = take_base64(res, "blob", b, what, why, why_len);
    if (rc < 0 ||
        (rc = take_string(res, "mimeType", false, &b->f[JPT_FIELD_MIME_TYPE],
                          what, why, why_len)) < 0 ||
        (rc = take_string(res, "name", false, &b->f[JPT_FIELD_NAME], what, why,
                          why_len)) < 0 ||
        (rc = take_string(res, "title", false, &b->f[JPT_FIELD_TITLE], what,
                          why, why_len)) < 0 ||
        (rc = take_string(res, "description", false,
                          &b->f[JPT_FIELD_DESCRIPTION], what, why, why_len)) < 0 ||
        (rc = take_string(j, "formatted", false, &b->f[JPT_FIELD_FORMATTED],
                          what, why, why_len)) < 0)
        return rc;
    return take_annotations(j, res, b, what, why, why_len);
}

static int media_from_json(const json_t *j, jpt__block *b, const char *what,
                           char *why, size_t why_len)
{
    int rc;

    if ((rc = take_base64(j, "data", b, what, why, why_len)) < 0 ||
        (rc = take_string(j, "mimeType", true, &b->f[JPT_FIELD_MIME_TYPE],
                          what, why, why_len)) < 0)
        return rc;
    return take_annotations(j, NULL, b, what, why, why_len);
}

static int resource_link_from_json(const json_t *j, jpt__block *b, char *why,
                                   size_t why_len)
{
    const char *what = "resource_link block";
    int rc;

    if ((rc = take_string(j, "uri", true, &b->f[JPT_FIELD_URI], what, why,
                          why_len)) < 0)
        return rc;
    if (b->f[JPT_FIELD_URI].len == 0)
        return WHY("resource_link block has an empty uri");
    if ((rc = take_string(j, "name", false, &b->f[JPT_FIELD_NAME], what, why,
                          why_len)) < 0 ||
        (rc = take_string(j, "title", false, &b->f[JPT_FIELD_TITLE], what, why,
                          why_len)) < 0 ||
        (rc = take_string(j, "description", false, &b->f[JPT_FIELD_DESCRIPTION],
                          what, why, why_len)) < 0 ||
        (rc = take_string(j, "mimeType", false, &b->f[JPT_FIELD_MIME_TYPE],
                          what, why, why_len)) < 0)
        return rc;
    return take_annotations(j, NULL, b, what, why, why_len);
}

int jpt__block_from_json(const json_t *j, jpt__block *out, jpt__block *pre,
                         char *why, size_t why_len)
{
    int rc;

    memset(out, 0, sizeof(*out));
    memset(pre, 0, sizeof(*pre));
    if (!json_is_object(j))
        return WHY("block is %s, not an object", jpt__json_type_phrase(j));
    const json_t *type = json_object_get(j, "type");
    if (type == NULL)
        return WHY("block has no type");
    if (!json_is_string(type))
        return WHY("block type is %s, not a string", jpt__json_type_phrase(type));

    const char *t = json_string_value(type);
    if (strcmp(t, "text") == 0) {
        out->type = JPT_BLOCK_TEXT;
        rc = take_string(j, "text", true, &out->f[JPT_FIELD_TEXT], "text block",
                         why, why_len);
    } else if (strcmp(t, "resource") == 0) {
        out->type = JPT_BLOCK_RESOURCE;
        rc = resource_from_json(j, out, why, why_len);
    } else if (strcmp(t, "question") == 0) {
        const char *pre_amble;
        const json_t *q = json_object_get(j, "question");
        if (q == NULL)
            return WHY("question block has no question object");
        rc = jpt__question_from_json(q, out, &pre_amble, why, why_len);
        if (rc == JPT_OK && pre_amble != NULL) {
            pre->type = JPT_BLOCK_TEXT;
            rc = jpt__field_set(&pre->f[JPT_FIELD_TEXT], pre_amble,
                                strlen(pre_amble));
        }
    } else if (strcmp(t, "image") == 0) {
        out->type = JPT_BLOCK_IMAGE;
        rc = media_from_json(j, out, "image block", why, why_len);
    } else if (strcmp(t, "audio") == 0) {
        out->type = JPT_BLOCK_AUDIO;
        rc = media_from_json(j, out, "audio block", why, why_len);
    } else if (strcmp(t, "resource_link") == 0) {
        out->type = JPT_BLOCK_RESOURCE_LINK;
        rc = resource_link_from_json(j, out, why, why_len);
    } else
        return WHY("unknown block type '%.64s'", t);

    if (rc < 0) {
        jpt__block_clear(out);
        jpt__block_clear(pre);
    }
    return rc;
}

/* ---- Writing -------------------------------------------------------------- */

json_t *jpt__json_from_field(const jpt__field *f)
{
    if (jpt__utf8_valid(f->ptr, f->len))
        return json_stringn_nocheck(f->ptr, f->len);

    jpt__buf b = JPT__BUF_INIT;
    json_t *s = NULL;
    if (jpt__buf_append_utf8(&b, f->ptr, f->len, true) == JPT_OK)
        s = json_stringn_nocheck(b.data, b.len);
    jpt__buf_free(&b);
    return s;
}

/* Sets obj[key] from a string field, if the block has it; false on failure. */
static bool put_string(json_t *obj, const char *key, const jpt__field *f)
{
    return f->ptr == NULL || json_object_set_new(obj, key, jpt__json_from_field(f)) == 0;
}

/* Sets obj[key] from a field holding JSON text, if the block has it. */
static bool put_json(json_t *obj, const char *key, const jpt__field *f)
{
    return f->ptr == NULL ||
           json_object_set_new(obj, key, jpt__json_reload(f->ptr, f->len)) == 0;
}

static const char *const block_type_names[] = {
    [JPT_BLOCK_TEXT] = "text",         [JPT_BLOCK_RESOURCE] = "resource",
    [JPT_BLOCK_QUESTION] = "question", [JPT_BLOCK_IMAGE] = "image",
    [JPT_BLOCK_AUDIO] = "audio",       [JPT_BLOCK_RESOURCE_LINK] = "resource_link",
};

json_t *jpt__block_to_json(const jpt__block *b)
{
    const jpt__field *f = b->f;
    json_t *j = json_pack("{s:s}", "type", block_type_names[b->type]);
    json_t *inner = NULL;
    bool ok = j != NULL;

    switch (b->type) {
    case JPT_BLOCK_TEXT:
        ok = ok && put_string(j, "text", &f[JPT_FIELD_TEXT]);
        break;
    case JPT_BLOCK_RESOURCE:
        inner = json_object();
        ok = ok && json_object_set_new(j, "resource", inner) == 0 &&
             put_string(inner, "uri", &f[JPT_FIELD_URI]) &&
             put_string(inner, "mimeType", &f[JPT_FIELD_MIME_TYPE]) &&
             put_string(inner, "text", &f[JPT_FIELD_TEXT]) &&
             put_string(inner, "blob", &f[JPT_FIELD_BLOB]) &&
             put_string(inner, "name", &f[JPT_FIELD_NAME]) &&
             put_string(inner, "title", &f[JPT_FIELD_TITLE]) &&
             put_string(inner, "description", &f[JPT_FIELD_DESCRIPTION]) &&
             put_json(j, "annotations", &f[JPT_FIELD_ANNOTATIONS]) &&
             put_string(j, "formatted", &f[JPT_FIELD_FORMATTED]);
        break;
    case JPT_BLOCK_QUESTION:
        inner = json_object();
        ok = ok && json_object_set_new(j, "question", inner) == 0 &&
             put_string(inner, "id", &f[JPT_FIELD_ID]) &&
             put_string(inner, "text", &f[JPT_FIELD_TEXT]) &&
             put_json(inner, "schema", &f[JPT_FIELD_SCHEMA]) &&
             put_json(inner, "default", &f[JPT_FIELD_DEFAULT]);
        break;
    case JPT_BLOCK_IMAGE:
    case JPT_BLOCK_AUDIO:
        ok = ok && put_string(j, "data", &f[JPT_FIELD_BLOB]) &&
             put_string(j, "mimeType", &f[JPT_FIELD_MIME_TYPE]) &&
             put_json(j, "annotations", &f[JPT_FIELD_ANNOTATIONS]);
        break;
    case JPT_BLOCK_RESOURCE_LINK:
        ok = ok && put_string(j, "uri", &f[JPT_FIELD_URI]) &&
             put_string(j, "name", &f[JPT_FIELD_NAME]) &&
             put_string(j, "title", &f[JPT_FIELD_TITLE]) &&
             put_string(j, "description", &f[JPT_FIELD_DESCRIPTION]) &&
             put_string(j, "mimeType", &f[JPT_FIELD_MIME_TYPE]) &&
             put_json(j, "annotations", &f[JPT_FIELD_ANNOTATIONS]);
        break;
    }
    if (!ok) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* The answer_type JP's legacy Question uses for `schema`, or NULL when the
 * schema is richer than Boolean, Text and Select can say. */
static json_t *answer_type_for_schema(const json_t *schema)
{
    const char *type = json_string_value(json_object_get(schema, "type"));
    const json_t *options = json_object_get(schema, "enum");
    size_t keys = json_object_size(schema);

    if (type == NULL)
        return NULL;
    if (keys == 1 && strcmp(type, "boolean") == 0)
        return json_string("Boolean");
    if (keys == 1 && strcmp(type, "string") == 0)
        return json_string("Text");
    if (keys == 2 && strcmp(type, "string") == 0 && json_is_array(options)) {
        size_t i;
        const json_t *o;
        json_array_foreach(options, i, o) if (!json_is_string(o)) return NULL;
        return json_pack("{s:{s:O}}", "Select", "options", options);
    }
    return NULL;
}

json_t *jpt__question_to_json(const jpt__block *b, const jpt__field *pre_amble)
{
    const jpt__field *f = b->f;
    json_t *q = json_object();
    bool ok = q != NULL && put_string(q, "id", &f[JPT_FIELD_ID]) &&
              put_string(q, "text", &f[JPT_FIELD_TEXT]) &&
              (pre_amble == NULL || put_string(q, "pre_amble", pre_amble)) &&
              put_json(q, "default", &f[JPT_FIELD_DEFAULT]);

    if (ok && f[JPT_FIELD_SCHEMA].ptr != NULL) {
        json_t *schema = jpt__json_reload(f[JPT_FIELD_SCHEMA].ptr, f[JPT_FIELD_SCHEMA].len);
        json_t *at = answer_type_for_schema(schema);
        if (at != NULL)
            ok = json_object_set_new(q, "answer_type", at) == 0;
        else
            ok = schema != NULL && json_object_set(q, "schema", schema) == 0;
        json_decref(schema);
    }
    if (!ok) {
        json_decref(q);
        return NULL;
    }
    return q;
}
