/* llm-agent: a complete agent loop over a provider's HTTP API, with jptool
 * running the model's tool calls.
 *
 *   llm-agent --provider openai|anthropic --model MODEL [--tools FILE]
 *             [--root DIR] [--system TEXT] [--max-steps N] [--max-tokens N]
 *             [--max-retries N] [--retry-delay-ms MS] [--max-retry-wait S]
 *             [--timeout S]
 *
 * Each line on stdin is a user message, and starts a turn: the agent sends
 * the conversation and the tool list (jpt_registry_tools_json in the
 * provider's dialect), submits each assistant message's tool calls as one
 * batch, as they came (OpenAI's tool_calls, Anthropic's content), sends the
 * results back in the provider's shape (jpt_batch_results_json_as,
 * JPT_DIALECT_AS_CALLED: `tool` messages with tool_call_id; `tool_result`
 * blocks with tool_use_id and is_error), and goes on until the model
 * answers without tool calls; then it ends the turn (jpt_registry_end_turn,
 * the tools' turn-end policies). Notifications the tools left meanwhile,
 * and the results of handles the turn end waited for, go in front of the
 * next user message as the text jpt_registry_take_turn_text gives (no
 * provider takes them as tool results: they answer no call of the message
 * before).
 * A tool's question for the assistant is put to the same API as a
 * structured call (a forced `answer` tool whose input schema is the
 * question's); a question for the user is asked on stderr and answered
 * with the next line of stdin. The model's text goes to stdout, the tools'
 * activity to stderr.
 *
 * The registry is driven all along, also while a request is in flight:
 * one curl_multi_poll() waits on libcurl's sockets, the registry's fd (for
 * at most jpt_registry_get_timeout()) and stdin when a line is wanted.
 *
 * A request that fails for a reason that may pass (a transport error, HTTP
 * 408, 409, 429 or 5xx) is made again, up to --max-retries (4) more times,
 * after the wait the provider's retry-after-ms or retry-after header asks
 * (up to --max-retry-wait, 60 s), else an exponential backoff from
 * --retry-delay-ms (500 ms); each on stderr. Any other HTTP error ends the
 * session with the provider's message. --timeout (600 s) bounds one
 * attempt. --max-tokens is sent as OpenAI's max_completion_tokens (the
 * o-series and later models refuse max_tokens) and Anthropic's max_tokens
 * (required; 4096 by default).
 *
 * Environment:
 *   --provider openai     OPENAI_BASE_URL (default https://api.openai.com/v1;
 *                         requests go to $OPENAI_BASE_URL/chat/completions),
 *                         OPENAI_API_KEY (sent as a bearer token when set,
 *                         so a local server needs none)
 *   --provider anthropic  ANTHROPIC_BASE_URL (default https://api.anthropic.com;
 *                         requests go to $ANTHROPIC_BASE_URL/v1/messages),
 *                         ANTHROPIC_API_KEY (x-api-key)
 *
 * Against a real endpoint (the same program the replay test runs):
 *
 *   export ANTHROPIC_API_KEY=sk-ant-...
 *   echo 'How many C files are in src/? Use the shell.' |
 *       build/examples/llm-agent --provider anthropic --model claude-sonnet-4-5
 *
 *   export OPENAI_BASE_URL=http://localhost:8080/v1   # any compatible server
 *   build/examples/llm-agent --provider openai --model gpt-4.1
 *
 * Without --tools, the model gets one tool, `shell` (sh -c, one-shot or as
 * a stateful handle, and await); --tools FILE loads a jptool tool config
 * instead ({"tools": [...]}, registry.h). Tools run in --root (default:
 * the current directory) with the agent's rights.
 *
 * Test: test/test_llm_agent.py runs it against a local replay server
 * (test/llm_replay_server.py) and checks every request body it sends. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <jptool/jptool.h>

enum provider { OPENAI, ANTHROPIC };

static const char DEFAULT_TOOLS[] =
    "{\"tools\":[{\"name\":\"shell\",\"description\":\"Runs a shell command (sh -c). "
    "Without an action it runs to the end and you get its output; spawn starts it as "
    "a handle that keeps running, to fetch, apply input to, await or abort.\","
    "\"stateful\":true,\"parameters\":{\"type\":\"object\",\"properties\":"
    "{\"command\":{\"type\":\"string\",\"description\":\"The command line\"}},"
    "\"required\":[\"command\"]},\"command\":[\"sh\",\"-c\",\"{{arguments.command}}\"]}]}";

static const char DEFAULT_SYSTEM[] =
    "You are a careful agent working in a workspace through the tools you are given. "
    "Use them to find out what you need, then answer briefly.";

/* ---- Small helpers ------------------------------------------------------------- */

__attribute__((format(printf, 1, 2), noreturn)) static void fail(const char *fmt, ...)
{
    va_list ap;

    fputs("llm-agent: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (p == NULL)
        fail("out of memory");
    return p;
}

static char *xdump(const json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s == NULL)
        fail("out of memory writing JSON");
    return s;
}

static json_t *xloads(const char *text, const char *what)
{
    json_error_t err;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &err);
    if (j == NULL)
        fail("%s is not JSON: %s", what, err.text);
    return j;
}

