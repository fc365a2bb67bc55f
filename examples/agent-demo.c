/* agent-demo: a scripted agent (no model needed) driving jptool the way a
 * real one would, printed as a chat transcript.
 *
 *   agent-demo TOOLS_DIR [VFS_TOOLS_DIR]
 *
 * It loads a tool config, prints the tool schemas the model would see, then
 * replays RFD 009's interactive staging (`git add --patch` in a scratch
 * repository, through spawn / apply / fetch) and a one-shot call whose tool
 * asks two questions, answered by the inquiry handler as an assistant
 * would. TOOLS_DIR holds the example tools (examples/tools).
 *
 * With VFS_TOOLS_DIR (the build's examples/vfs-tools, which holds the VFS
 * tools and their tools.json), it then loads those "runtime": "vfs" tools
 * and replays calls to them (D11): a read, a read of .env the policy
 * denies, a search, and an edit whose tool asks first (the file has
 * uncommitted changes) and whose write the policy handler approves. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <jptool/jptool.h>

static void die(const char *what, jpt_registry *r)
{
    fprintf(stderr, "agent-demo: %s: %s\n", what, r != NULL ? jpt_registry_errmsg(r) : "");
    exit(1);
}

static void heading(const char *text)
{
    printf("\n=== %s ===\n\n", text);
}

/* Prints a multi-line text indented, as a transcript shows a message. */
static void indented(const char *prefix, const char *text)
{
    printf("%s", prefix);
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '\n' && p[1] == '\0')
            break;
        putchar(*p);
        if (*p == '\n')
            printf("%*s", (int)strlen(prefix), "");
    }
    putchar('\n');
}

/* One result as the model reads it: a host hands each result's content to
 * its model (and its is_error flag, where the provider has one). */
static void show_result(const json_t *result)
{
    const char *content = json_string_value(json_object_get(result, "content"));
    printf("tool ←%s\n", json_is_true(json_object_get(result, "is_error")) ? " (error)" : "");
    /* A stateful action answers with RFD 009's {"id","state",...} JSON;
     * the transcript shows it unpacked. */
    json_t *response = json_loads(content, 0, NULL);
    const char *state = json_string_value(json_object_get(response, "state"));
    if (state != NULL) {
        const char *text = json_string_value(json_object_get(response, "content"));
        if (text == NULL)
            text = json_string_value(json_object_get(response, "result"));
        if (text == NULL)
            text = json_string_value(json_object_get(response, "error"));
        printf("    [handle %s: %s]\n", json_string_value(json_object_get(response, "id")),
               state);
        indented("    ", text != NULL ? text : "");
    } else if (json_object_get(response, "completed") != NULL) {
        /* The await tool's answer (RFD 037), shown as the model gets it. */
        char *pretty = json_dumps(response, JSON_INDENT(2));
        indented("    ", pretty);
        free(pretty);
    } else
        indented("    ", content);
    json_decref(response);
    putchar('\n');
}

/* One model message: its tool calls, submitted as one batch, and their
 * results. `calls` is [{"name", "arguments"}] without ids. */
static void batch(jpt_registry *r, const char *calls)
{
    json_t *list = json_loads(calls, 0, NULL);
    size_t i;
    json_t *c;
    jpt_batch *b = NULL;
    char *text = NULL, *results = NULL;

    json_array_foreach(list, i, c) {
        char id[32];
        snprintf(id, sizeof(id), "call_%zu", i + 1);
        json_object_set_new(c, "id", json_string(id));
        text = json_dumps(json_object_get(c, "arguments"), JSON_COMPACT);
        printf("assistant → %s %s\n", json_string_value(json_object_get(c, "name")), text);
        free(text);
    }
    text = json_dumps(list, JSON_COMPACT);
    if (jpt_registry_submit(r, text, &b) != JPT_OK)
        die("submit", r);
    free(text);
    if (jpt_registry_wait(r, b, 60000) != JPT_OK)
        die("wait", r);
    if (jpt_batch_results_json(b, &results) != JPT_OK)
        die("results", r);
    json_t *res = json_loads(results, 0, NULL);
    json_array_foreach(res, i, c) show_result(c);
    json_decref(res);
    json_decref(list);
    jpt_free(results);
    jpt_batch_free(b);
}

/* One model turn with a single tool call. */
static void call(jpt_registry *r, const char *tool, const char *arguments)
{
    char calls[4096];

    snprintf(calls, sizeof(calls), "[{\"name\":\"%s\",\"arguments\":%s}]", tool, arguments);
    batch(r, calls);
}

static int shell(const char *dir, const char *cmd)
{
    char line[2048];
    snprintf(line, sizeof(line), "cd '%s' && %s", dir, cmd);
    return system(line);
}

/* The assistant's (or the user's) side of an inquiry: in a real host, a
 * structured model call or a prompt to the user. Here, scripted answers,
 * by question id. */
