/* stateful-counter: a stateful test tool speaking RFD 058 envelopes, one JSON
 * object per line on stdout, driven by lines on stdin:
 *   inc                    count += 1, prints running "count=N"
 *   ask                    prints waiting with question "reset" (boolean)
 *   {"id":"reset","answer":true|false}
 *                          answers it: running "count=0 (reset)" or
 *                          "count=N (kept)"
 *   stop                   prints "final count=N" with no status (stopped)
 *                          and exits
 * Anything else (including an answer with no question pending) prints running
 * "unknown input: <line>". EOF exits quietly. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints one envelope as a line. status NULL means stopped (no _meta). */
static void emit(const char *status, json_t *block)
{
    json_t *envelope = json_pack("{s:[o]}", "content", block);
    char *line;

    if (envelope != NULL && status != NULL)
        json_object_set_new(envelope, "_meta",
                            json_pack("{s:s}", "computer.jp/status", status));
    line = envelope != NULL ? json_dumps(envelope, JSON_COMPACT) : NULL;
    if (line == NULL) {
        fputs("stateful-counter: out of memory\n", stderr);
        exit(1);
    }
    printf("%s\n", line);
    fflush(stdout);
    free(line);
    json_decref(envelope);
}

static void emit_text(const char *status, const char *text)
{
    emit(status, json_pack("{s:s, s:s}", "type", "text", "text", text));
}

static void emit_count(const char *status, const char *prefix, long count,
                       const char *suffix)
{
    char text[128];

    snprintf(text, sizeof text, "%scount=%ld%s", prefix, count, suffix);
    emit_text(status, text);
}

static void emit_unknown(const char *line)
{
    json_t *text = json_sprintf("unknown input: %s", line);

    emit("running", json_pack("{s:s, s:o}", "type", "text", "text", text));
}

int main(void)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long count = 0;
    bool asked = false;

    emit_count("running", "", count, "");
    while ((len = getline(&line, &cap, stdin)) != -1) {
        json_t *msg;

        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';

        if (strcmp(line, "inc") == 0) {
            emit_count("running", "", ++count, "");
        } else if (strcmp(line, "ask") == 0) {
            asked = true;
            emit("waiting",
                 json_pack("{s:s, s:{s:s, s:s, s:{s:s}, s:b}}",
                           "type", "question", "question",
                           "id", "reset", "text", "Reset the counter?",
                           "schema", "type", "boolean", "default", 0));
        } else if (strcmp(line, "stop") == 0) {
            emit_count(NULL, "final ", count, "");
            break;
        } else if (asked && (msg = json_loads(line, 0, NULL)) != NULL) {
            json_t *answer = json_object_get(msg, "answer");
            const char *id = json_string_value(json_object_get(msg, "id"));

            if (id != NULL && strcmp(id, "reset") == 0 && json_is_boolean(answer)) {
                asked = false;
                if (json_is_true(answer))
                    count = 0;
                emit_count("running", "", count,
                           json_is_true(answer) ? " (reset)" : " (kept)");
            } else {
                emit_unknown(line);
            }
            json_decref(msg);
        } else {
            emit_unknown(line);
        }
    }
    free(line);
    return 0;
}