typedef struct {
    char *data;
    size_t len, cap;
} buffer;

static void buffer_add(buffer *b, const char *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->data = xrealloc(b->data, b->cap);
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    buffer b = {0};
    char chunk[4096];
    size_t n;

    if (f == NULL)
        fail("%s: %s", path, strerror(errno));
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        buffer_add(&b, chunk, n);
    if (ferror(f))
        fail("%s: read error", path);
    fclose(f);
    if (b.data == NULL)
        buffer_add(&b, "", 0);
    return b.data;
}

/* ---- HTTP requests (libcurl's multi interface) ---------------------------------- */

/* A request that fails for a reason that may pass is made again, as the
 * providers' own SDKs do (openai-python's _base_client.py, _should_retry
 * and _calculate_retry_timeout; Anthropic's SDKs alike): a transport
 * failure, or HTTP 408, 409, 429 or any 5xx (Anthropic's 529 "overloaded"
 * too), at most --max-retries more times; any other 4xx is final, as the
 * request itself is at fault. The header x-should-retry ("true" or
 * "false"), which both providers may send, overrides the status. The wait
 * is what the reply asks in retry-after-ms, or in retry-after, as seconds
 * or as an HTTP-date (RFC 9110, 10.2.3), when that is above zero and at
 * most --max-retry-wait (longer ends the session at once, saying so);
 * else --retry-delay-ms doubled per attempt up to MAX_BACKOFF_MS, less up
 * to a quarter at random, so that clients refused together do not come
 * back together. The registry is driven, and stdin read, meanwhile. */
#define MAX_BACKOFF_MS 8000

typedef struct transfer {
    CURL *easy;
    struct curl_slist *headers;
    char *body; /* the request body: libcurl does not copy it */
    buffer response;
    int attempts;          /* made so far */
    long long retry_at;    /* CLOCK_MONOTONIC ms of the next attempt, 0: none due */
    bool done;             /* the last attempt's outcome is final */
    CURLcode result;       /* the last attempt's */
    struct transfer *next; /* the agent's transfers under way */
} transfer;

typedef struct agent {
    enum provider provider;
    const char *url, *key, *model, *system;
    int max_steps, max_tokens;
    int max_retries;          /* attempts after the first */
    long retry_delay_ms;      /* the first backoff */
    long max_retry_wait_ms;   /* the longest retry-after honoured */
    long timeout_ms;          /* one attempt, connection to reply */
    jpt_registry *r;
    CURLM *multi;
    transfer *transfers; /* under way or waiting to be tried again */
    json_t *tools;       /* the tool list in the provider's dialect */
    json_t *messages;    /* the conversation, in the provider's shape */
    size_t settled;      /* messages[0, settled) has no tool call without its result */
    jpt_batch *turn_end; /* the last turn end's, until the next user message */

    /* Questions from the inquiry handler, answered one at a time. */
    jpt_inquiry **queued;
    size_t nqueued;
    jpt_inquiry *asking;
    transfer *question; /* the structured call answering `asking` */

    buffer input; /* stdin, up to the next newline */
    bool eof;
    bool want_line; /* a user message is awaited */
} agent;

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
    buffer_add(ud, p, size * n);
    return size * n;
}

static void start_attempt(agent *a, transfer *t)
{
    t->response.len = 0;
    if (t->response.data != NULL)
        t->response.data[0] = '\0';
    t->attempts++;
    t->retry_at = 0;
    if (curl_multi_add_handle(a->multi, t->easy) != CURLM_OK)
        fail("curl_multi_add_handle failed");
}

/* Starts a POST of `body` (which it takes) to the provider. */
static transfer *post(agent *a, char *body)
{
    transfer *t = xrealloc(NULL, sizeof(*t));
    char header[4096];

    memset(t, 0, sizeof(*t));
    t->body = body;
    t->easy = curl_easy_init();
    if (t->easy == NULL)
        fail("curl_easy_init failed");
    t->headers = curl_slist_append(NULL, "Content-Type: application/json");
    if (a->provider == ANTHROPIC) {
        t->headers = curl_slist_append(t->headers, "anthropic-version: 2023-06-01");
        if (a->key != NULL) {
            snprintf(header, sizeof(header), "x-api-key: %s", a->key);
            t->headers = curl_slist_append(t->headers, header);
        }
    } else if (a->key != NULL) {
        snprintf(header, sizeof(header), "Authorization: Bearer %s", a->key);
        t->headers = curl_slist_append(t->headers, header);
    }
    curl_easy_setopt(t->easy, CURLOPT_URL, a->url);
    curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDS, t->body);
    curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(t->easy, CURLOPT_WRITEDATA, &t->response);
    curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t);
    curl_easy_setopt(t->easy, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(t->easy, CURLOPT_TIMEOUT_MS, a->timeout_ms);
    curl_easy_setopt(t->easy, CURLOPT_NOSIGNAL, 1L);
    t->next = a->transfers;
    a->transfers = t;
    start_attempt(a, t);
    return t;
}

/* Failures of the way there, which a new attempt may not meet. */
static bool transport_may_pass(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return true;
    default:
        return false;
    }
}