static void answer_inquiry(jpt_inquiry *q, void *ud)
{
    static const struct {
        const char *id, *answer;
    } scripted[] = {
        {"branch", "\"develop\""}, /* merge.py */
        {"confirm", "true"},       /* merge.py */
        {"write_anyway", "true"},  /* modify_file: the file has uncommitted changes */
    };
    const jpt_state *context = jpt_inquiry_context(q);
    json_t *question = json_loads(jpt_inquiry_question_json(q), 0, NULL);
    const char *id = json_string_value(json_object_get(question, "id")), *answer = NULL;

    (void)ud;
    printf("  [inquiry for the %s] %s\n",
           jpt_inquiry_target(q) == JPT_TARGET_ASSISTANT ? "assistant" : "user",
           jpt_inquiry_question_json(q));
    for (size_t i = 0; i < jpt_state_block_count(context); i++)
        printf("  [shown before it] %s\n",
               jpt_state_block_field(context, i, JPT_FIELD_TEXT, NULL));
    for (size_t i = 0; i < sizeof(scripted) / sizeof(scripted[0]) && id != NULL; i++)
        if (strcmp(scripted[i].id, id) == 0)
            answer = scripted[i].answer;
    json_decref(question);
    if (answer == NULL) {
        printf("  [no scripted answer: declined]\n");
        jpt_inquiry_cancel(q, "the demo has no answer to this question");
        return;
    }
    printf("  [answer] %s\n", answer);
    if (jpt_inquiry_answer(q, answer) != JPT_OK)
        printf("  [answer refused] %s\n", jpt_inquiry_errmsg(q));
}

/* The policy handler: a VFS tool's request the sandbox does not cover (a
 * write: the default sandbox is read-only). A real host asks the user;
 * the demo approves this one request. */
static void answer_policy(jpt_policy_request *req, void *ud)
{
    (void)ud;
    printf("  [policy] %s (call %s) asks for %s '%s'\n", jpt_policy_request_tool(req),
           jpt_policy_request_id(req), jpt_policy_request_method(req),
           jpt_policy_request_path(req));
    printf("  [policy reason] %s\n", jpt_policy_request_reason(req));
    printf("  [policy answer] allow, this request only\n");
    if (jpt_policy_request_answer(req, JPT_DECISION_ALLOW, NULL) != JPT_OK)
        printf("  [policy answer refused: the tool's request is gone]\n");
}

/* D11: the example VFS tools, loaded from the tools.json meson wrote into
 * their build directory. */
static void vfs_section(jpt_registry *r, const char *repo, const char *vfs_dir)
{
    char path[4096];
    json_error_t error;

    snprintf(path, sizeof(path), "%s/tools.json", vfs_dir);
    json_t *config = json_load_file(path, 0, &error);
    char *text = config != NULL ? json_dumps(config, JSON_COMPACT) : NULL;
    if (text == NULL) {
        fprintf(stderr, "agent-demo: %s: %s\n", path, error.text);
        exit(1);
    }
    if (jpt_registry_load_tools(r, text, 0) != JPT_OK)
        die("load_tools (VFS tools)", r);
    free(text);
    json_decref(config);
    jpt_registry_set_policy_handler(r, answer_policy, NULL);

    heading("D11: VFS tools, whose file access goes through the host and its policy");
    printf("(loaded tools.json from VFS_TOOLS_DIR: read_file, list_files, grep_files and\n"
           " modify_file, each \"runtime\": \"vfs\"; the workspace now also holds a .env)\n\n");
    shell(repo, "printf 'API_KEY=demo-secret\\n' > .env");
    call(r, "read_file", "{\"path\":\"notes.txt\",\"offset\":1,\"limit\":3}");
    printf("(.env is a sensitive path: the policy denies it, whatever the sandbox allows)\n\n");
    call(r, "read_file", "{\"path\":\".env\"}");
    call(r, "grep_files", "{\"pattern\":\"^t\",\"paths\":[\"notes.txt\"]}");
    printf("(notes.txt still has the hunk git add --patch left unstaged: modify_file asks\n"
           " before writing over it, then the host asks the policy handler about the write)\n\n");
    call(r, "modify_file", "{\"path\":\"notes.txt\",\"pattern\":\"twenty-eight\","
                           "\"replacement\":\"twenty-eight (28)\"}");
    printf("(git diff --stat, and line 28 now:)\n");
    fflush(stdout);
    shell(repo, "git diff --stat && sed -n 28p notes.txt");
}

