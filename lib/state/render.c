/* jpt_state -> the text the model reads. One function per block type; the
 * order of blocks is the tool's, nothing is merged or reordered (RFD 058,
 * "Content block ordering"). */
#include <string.h>

#include "state/impl.h"

typedef struct renderer {
    jpt__buf out;
    const char *root;
} renderer;

/* Tool-provided bytes: invalid UTF-8 and NUL bytes become U+FFFD. */
static int put_field(renderer *r, const jpt__field *f)
{
    return jpt__buf_append_utf8(&r->out, f->ptr, f->len, false);
}

static int put(renderer *r, const char *s)
{
    return jpt__buf_append_utf8(&r->out, s, strlen(s), false);
}

/* How a resource is named for the model: its canonical URI, relative to
 * the workspace root when it is a file beneath it. */
static int put_resource_name(renderer *r, const jpt__field *uri)
{
    char *canonical = NULL;
    int rc = jpt_uri_canonicalize(uri->ptr, r->root, &canonical);

    if (rc == JPT_ERR_NOMEM)
        return rc;
    rc = canonical != NULL ? put(r, canonical) : put_field(r, uri);
    jpt_free(canonical);
    return rc;
}

static size_t longest_backtick_run(const jpt__field *f)
{
    size_t longest = 0, run = 0;

    for (size_t i = 0; i < f->len; i++) {
        run = f->ptr[i] == '`' ? run + 1 : 0;
        if (run > longest)
            longest = run;
    }
    return longest;
}

static int put_fence(renderer *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (jpt__buf_putc(&r->out, '`') < 0)
            return JPT_ERR_NOMEM;
    return JPT_OK;
}

static int render_text_resource(renderer *r, const jpt__block *b)
{
    const jpt__field *text = &b->f[JPT_FIELD_TEXT];
    const char *lang = jpt_mime_fence_lang(b->f[JPT_FIELD_MIME_TYPE].ptr);
    /* CommonMark: a fence closes only on a run at least as long as the
     * opening one, so one longer than any run inside cannot close early. */
    size_t fence = longest_backtick_run(text) + 1;
    int rc;

    if (fence < 3)
        fence = 3;
    if ((rc = put_resource_name(r, &b->f[JPT_FIELD_URI])) < 0 ||
        (rc = jpt__buf_puts(&r->out, ":\n")) < 0 || (rc = put_fence(r, fence)) < 0 ||
        (rc = jpt__buf_puts(&r->out, lang != NULL ? lang : "")) < 0 ||
        (rc = jpt__buf_putc(&r->out, '\n')) < 0 || (rc = put_field(r, text)) < 0)
        return rc;
    if (text->len > 0 && text->ptr[text->len - 1] != '\n' &&
        (rc = jpt__buf_putc(&r->out, '\n')) < 0)
        return rc;
    return put_fence(r, fence);
}

static int render_binary(renderer *r, const jpt__block *b, const char *what)
{
    const char *mime = b->f[JPT_FIELD_MIME_TYPE].ptr;
    int rc;

    if (b->type == JPT_BLOCK_RESOURCE) {
        if ((rc = put_resource_name(r, &b->f[JPT_FIELD_URI])) < 0 ||
            (rc = jpt__buf_puts(&r->out, ": ")) < 0)
            return rc;
    } else if ((rc = jpt__buf_printf(&r->out, "[%s: ", what)) < 0)
        return rc;
    if (mime != NULL &&
        ((rc = put(r, mime)) < 0 || (rc = jpt__buf_puts(&r->out, ", ")) < 0))
        return rc;
    if ((rc = jpt__buf_printf(&r->out, "%s bytes of %s data, not shown",
                              b->f[JPT_FIELD_BLOB_SIZE].ptr, what)) < 0)
        return rc;
    return b->type == JPT_BLOCK_RESOURCE ? JPT_OK : jpt__buf_putc(&r->out, ']');
}