/* The value of the reply's header `name`, or NULL. */
static const char *header_value(CURL *easy, const char *name)
{
    struct curl_header *h;

    if (curl_easy_header(easy, name, 0, CURLH_HEADER, -1, &h) != CURLHE_OK)
        return NULL;
    return h->value;
}

/* A number of `unit` ms as the whole header holds it ("2", "1.5"), in ms. */
static bool header_number(const char *text, double unit, double *ms)
{
    char *end;
    double v;

    if (text == NULL || *text == '\0')
        return false;
    errno = 0;
    v = strtod(text, &end);
    while (*end == ' ' || *end == '\t')
        end++;
    if (*end != '\0' || errno != 0 || !(v >= 0) || v > 1e12)
        return false;
    *ms = v * unit;
    return true;
}

/* How long the reply asks to wait before the next attempt, in ms (an
 * HTTP-date in the past: 0); false when it does not say. */
static bool asked_wait(CURL *easy, double *ms)
{
    const char *after = header_value(easy, "retry-after");

    if (header_number(header_value(easy, "retry-after-ms"), 1, ms) ||
        header_number(after, 1000, ms))
        return true;
    /* curl_getdate() reads the three forms RFC 9110 5.6.7 names. */
    time_t when = after != NULL ? curl_getdate(after, NULL) : -1;
    if (when == -1)
        return false;
    *ms = when > time(NULL) ? (double)(when - time(NULL)) * 1000 : 0;
    return true;
}

/* Whether a failed attempt is worth another, by its status (0: none). */
static bool status_may_pass(CURL *easy, long status)
{
    const char *should = header_value(easy, "x-should-retry");

    if (should != NULL && strcmp(should, "true") == 0)
        return true;
    if (should != NULL && strcmp(should, "false") == 0)
        return false;
    return status == 408 || status == 409 || status == 429 || status >= 500;
}

static double backoff_ms(const agent *a, int attempts)
{
    double ms = (double)a->retry_delay_ms;

    for (int i = 1; i < attempts && ms < MAX_BACKOFF_MS; i++)
        ms *= 2;
    if (ms > MAX_BACKOFF_MS && a->retry_delay_ms <= MAX_BACKOFF_MS)
        ms = MAX_BACKOFF_MS;
    return ms * (1 - 0.25 * drand48());
}

/* An attempt has ended: the transfer is done, or waits for its next one. */
static void attempt_ended(agent *a, transfer *t, CURLcode result)
{
    long status = 0;
    char what[128];
    double wait;

    curl_multi_remove_handle(a->multi, t->easy);
    t->result = result;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    if (result == CURLE_OK && status >= 200 && status <= 299) {
        t->done = true;
        return;
    }
    if (result != CURLE_OK)
        snprintf(what, sizeof(what), "%s", curl_easy_strerror(result));
    else
        snprintf(what, sizeof(what), "HTTP %ld", status);
    if (t->attempts > a->max_retries ||
        !(result != CURLE_OK ? transport_may_pass(result) : status_may_pass(t->easy, status))) {
        t->done = true;
        return;
    }
    bool asked = result == CURLE_OK && asked_wait(t->easy, &wait);
    if (asked && wait > (double)a->max_retry_wait_ms) {
        fprintf(stderr, "[%s from the provider, which asks to wait %.0f s: more than "
                        "--max-retry-wait allows, so no retry]\n", what, wait / 1000);
        t->done = true;
        return;
    }
    /* Zero, or a date past, says nothing of how long the load lasts. */
    bool honoured = asked && wait > 0;
    if (!honoured)
        wait = backoff_ms(a, t->attempts);
    fprintf(stderr, "[%s from the provider: attempt %d of %d in %.3f s%s]\n", what,
            t->attempts + 1, a->max_retries + 1, wait / 1000, honoured ? ", as it asked" : "");
    t->retry_at = now_ms() + (long long)wait;
    if (t->retry_at == 0)
        t->retry_at = 1;
}

/* The milliseconds until the next retry is due (-1: none waits). */
static int retry_timeout(const agent *a)
{
    long long next = 0;

    for (const transfer *t = a->transfers; t != NULL; t = t->next)
        if (t->retry_at != 0 && (next == 0 || t->retry_at < next))
            next = t->retry_at;
    if (next == 0)
        return -1;
    long long left = next - now_ms();
    return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

static void start_due_retries(agent *a)
{
    long long now = now_ms();

    for (transfer *t = a->transfers; t != NULL; t = t->next)
        if (t->retry_at != 0 && t->retry_at <= now)
            start_attempt(a, t);
}

/* The finished transfer's JSON reply; fails on a transport or HTTP error. */
static json_t *reply_of(agent *a, transfer *t)
{
    long status = 0;
    char attempts[64] = "";

    if (t->attempts > 1)
        snprintf(attempts, sizeof(attempts), " (after %d attempts)", t->attempts);
    if (t->result != CURLE_OK)
        fail("%s: %s%s", a->url, curl_easy_strerror(t->result), attempts);
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status > 299)
        fail("%s: HTTP %ld%s: %s", a->url, status, attempts,
             t->response.data ? t->response.data : "");
    return xloads(t->response.data != NULL ? t->response.data : "", "the provider's reply");
}

