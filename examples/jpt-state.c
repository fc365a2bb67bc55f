/* jpt-state: shows what jptool makes of a tool's output.
 *
 *   jpt-state [--json | --tool-state | --outcome] [--root DIR] [--raw] [FILE]
 *
 * Reads the tool's stdout from FILE (or standard input) and prints what the
 * model would read (default), the normalised RFD 058 envelope (--json), the
 * RFD 009 ToolState (--tool-state) or JP's legacy Outcome (--outcome).
 * Warnings about malformed output go to standard error. Exit status: 0, or 1
 * when the output had warnings, 2 on a usage or I/O error. */
#define _DEFAULT_SOURCE /* realpath */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jptool/jptool.h>

static const char usage[] =
    "usage: jpt-state [--json | --tool-state | --outcome] [--root DIR] [--raw] [FILE]\n"
    "Reads a tool's output and prints what jptool makes of it:\n"
    "  (default)     the text the model reads\n"
    "  --json        the RFD 058 content-block envelope\n"
    "  --tool-state  the RFD 009 ToolState\n"
    "  --outcome     JP's legacy Outcome\n"
    "  --root DIR    name file resources relative to DIR (default: the current directory)\n"
    "  --raw         treat the output as plain text even if it is JSON\n";

static char *read_all(FILE *f, size_t *len)
{
    size_t cap = 65536, n = 0;
    char *data = malloc(cap);

    while (data != NULL) {
        n += fread(data + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *bigger = realloc(data, cap * 2);
        if (bigger == NULL) {
            free(data);
            return NULL;
        }
        data = bigger;
        cap *= 2;
    }
    if (data != NULL && ferror(f)) {
        free(data);
        return NULL;
    }
    *len = n;
    return data;
}

static const char *kind_name(int kind)
{
    return kind == JPT_STATE_RUNNING ? "running"
           : kind == JPT_STATE_WAITING ? "waiting" : "stopped";
}

int main(int argc, char **argv)
{
    int form = 0;
    unsigned flags = 0;
    const char *path = NULL, *root = NULL;
    char cwd[PATH_MAX];

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            form = JPT_JSON_ENVELOPE;
        else if (strcmp(argv[i], "--tool-state") == 0)
            form = JPT_JSON_TOOL_STATE;
        else if (strcmp(argv[i], "--outcome") == 0)
            form = JPT_JSON_OUTCOME;
        else if (strcmp(argv[i], "--raw") == 0)
            flags |= JPT_PARSE_RAW;
        else if (strcmp(argv[i], "--root") == 0 && i + 1 < argc)
            root = argv[++i];
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "jpt-state: unknown option %s\n%s", argv[i], usage);
            return 2;
        } else if (path == NULL)
            path = argv[i];
        else {
            fputs(usage, stderr);
            return 2;
        }
    }

    /* jptool wants an absolute workspace root; resolve a relative one. */
    if (root == NULL || (root[0] != '/' && strncmp(root, "file:", 5) != 0)) {
        if (realpath(root != NULL ? root : ".", cwd) == NULL) {
            fprintf(stderr, "jpt-state: %s: %s\n", root != NULL ? root : ".",
                    strerror(errno));
            return 2;
        }
        root = cwd;
    }

    FILE *in = stdin;
    if (path != NULL && strcmp(path, "-") != 0 && (in = fopen(path, "rb")) == NULL) {
        fprintf(stderr, "jpt-state: %s: %s\n", path, strerror(errno));
        return 2;
    }
    size_t len = 0;
    char *data = read_all(in, &len);
    if (in != stdin)
        fclose(in);
    if (data == NULL) {
        fprintf(stderr, "jpt-state: reading %s failed\n", path ? path : "stdin");
        return 2;
    }

    jpt_state *state = NULL;
    int rc = jpt_state_parse(data, len, flags, &state);
    free(data);
    if (rc < 0) {
        fprintf(stderr, "jpt-state: %s\n", jpt_strerror(rc));
        return 2;
    }
    for (size_t i = 0; i < jpt_state_warning_count(state); i++)
        fprintf(stderr, "warning: %s\n", jpt_state_warning(state, i));

    char *out = NULL;
    if (form != 0)
        rc = jpt_state_to_json(state, form, JPT_JSON_PRETTY, &out);
    else {
        jpt_render_options opts = {sizeof(opts), root};
        rc = jpt_state_render(state, &opts, &out);
    }
    if (rc < 0) {
        fprintf(stderr, "jpt-state: cannot write a %s state in this form: %s\n",
                kind_name(jpt_state_kind(state)), jpt_strerror(rc));
        jpt_state_unref(state);
        return 2;
    }
    fputs(out, stdout);
    if (out[0] != '\0' && out[strlen(out) - 1] != '\n')
        fputc('\n', stdout);
    jpt_free(out);

    int status = jpt_state_warning_count(state) > 0 ? 1 : 0;
    jpt_state_unref(state);
    return status;
}