static int render_resource_link(renderer *r, const jpt__block *b)
{
    const jpt__field *name = &b->f[JPT_FIELD_NAME];
    const jpt__field *mime = &b->f[JPT_FIELD_MIME_TYPE];
    int rc;

    if ((rc = jpt__buf_puts(&r->out, "[resource link: ")) < 0 ||
        (rc = put_resource_name(r, &b->f[JPT_FIELD_URI])) < 0)
        return rc;
    if (name->ptr != NULL &&
        ((rc = jpt__buf_puts(&r->out, " \"")) < 0 || (rc = put_field(r, name)) < 0 ||
         (rc = jpt__buf_putc(&r->out, '"')) < 0))
        return rc;
    if (mime->ptr != NULL &&
        ((rc = jpt__buf_puts(&r->out, ", ")) < 0 || (rc = put_field(r, mime)) < 0))
        return rc;
    return jpt__buf_putc(&r->out, ']');
}

/* What a question expects, in words, for the simple schemas RFD 058 maps to
 * prompts; anything richer is shown as the schema itself. */
static int describe_answer(renderer *r, const jpt__field *schema_text)
{
    json_t *schema = NULL;

    if (schema_text->ptr == NULL)
        return jpt__buf_puts(&r->out, "any JSON value");
    schema = jpt__json_reload(schema_text->ptr, schema_text->len);
    if (schema == NULL)
        return JPT_ERR_NOMEM;

    const char *type = json_string_value(json_object_get(schema, "type"));
    const json_t *options = json_object_get(schema, "enum");
    size_t keys = json_object_size(schema);
    int rc;

    if (json_is_array(options) && keys <= 2 && (keys == 1 || type != NULL)) {
        size_t i;
        const json_t *o;
        rc = jpt__buf_puts(&r->out, "one of ");
        json_array_foreach(options, i, o) {
            if (rc == JPT_OK && i > 0)
                rc = jpt__buf_puts(&r->out, ", ");
            if (rc == JPT_OK)
                rc = jpt__json_dump_buf(o, JSON_COMPACT | JSON_ENCODE_ANY, &r->out);
        }
    } else if (type != NULL && keys == 1 && strcmp(type, "boolean") == 0)
        rc = jpt__buf_puts(&r->out, "true or false");
    else if (type != NULL && keys == 1 && strcmp(type, "string") == 0)
        rc = jpt__buf_puts(&r->out, "a string");
    else if (type != NULL && keys == 1 && strcmp(type, "integer") == 0)
        rc = jpt__buf_puts(&r->out, "an integer");
    else if (type != NULL && keys == 1 && strcmp(type, "number") == 0)
        rc = jpt__buf_puts(&r->out, "a number");
    else if ((rc = jpt__buf_puts(&r->out, "JSON matching the schema ")) == JPT_OK)
        rc = jpt__buf_append(&r->out, schema_text->ptr, schema_text->len);
    json_decref(schema);
    return rc;
}

static int render_question(renderer *r, const jpt__block *b)
{
    const jpt__field *def = &b->f[JPT_FIELD_DEFAULT];
    int rc;

    if ((rc = jpt__buf_puts(&r->out, "Question [")) < 0 ||
        (rc = put_field(r, &b->f[JPT_FIELD_ID])) < 0 ||
        (rc = jpt__buf_puts(&r->out, "]: ")) < 0 ||
        (rc = put_field(r, &b->f[JPT_FIELD_TEXT])) < 0 ||
        (rc = jpt__buf_puts(&r->out, "\nExpected answer: ")) < 0 ||
        (rc = describe_answer(r, &b->f[JPT_FIELD_SCHEMA])) < 0)
        return rc;
    if (def->ptr != NULL &&
        ((rc = jpt__buf_puts(&r->out, "\nDefault: ")) < 0 ||
         (rc = jpt__buf_append(&r->out, def->ptr, def->len)) < 0))
        return rc;
    return JPT_OK;
}