static void transfer_free(agent *a, transfer *t)
{
    for (transfer **p = &a->transfers; *p != NULL; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            break;
        }
    curl_multi_remove_handle(a->multi, t->easy);
    curl_easy_cleanup(t->easy);
    curl_slist_free_all(t->headers);
    free(t->body);
    free(t->response.data);
    free(t);
}

/* ---- The host's loop --------------------------------------------------------------- */

static bool line_ready(const agent *a)
{
    return a->eof || (a->input.len > 0 && memchr(a->input.data, '\n', a->input.len) != NULL);
}

static bool wants_stdin(const agent *a)
{
    bool user_question = a->asking != NULL && jpt_inquiry_target(a->asking) == JPT_TARGET_USER;
    return !a->eof && (a->want_line || user_question) && !line_ready(a);
}

static void read_stdin(agent *a)
{
    char chunk[4096];
    ssize_t n = read(STDIN_FILENO, chunk, sizeof(chunk));

    if (n < 0 && errno != EINTR && errno != EAGAIN)
        fail("reading stdin: %s", strerror(errno));
    if (n == 0)
        a->eof = true;
    if (n > 0)
        buffer_add(&a->input, chunk, (size_t)n);
}

/* Takes the next line of stdin (without its newline), or NULL at the end. */
static char *take_line(agent *a)
{
    char *nl = a->input.len > 0 ? memchr(a->input.data, '\n', a->input.len) : NULL;
    size_t n = nl != NULL ? (size_t)(nl - a->input.data) : a->input.len;
    char *line;

    if (nl == NULL && n == 0)
        return NULL;
    line = strndup(a->input.data, n);
    if (line == NULL)
        fail("out of memory");
    if (nl != NULL)
        n++;
    memmove(a->input.data, a->input.data + n, a->input.len - n);
    a->input.len -= n;
    return line;
}

/* One wait: libcurl's sockets, the registry's fd and, when a line is
 * wanted, stdin; then whatever is ready: transfers, input, the registry. */
static void pump(agent *a)
{
    struct curl_waitfd fds[2] = {
        {.fd = jpt_registry_get_fd(a->r), .events = CURL_WAIT_POLLIN},
        {.fd = STDIN_FILENO, .events = CURL_WAIT_POLLIN},
    };
    unsigned nfds = wants_stdin(a) ? 2 : 1;
    int timeout = jpt_registry_get_timeout(a->r), retry = retry_timeout(a);
    int running, rc;
    CURLMsg *msg;

    if (timeout < 0 || (retry >= 0 && retry < timeout))
        timeout = retry;
    /* libcurl shortens the wait for its own timers. */
    if (curl_multi_poll(a->multi, fds, nfds, timeout < 0 ? INT_MAX : timeout, NULL) != CURLM_OK)
        fail("curl_multi_poll failed");
    if (curl_multi_perform(a->multi, &running) != CURLM_OK)
        fail("curl_multi_perform failed");
    while ((msg = curl_multi_info_read(a->multi, &rc)) != NULL) {
        transfer *t = NULL;
        if (msg->msg != CURLMSG_DONE)
            continue;
        /* Taken first: removing the handle ends `msg`. */
        CURLcode result = msg->data.result;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
        attempt_ended(a, t, result);
    }
    start_due_retries(a);
    /* libcurl reports a hang-up (the end of a pipe) as readable too. */
    if (nfds == 2 && (fds[1].revents & CURL_WAIT_POLLIN) != 0)
        read_stdin(a);
    while ((rc = jpt_registry_dispatch(a->r)) > 0)
        ;
    if (rc < 0)
        fail("dispatch: %s", jpt_strerror(rc));
}

/* ---- Questions from the tools ----------------------------------------------------- */

/* The inquiry handler: questions are answered from the loop, one at a time
 * (the call waits meanwhile, registry.h). */
static void on_inquiry(jpt_inquiry *q, void *ud)
{
    agent *a = ud;

    a->queued = xrealloc(a->queued, (a->nqueued + 1) * sizeof(*a->queued));
    a->queued[a->nqueued++] = q;
}

static void append_user_text(agent *a, json_t *messages, const char *text);
static char *request_body(agent *a, json_t *messages, json_t *tools, json_t *tool_choice);

/* The prompt of a structured call: what the tool showed, and its question. */
static char *question_prompt(jpt_inquiry *q)
{
    jpt_render_options opts = {sizeof(opts), NULL};
    char *context = NULL, *prompt = NULL;
    const jpt_state *shown = jpt_inquiry_context(q);
    int n;

    if (jpt_state_block_count(shown) > 0 && jpt_state_render(shown, &opts, &context) != JPT_OK)
        fail("rendering a question's context failed");
    if (jpt_inquiry_tool(q) != NULL)
        n = asprintf(&prompt,
                     "The tool `%s` (call %s) asks a question that you must answer now, "
                     "with the answer tool.%s%s\nThe question, with the JSON Schema the "
                     "answer must fit: %s",
                     jpt_inquiry_tool(q), jpt_inquiry_call_id(q),
                     context != NULL ? "\nIt showed before asking:\n" : "",
                     context != NULL ? context : "", jpt_inquiry_question_json(q));
    else
        n = asprintf(&prompt,
                     "Your turn is ending while tools still run. Answer with the answer "
                     "tool.\nThe question, with the JSON Schema the answer must fit: %s",
                     jpt_inquiry_question_json(q));
    jpt_free(context);
    if (n < 0)
        fail("out of memory");
    return prompt;
}