int main(int argc, char **argv)
{
    char repo[] = "/tmp/jptool-demo-XXXXXX";
    char config[4096];
    jpt_registry *r = NULL;

    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: agent-demo TOOLS_DIR [VFS_TOOLS_DIR]\n");
        return 2;
    }
    if (mkdtemp(repo) == NULL ||
        shell(repo, "git init -q && git config user.email demo@example.com && "
                    "git config user.name demo && seq 1 30 > notes.txt && "
                    "git add notes.txt && git commit -qm 'first notes' && "
                    "sed -i 's/^2$/two/; s/^28$/twenty-eight/' notes.txt") != 0) {
        fprintf(stderr, "agent-demo: could not prepare a git repository in %s\n", repo);
        return 1;
    }

    jpt_registry_options opts = {sizeof(opts), .root = repo, .settle_ms = 250};
    if (jpt_registry_new(&opts, &r) != JPT_OK)
        die("registry", NULL);
    snprintf(config, sizeof(config),
             "{\"tools\":["
             "{\"name\":\"git\",\"description\":\"Interactive git.\",\"stateful\":true,"
             " \"command\":[\"git\",\"add\",\"--patch\"],"
             " \"env\":{\"set\":{\"GIT_PAGER\":\"cat\"}}},"
             "{\"name\":\"merge\",\"description\":\"Merge a feature branch.\","
             " \"parameters\":{\"type\":\"object\",\"properties\":"
             "  {\"feature\":{\"type\":\"string\"}}},"
             " \"command\":[\"%s/merge.py\",\"{{tool}}\"],\"question_target\":\"assistant\"},"
             /* Stand-ins for RFD 037's examples: the same shape of output,
              * the same difference in duration. */
             "{\"name\":\"cargo_check\",\"description\":\"cargo check\",\"stateful\":true,"
             " \"actions\":[\"fetch\",\"abort\"],\"settle_ms\":100,"
             " \"command\":[\"sh\",\"-c\",\"echo '    Checking jp_cli v0.1.0'; sleep 1; "
             "echo '    Finished dev profile: ok, 0 warnings'\"]},"
             "{\"name\":\"cargo_test\",\"description\":\"cargo test\",\"stateful\":true,"
             " \"actions\":[\"fetch\",\"abort\"],\"settle_ms\":100,"
             " \"command\":[\"sh\",\"-c\",\"echo 'running 42 tests'; sleep 2; "
             "echo 'test result: ok. 42 passed'\"]},"
             "{\"name\":\"crate_search\",\"description\":\"crates.io search\",\"stateful\":true,"
             " \"actions\":[\"fetch\",\"abort\"],\"settle_ms\":100,"
             " \"command\":[\"sh\",\"-c\",\"sleep 0.5; echo 'tokio, async-std, smol'\"]},"
             "{\"name\":\"github_code_search\",\"description\":\"GitHub code search\","
             " \"stateful\":true,\"actions\":[\"fetch\",\"abort\"],\"settle_ms\":100,"
             " \"command\":[\"sh\",\"-c\",\"sleep 5; echo 'tokio::spawn in 12k files'\"]}"
             "]}",
             argv[1]);
    if (jpt_registry_load_tools(r, config, 0) != JPT_OK)
        die("load_tools", r);
    jpt_registry_set_inquiry_handler(r, answer_inquiry, NULL);

    char *schemas = NULL;
    heading("The tools as the model sees them (Anthropic format)");
    if (jpt_registry_tools_json(r, JPT_DIALECT_ANTHROPIC, &schemas) != JPT_OK)
        die("tools_json", r);
    printf("%s\n", schemas);
    jpt_free(schemas);

    heading("RFD 009: interactive staging with git add --patch");
    call(r, "git", "{\"action\":\"spawn\",\"id\":\"staging\"}");
    call(r, "git", "{\"action\":\"apply\",\"id\":\"staging\",\"input\":\"y\\n\"}");
    call(r, "git", "{\"action\":\"fetch\",\"id\":\"staging\"}");
    call(r, "git", "{\"action\":\"apply\",\"id\":\"staging\",\"input\":\"n\\n\"}");
    printf("(git diff --cached now holds the first hunk only:)\n");
    fflush(stdout);
    shell(repo, "git diff --cached --stat");

    heading("A one-shot call whose tool asks, answered through the inquiry handler");
    call(r, "merge", "{\"feature\":\"search-v2\"}");

    heading("RFD 037: check and test in parallel, awaited in the same message");
    batch(r, "[{\"name\":\"cargo_check\",\"arguments\":{\"action\":\"spawn\",\"id\":\"check\"}},"
             "{\"name\":\"cargo_test\",\"arguments\":{\"action\":\"spawn\",\"id\":\"test\"}},"
             "{\"name\":\"await\",\"arguments\":{\"all\":[\"check\",\"test\"]}}]");

    heading("RFD 037: a race between two searches, the first answer wins");
    batch(r, "[{\"name\":\"crate_search\",\"arguments\":{\"action\":\"spawn\",\"id\":\"crates\"}},"
             "{\"name\":\"github_code_search\",\"arguments\":{\"action\":\"spawn\",\"id\":\"github\"}},"
             "{\"name\":\"await\",\"arguments\":{\"any\":[\"crates\",\"github\"]}}]");
    printf("(the slower search is still running; the assistant stops it:)\n\n");
    call(r, "github_code_search", "{\"action\":\"abort\",\"id\":\"github\"}");

    if (argc == 3)
        vfs_section(r, repo, argv[2]);

    jpt_registry_free(r);
    char cleanup[256];
    snprintf(cleanup, sizeof(cleanup), "rm -rf '%s'", repo);
    return system(cleanup) == 0 ? 0 : 1;
}