static int render_block(renderer *r, const jpt__block *b)
{
    switch (b->type) {
    case JPT_BLOCK_TEXT:
        return put_field(r, &b->f[JPT_FIELD_TEXT]);
    case JPT_BLOCK_RESOURCE:
        if (b->f[JPT_FIELD_FORMATTED].ptr != NULL)
            return put_field(r, &b->f[JPT_FIELD_FORMATTED]);
        if (b->f[JPT_FIELD_BLOB].ptr != NULL)
            return render_binary(r, b, "binary");
        return render_text_resource(r, b);
    case JPT_BLOCK_QUESTION:
        return render_question(r, b);
    case JPT_BLOCK_IMAGE:
        return render_binary(r, b, "image");
    case JPT_BLOCK_AUDIO:
        return render_binary(r, b, "audio");
    case JPT_BLOCK_RESOURCE_LINK:
        return render_resource_link(r, b);
    }
    return JPT_OK;
}

/* Blocks are separated by one blank line, counting a newline the previous
 * block already ended with. */
static int put_separator(renderer *r)
{
    if (r->out.len == 0)
        return JPT_OK;
    if (r->out.data[r->out.len - 1] == '\n')
        return jpt__buf_putc(&r->out, '\n');
    return jpt__buf_puts(&r->out, "\n\n");
}

static int render_error_trace(renderer *r, const jpt_state *s)
{
    int rc = JPT_OK;

    if (s->trace.n == 0)
        return JPT_OK;
    if (r->out.len > 0 && r->out.data[r->out.len - 1] != '\n')
        rc = jpt__buf_putc(&r->out, '\n');
    if (rc == JPT_OK)
        rc = jpt__buf_puts(&r->out, "Trace:");
    for (size_t i = 0; rc == JPT_OK && i < s->trace.n; i++)
        if ((rc = jpt__buf_puts(&r->out, "\n  - ")) == JPT_OK)
            rc = put(r, s->trace.v[i]);
    return rc;
}

static int render(renderer *r, const jpt_state *s)
{
    int rc = JPT_OK;

    if (s->is_error) {
        rc = jpt__buf_puts(&r->out, s->transient ? "Error (transient):" : "Error:");
        /* "Error: message" on one line when the content starts with text. */
        if (rc == JPT_OK && s->nblocks == 0)
            rc = jpt__buf_puts(&r->out, " (no message)");
        else if (rc == JPT_OK)
            rc = jpt__buf_putc(&r->out,
                               s->blocks[0].type == JPT_BLOCK_TEXT ? ' ' : '\n');
    }
    for (size_t i = 0; rc == JPT_OK && i < s->nblocks; i++) {
        if (i > 0)
            rc = put_separator(r);
        if (rc == JPT_OK)
            rc = render_block(r, &s->blocks[i]);
    }
    if (rc == JPT_OK && s->is_error)
        rc = render_error_trace(r, s);
    return rc;
}

JPT_EXPORT int jpt_state_render(const jpt_state *s,
                                const jpt_render_options *opts, char **out)
{
    renderer r = {JPT__BUF_INIT, NULL};

    if (out == NULL)
        return JPT_ERR_INVALID;
    *out = NULL;
    if (s == NULL)
        return JPT_ERR_INVALID;
    int checked = opts != NULL ? jpt__struct_check(opts, opts->size, sizeof(*opts)) : JPT_OK;
    if (checked < 0)
        return checked;
    if (opts != NULL)
        r.root = opts->root;
    int rc = r.root != NULL ? jpt__uri_check_root(r.root) : JPT_OK;
    if (rc < 0)
        return rc;
    return jpt__state_render_at(s, r.root, out);
}

int jpt__state_render_at(const jpt_state *s, const char *root, char **out)
{
    renderer r = {JPT__BUF_INIT, root};

    *out = NULL;
    int rc = render(&r, s);
    if (rc == JPT_OK && (*out = jpt__buf_take(&r.out)) == NULL)
        rc = JPT_ERR_NOMEM;
    jpt__buf_free(&r.out);
    return rc;
}