/* Asks the model, with the conversation so far (without an assistant
 * message whose calls still run: the provider would refuse it) and a
 * forced `answer` tool whose input is {"answer": what the question asks}.
 * Forced as each provider documents it: OpenAI's tool_choice {"type":
 * "function", "function": {"name"}} (the SDK's
 * ChatCompletionNamedToolChoice), Anthropic's {"type": "tool", "name"}
 * ("Tool choice", platform.claude.com/cookbook/tool-use-tool-choice). */
static transfer *ask_model(agent *a, jpt_inquiry *q)
{
    json_t *question = xloads(jpt_inquiry_question_json(q), "the question");
    json_t *schema = json_object_get(question, "schema");
    /* No schema: any answer. */
    json_t *answer = schema != NULL ? json_incref(schema) : json_object();
    json_t *input = json_pack("{s:s, s:{s:o}, s:[s]}", "type", "object", "properties", "answer",
                              answer, "required", "answer");
    json_t *messages = json_array(), *tools, *choice;
    char *prompt = question_prompt(q);
    static const char description[] = "Your answer to the tool's question";

    for (size_t i = 0; i < a->settled; i++)
        json_array_append(messages, json_array_get(a->messages, i));
    append_user_text(a, messages, prompt);
    free(prompt);
    if (a->provider == OPENAI) {
        tools = json_pack("[{s:s, s:{s:s, s:s, s:O}}]", "type", "function", "function", "name",
                          "answer", "description", description, "parameters", input);
        choice = json_pack("{s:s, s:{s:s}}", "type", "function", "function", "name", "answer");
    } else {
        tools = json_pack("[{s:s, s:s, s:O}]", "name", "answer", "description", description,
                          "input_schema", input);
        choice = json_pack("{s:s, s:s}", "type", "tool", "name", "answer");
    }
    transfer *t = post(a, request_body(a, messages, tools, choice));
    json_decref(question);
    json_decref(input);
    json_decref(messages);
    json_decref(tools);
    json_decref(choice);
    return t;
}

/* The `answer` the model gave in its forced tool call, or NULL. */
static json_t *model_answer(agent *a, json_t *reply)
{
    json_t *input = NULL, *answer = NULL;

    if (a->provider == OPENAI) {
        json_t *message = json_object_get(json_array_get(json_object_get(reply, "choices"), 0),
                                          "message");
        json_t *call = json_array_get(json_object_get(message, "tool_calls"), 0);
        const char *args = json_string_value(
            json_object_get(json_object_get(call, "function"), "arguments"));
        input = args != NULL ? json_loads(args, 0, NULL) : NULL;
    } else {
        size_t i;
        json_t *block;
        json_array_foreach(json_object_get(reply, "content"), i, block) {
            const char *type = json_string_value(json_object_get(block, "type"));
            if (type == NULL || strcmp(type, "tool_use") != 0)
                continue;
            input = json_incref(json_object_get(block, "input"));
            break;
        }
    }
    answer = json_incref(json_object_get(input, "answer"));
    json_decref(input);
    return answer;
}

static void answer_with(jpt_inquiry *q, const char *answer_json)
{
    int rc = jpt_inquiry_answer(q, answer_json);

    if (rc == JPT_ERR_INVALID || rc == JPT_ERR_STATE || rc == JPT_ERR_NOMEM) {
        fprintf(stderr, "[answer refused: %s]\n", jpt_inquiry_errmsg(q));
        jpt_inquiry_cancel(q, jpt_inquiry_errmsg(q));
    }
}

static void show_question(jpt_inquiry *q)
{
    json_t *question = xloads(jpt_inquiry_question_json(q), "the question");
    fprintf(stderr, "[question for you%s%s] %s\n(answer as JSON, or as plain text)\n",
            jpt_inquiry_tool(q) != NULL ? " from " : "",
            jpt_inquiry_tool(q) != NULL ? jpt_inquiry_tool(q) : "",
            json_string_value(json_object_get(question, "text")));
    json_decref(question);
}

/* Moves the questions on: asks the next, delivers an answer that came. */
static void serve_questions(agent *a)
{
    if (a->asking == NULL && a->nqueued > 0) {
        a->asking = a->queued[0];
        memmove(a->queued, a->queued + 1, --a->nqueued * sizeof(*a->queued));
        if (jpt_inquiry_target(a->asking) == JPT_TARGET_ASSISTANT) {
            fprintf(stderr, "[question for the model] %s\n", jpt_inquiry_question_json(a->asking));
            a->question = ask_model(a, a->asking);
        } else
            show_question(a->asking);
    }
    if (a->asking == NULL)
        return;
    if (a->question != NULL && a->question->done) {
        json_t *reply = reply_of(a, a->question);
        json_t *answer = model_answer(a, reply);
        if (answer != NULL) {
            char *text = xdump(answer);
            fprintf(stderr, "[the model answers] %s\n", text);
            answer_with(a->asking, text);
            free(text);
        } else
            jpt_inquiry_cancel(a->asking, "the model gave no answer");
        json_decref(answer);
        json_decref(reply);
        transfer_free(a, a->question);
        a->question = NULL;
        a->asking = NULL;
    } else if (a->question == NULL && line_ready(a)) {
        char *line = take_line(a);
        if (line == NULL)
            jpt_inquiry_cancel(a->asking, "no one is there to answer (stdin is closed)");
        else {
            /* Plain text answers a question that asks for a string. */
            json_t *answer = json_loads(line, JSON_DECODE_ANY, NULL);
            if (answer == NULL)
                answer = json_string(line);
            char *text = xdump(answer);
            answer_with(a->asking, text);
            free(text);
            json_decref(answer);
        }
        free(line);
        a->asking = NULL;
    }
}

