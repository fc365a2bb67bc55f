/* outcome-tool: a one-shot test tool that prints one of the output formats
 * jptool parses (legacy Outcome success/error, RFD 058 envelope, RFD 009
 * ToolState, raw text), or echoes the {{tool}} JSON it was given.
 *
 * Usage: outcome-tool FORMAT [TOOL_JSON]
 * TOOL_JSON is read from stdin when absent or "-". */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads all of stdin into a NUL-terminated string, or returns NULL. */
static char *read_all(FILE *in)
{
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);

    if (buf == NULL)
        return NULL;
    for (;;) {
        len += fread(buf + len, 1, cap - len - 1, in);
        if (ferror(in)) {
            free(buf);
            return NULL;
        }
        if (feof(in))
            break;
        if (cap - len - 1 == 0) {
            char *bigger = realloc(buf, cap * 2);
            if (bigger == NULL) {
                free(buf);
                return NULL;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    buf[len] = '\0';
    return buf;
}

/* "hello <arguments.name>"; a non-string name is shown as JSON text. */
static char *greeting(json_t *tool, const char *prefix)
{
    json_t *name = json_object_get(json_object_get(tool, "arguments"), "name");
    char *dumped = NULL;
    const char *text = "world";
    char *out;

    if (json_is_string(name))
        text = json_string_value(name);
    else if (name != NULL && !json_is_null(name))
        text = dumped = json_dumps(name, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text == NULL)
        return NULL;
    out = malloc(strlen(prefix) + strlen(text) + 1);
    if (out != NULL) {
        strcpy(out, prefix);
        strcat(out, text);
    }
    free(dumped);
    return out;
}

static json_t *build(const char *format, json_t *tool)
{
    json_t *result = NULL;
    char *hello = greeting(tool, "hello ");
    char *failed = greeting(tool, "failed: ");

    if (hello == NULL || failed == NULL)
        goto out;
    if (strcmp(format, "success") == 0)
        result = json_pack("{s:s, s:s}", "type", "success", "content", hello);
    else if (strcmp(format, "error") == 0)
        result = json_pack("{s:s, s:s, s:[s,s], s:b}", "type", "error",
                           "message", failed, "trace", "cause one", "cause two",
                           "transient", 1);
    else if (strcmp(format, "envelope") == 0)
        result = json_pack("{s:[{s:s, s:s}, {s:s, s:{s:s, s:s, s:s}}]}",
                           "content",
                           "type", "text", "text", hello,
                           "type", "resource", "resource",
                           "uri", "file:///project/src/main.rs",
                           "mimeType", "text/rust",
                           "text", "fn main() {}\n");
    else if (strcmp(format, "toolstate") == 0)
        result = json_pack("{s:s, s:{s:s}}", "type", "stopped",
                           "result", "Ok", hello);
out:
    free(hello);
    free(failed);
    return result;
}

static int known_format(const char *format)
{
    static const char *const formats[] = {
        "success", "error", "envelope", "toolstate", "raw", "echo",
    };

    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (strcmp(format, formats[i]) == 0)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    const char *format;
    char *input = NULL;
    const char *text;
    json_t *tool, *result;
    int status = 1;

    if (argc < 2 || argc > 3 || !known_format(argv[1])) {
        fputs("usage: outcome-tool success|error|envelope|toolstate|raw|echo"
              " [TOOL_JSON|-]\n", stderr);
        return 2;
    }
    format = argv[1];
    if (argc == 3 && strcmp(argv[2], "-") != 0) {
        text = argv[2];
    } else {
        input = read_all(stdin);
        if (input == NULL) {
            perror("outcome-tool: reading stdin");
            return 1;
        }
        text = input;
    }

    /* echo shows exactly what arrived, even if it is not JSON; only trailing
     * newlines are dropped so the output is one line. */
    if (strcmp(format, "echo") == 0) {
        size_t len = strlen(text);
        while (len > 0 && text[len - 1] == '\n')
            len--;
        printf("%.*s\n", (int)len, text);
        free(input);
        return 0;
    }

    tool = json_loads(text, 0, NULL);
    if (!json_is_object(tool)) {
        fprintf(stderr, "outcome-tool: TOOL_JSON is not a JSON object: %s\n", text);
        json_decref(tool);
        free(input);
        return 1;
    }

    if (strcmp(format, "raw") == 0) {
        char *hello = greeting(tool, "hello ");
        if (hello != NULL) {
            printf("%s\n", hello);
            status = 0;
        }
        free(hello);
    } else {
        result = build(format, tool);
        if (result != NULL) {
            char *out = json_dumps(result, JSON_COMPACT);
            if (out != NULL) {
                printf("%s\n", out);
                status = 0;
            }
            free(out);
            json_decref(result);
        }
    }
    json_decref(tool);
    free(input);
    return status;
}