typedef bool (*condition)(agent *a, const void *what);

static void loop_until(agent *a, condition done, const void *what)
{
    for (;;) {
        serve_questions(a);
        if (done(a, what))
            return;
        pump(a);
    }
}

static bool batch_done(agent *a, const void *b)
{
    (void)a;
    return jpt_batch_done(b);
}

static bool transfer_done(agent *a, const void *t)
{
    (void)a;
    return ((const transfer *)t)->done;
}

static bool have_line(agent *a, const void *unused)
{
    (void)unused;
    return line_ready(a);
}

/* ---- The provider's wire format ------------------------------------------------------ */

/* Appends a user message; for Anthropic, text after another user message
 * (tool results) joins it, as the API wants roles to alternate. */
static void append_user_text(agent *a, json_t *messages, const char *text)
{
    size_t n = json_array_size(messages);
    json_t *last = n > 0 ? json_array_get(messages, n - 1) : NULL;
    const char *role = json_string_value(json_object_get(last, "role"));

    if (a->provider == ANTHROPIC && role != NULL && strcmp(role, "user") == 0) {
        /* A copy: the message may be shared with the history. */
        json_t *merged = json_deep_copy(last);
        json_t *content = json_object_get(merged, "content");
        if (json_is_string(content)) {
            content = json_pack("[{s:s, s:O}]", "type", "text", "text", content);
            json_object_set_new(merged, "content", content);
        }
        json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", text));
        json_array_set_new(messages, n - 1, merged);
        return;
    }
    json_array_append_new(messages, json_pack("{s:s, s:s}", "role", "user", "content", text));
}

static char *request_body(agent *a, json_t *messages, json_t *tools, json_t *tool_choice)
{
    json_t *req = json_pack("{s:s}", "model", a->model);
    char *body;

    if (a->provider == OPENAI) {
        json_t *all = json_pack("[{s:s, s:s}]", "role", "system", "content", a->system);
        json_array_extend(all, messages);
        json_object_set_new(req, "messages", all);
        /* OpenAI's API reference (chat/create): max_tokens "is now
         * deprecated in favor of max_completion_tokens, and is not
         * compatible with o-series models", which refuse it. */
        if (a->max_tokens > 0)
            json_object_set_new(req, "max_completion_tokens", json_integer(a->max_tokens));
    } else {
        int max_tokens = a->max_tokens > 0 ? a->max_tokens : 4096; /* Anthropic requires it */
        json_object_set_new(req, "max_tokens", json_integer(max_tokens));
        json_object_set_new(req, "system", json_string(a->system));
        json_object_set(req, "messages", messages);
    }
    if (json_array_size(tools) > 0)
        json_object_set(req, "tools", tools);
    if (tool_choice != NULL)
        json_object_set(req, "tool_choice", tool_choice);
    body = xdump(req);
    json_decref(req);
    return body;
}

/* From a reply: the assistant message to keep, its text, and its tool
 * calls as the provider sent them (NULL when there are none). */
static json_t *assistant_message(agent *a, json_t *reply, json_t **calls, const char **text)
{
    json_t *message;

    *calls = NULL;
    *text = NULL;
    if (a->provider == OPENAI) {
        json_t *choice = json_array_get(json_object_get(reply, "choices"), 0);
        json_t *m = json_object_get(choice, "message");
        json_t *content = json_object_get(m, "content");
        json_t *tool_calls = json_object_get(m, "tool_calls");
        if (!json_is_object(m))
            fail("the reply has no choices[0].message");
        /* Only what the API takes back: role, content, tool_calls. */
        message = json_pack("{s:s, s:O}", "role", "assistant", "content",
                            content != NULL ? content : json_null());
        if (json_array_size(tool_calls) > 0) {
            json_object_set(message, "tool_calls", tool_calls);
            *calls = tool_calls;
        }
        *text = json_string_value(content);
        return message;
    }
    json_t *content = json_object_get(reply, "content");
    size_t i;
    json_t *block;
    if (!json_is_array(content))
        fail("the reply has no content array");
    /* The content goes back verbatim (thinking blocks and all); submit
     * skips what is not a tool_use. */
    message = json_pack("{s:s, s:O}", "role", "assistant", "content", content);
    json_array_foreach(content, i, block) {
        const char *type = json_string_value(json_object_get(block, "type"));
        if (type != NULL && strcmp(type, "tool_use") == 0)
            *calls = content;
        else if (type != NULL && strcmp(type, "text") == 0 && *text == NULL)
            *text = json_string_value(json_object_get(block, "text"));
    }
    return message;
}

/* Appends a finished batch's results in the provider's shape, after the
 * assistant message whose calls they answer: OpenAI's one `tool` message
 * per call, {"role": "tool", "tool_call_id", "content"} (the SDK's
 * ChatCompletionToolMessageParam, all three required); Anthropic's one
 * user message of `tool_result` blocks, {"type": "tool_result",
 * "tool_use_id", "content", "is_error"} ("Handle tool calls",
 * platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls).
 * jpt_batch_results_json_as(JPT_DIALECT_AS_CALLED) gives both. */
static void append_results(agent *a, jpt_batch *b)
{
    char *text = NULL;

    if (jpt_batch_results_json_as(b, JPT_DIALECT_AS_CALLED, &text) != JPT_OK)
        fail("reading the results failed");
    json_t *results = xloads(text, "the results");
    jpt_free(text);
    if (a->provider == OPENAI)
        json_array_extend(a->messages, results); /* one `tool` message per call */
    else
        json_array_append_new(a->messages,
                              json_pack("{s:s, s:O}", "role", "user", "content", results));
    json_decref(results);
}

static void show_results(jpt_batch *b)
{
    char *text = NULL;
    size_t i;
    json_t *r;

    if (jpt_batch_results_json(b, &text) != JPT_OK)
        fail("reading the results failed");
    json_t *results = xloads(text, "the results");
    jpt_free(text);
    json_array_foreach(results, i, r) {
        fprintf(stderr, "[tool %s%s] %.300s\n", json_string_value(json_object_get(r, "id")),
                json_is_true(json_object_get(r, "is_error")) ? ", error" : "",
                json_string_value(json_object_get(r, "content")));
    }
    json_decref(results);
}

/* ---- Turns -------------------------------------------------------------------------- */

/* The user's message, after what the tools left since the last turn:
 * their notifications and the turn end's results, as text. */
static void start_turn(agent *a, const char *line)
{
    char *left = NULL, *text = NULL;

    if (jpt_registry_take_turn_text(a->r, a->turn_end, &left) != JPT_OK)
        fail("take_turn_text: %s", jpt_registry_errmsg(a->r));
    jpt_batch_free(a->turn_end);
    a->turn_end = NULL;
    if (asprintf(&text, "%s%s", left, line) < 0)
        fail("out of memory");
    jpt_free(left);
    append_user_text(a, a->messages, text);
    a->settled = json_array_size(a->messages);
    free(text);
}

/* One model reply, and its tool calls run: false once it has none. */
static bool step(agent *a)
{
    transfer *t = post(a, request_body(a, a->messages, a->tools, NULL));
    json_t *reply, *calls, *message;
    const char *text;
    jpt_batch *b;

    loop_until(a, transfer_done, t);
    reply = reply_of(a, t);
    transfer_free(a, t);
    message = assistant_message(a, reply, &calls, &text);
    if (text != NULL)
        printf("%s\n", text);
    fflush(stdout);
    json_array_append_new(a->messages, message);
    if (calls == NULL) {
        a->settled = json_array_size(a->messages);
        json_decref(reply);
        return false;
    }
    /* The message's calls, as they came, are one batch. */
    char *calls_json = xdump(calls);
    json_decref(reply);
    if (jpt_registry_submit(a->r, calls_json, &b) != JPT_OK)
        fail("submit: %s", jpt_registry_errmsg(a->r));
    free(calls_json);
    loop_until(a, batch_done, b);
    show_results(b);
    append_results(a, b);
    jpt_batch_free(b);
    a->settled = json_array_size(a->messages);
    return true;
}

/* The turn end: each live handle meets its tool's policy; the results of
 * handles waited for go to the model with the next user message. */
static void end_turn(agent *a)
{
    if (jpt_registry_end_turn(a->r, 0, &a->turn_end) != JPT_OK)
        fail("end_turn: %s", jpt_registry_errmsg(a->r));
    loop_until(a, batch_done, a->turn_end);
}

static void run_turn(agent *a, const char *line)
{
    start_turn(a, line);
    for (int i = 0; i < a->max_steps && step(a); i++)
        ;
    end_turn(a);
}

/* ---- Setting up ---------------------------------------------------------------------- */

__attribute__((noreturn)) static void usage(void)
{
    fputs("usage: llm-agent --provider openai|anthropic --model MODEL [--tools FILE]\n"
          "                 [--root DIR] [--system TEXT] [--max-steps N] [--max-tokens N]\n"
          "                 [--max-retries N] [--retry-delay-ms MS] [--max-retry-wait S]\n"
          "                 [--timeout S]\n"
          "Each line on stdin is a user message. Environment: OPENAI_BASE_URL,\n"
          "OPENAI_API_KEY; ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY.\n",
          stderr);
    exit(2);
}

/* An option's whole value as a number from `min` to `max`. */
static long number(const char *opt, const char *val, long min, long max)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(val, &end, 10);
    if (errno != 0 || end == val || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "llm-agent: %s takes a whole number from %ld to %ld, not \"%s\"\n",
                opt, min, max, val);
        usage();
    }
    return v;
}

static char *endpoint(enum provider p)
{
    const char *base = getenv(p == OPENAI ? "OPENAI_BASE_URL" : "ANTHROPIC_BASE_URL");
    char *url;

    if (base == NULL || *base == '\0')
        base = p == OPENAI ? "https://api.openai.com/v1" : "https://api.anthropic.com";
    size_t n = strlen(base);
    while (n > 0 && base[n - 1] == '/')
        n--;
    const char *path = p == OPENAI ? "/chat/completions" : "/v1/messages";
    if (asprintf(&url, "%.*s%s", (int)n, base, path) < 0)
        fail("out of memory");
    return url;
}

static void setup(agent *a, const char *tools_file, const char *root)
{
    jpt_registry_options opts = {.size = sizeof(opts), .root = root};
    char *config = tools_file != NULL ? read_file(tools_file) : NULL;
    char *list = NULL;

    if (jpt_registry_new(&opts, &a->r) != JPT_OK)
        fail("cannot create the registry (is --root a directory?)");
    if (jpt_registry_load_tools(a->r, config != NULL ? config : DEFAULT_TOOLS, 0) != JPT_OK)
        fail("%s: %s", tools_file != NULL ? tools_file : "the default tools",
             jpt_registry_errmsg(a->r));
    free(config);
    int dialect = a->provider == OPENAI ? JPT_DIALECT_OPENAI : JPT_DIALECT_ANTHROPIC;
    if (jpt_registry_tools_json(a->r, dialect, &list) != JPT_OK)
        fail("tools_json failed");
    a->tools = xloads(list, "the tool list");
    jpt_free(list);
    jpt_registry_set_inquiry_handler(a->r, on_inquiry, a);
    a->multi = curl_multi_init();
    a->messages = json_array();
    if (a->multi == NULL || a->messages == NULL)
        fail("out of memory");
}

/* Closing without blocking on a tool that ignores SIGTERM: keep driving
 * until every process is reaped. */
static void teardown(agent *a)
{
    /* The registry frees the questions it still holds. */
    free(a->queued);
    a->queued = NULL;
    a->nqueued = 0;
    a->asking = NULL;
    if (a->question != NULL)
        transfer_free(a, a->question);
    a->question = NULL;
    jpt_batch_free(a->turn_end);
    while (jpt_registry_shutdown(a->r) == JPT_ERR_AGAIN)
        pump(a);
    jpt_registry_free(a->r);
    curl_multi_cleanup(a->multi);
    json_decref(a->tools);
    json_decref(a->messages);
    free(a->input.data);
}

int main(int argc, char **argv)
{
    agent a = {.provider = OPENAI,
               .max_steps = 20,
               .system = DEFAULT_SYSTEM,
               .max_retries = 4,
               .retry_delay_ms = 500,
               .max_retry_wait_ms = 60 * 1000,
               .timeout_ms = 600 * 1000};
    const char *provider = NULL, *tools_file = NULL, *root = NULL;
    char *url;

    if (argc % 2 == 0)
        usage(); /* every option takes a value */
    for (int i = 1; i < argc; i += 2) {
        const char *opt = argv[i], *val = argv[i + 1];
        if (strcmp(opt, "--provider") == 0)
            provider = val;
        else if (strcmp(opt, "--model") == 0)
            a.model = val;
        else if (strcmp(opt, "--tools") == 0)
            tools_file = val;
        else if (strcmp(opt, "--root") == 0)
            root = val;
        else if (strcmp(opt, "--system") == 0)
            a.system = val;
        else if (strcmp(opt, "--max-steps") == 0)
            a.max_steps = (int)number(opt, val, 1, INT_MAX);
        else if (strcmp(opt, "--max-tokens") == 0)
            a.max_tokens = (int)number(opt, val, 1, INT_MAX);
        else if (strcmp(opt, "--max-retries") == 0)
            a.max_retries = (int)number(opt, val, 0, 100);
        else if (strcmp(opt, "--retry-delay-ms") == 0)
            a.retry_delay_ms = number(opt, val, 0, 3600 * 1000);
        else if (strcmp(opt, "--max-retry-wait") == 0)
            a.max_retry_wait_ms = number(opt, val, 0, 24 * 3600) * 1000;
        else if (strcmp(opt, "--timeout") == 0)
            a.timeout_ms = number(opt, val, 1, 24 * 3600) * 1000;
        else
            usage();
    }
    if (provider == NULL || a.model == NULL)
        usage();
    if (strcmp(provider, "openai") == 0)
        a.provider = OPENAI;
    else if (strcmp(provider, "anthropic") == 0)
        a.provider = ANTHROPIC;
    else
        usage();
    a.key = getenv(a.provider == OPENAI ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY");
    if (a.key != NULL && *a.key == '\0')
        a.key = NULL;
    a.url = url = endpoint(a.provider);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        fail("curl_global_init failed");
    srand48((long)time(NULL) ^ (long)getpid()); /* the backoff's jitter */

    setup(&a, tools_file, root);
    for (;;) {
        char *line;
        a.want_line = true;
        loop_until(&a, have_line, NULL);
        a.want_line = false;
        if ((line = take_line(&a)) == NULL)
            break;
        if (*line != '\0')
            run_turn(&a, line);
        free(line);
    }
    teardown(&a);
    curl_global_cleanup();
    free(url);
    return 0;
}
