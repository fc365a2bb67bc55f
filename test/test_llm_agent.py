"""Tests of examples/llm-agent against a local replay server.

    python3 test_llm_agent.py LLM_AGENT_EXE

Registered by test/meson.build (suite "examples"). For each provider
(OpenAI Chat Completions, Anthropic Messages) the server replays a
transcript of that provider's API, in its documented shape: a message with
two spawns and an await in one batch; then background spawns and a tool
that fails; then a tool that asks the assistant a question (which the agent
puts to the model as a structured call); a final answer; the turn end's
question for the handle still running, answered "wait"; and a second turn
whose user message carries the notification a background handle left and,
as plain text, the result of the handle the turn end waited for. On the
way the provider refuses requests as it does under load — 429 with
retry-after-ms or retry-after in seconds, 503 or 529 with retry-after as an
HTTP-date, a 500 without one, a connection closed without a reply — and the
agent must make the same request again after the wait asked for, or its
backoff.

Every request body the agent sends is checked exactly against what the
provider's API documents: its keys; the conversation, message by message
(each assistant message sent back as it came; one result per call in the
provider's tool-result shape: OpenAI's {"role": "tool", "tool_call_id",
"content"} (the SDK's ChatCompletionToolMessageParam), Anthropic's
tool_result blocks with tool_use_id and is_error in one user message
("Handle tool calls", platform.claude.com/docs/en/agents-and-tools/
tool-use/handle-tool-calls)); OpenAI's max_completion_tokens, never the
max_tokens o-series models refuse (API reference, chat/create); the tool
list's shape; the forced tool choice of the structured calls; a retry's
body byte for byte the same as the first attempt's. Standard library only;
exits non-zero on any failure.
"""

import email.utils
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llm_replay_server import HANGUP, ReplayServer, Reply  # noqa: E402

if len(sys.argv) < 2:
    sys.exit("usage: test_llm_agent.py LLM_AGENT_EXE")
EXE = os.path.abspath(sys.argv.pop(1))

SYSTEM = "You are the replay test's agent."
MODEL = "replay-model-1"
KEY = "test-key"
MAX_TOKENS = 1000
# The first backoff, short so that the test does not wait long.
RETRY_DELAY_MS = 20

# The tool that asks: JP's legacy needs_input until the answer is in its
# {{tool}} JSON.
DEPLOY_SCRIPT = ("case \"$1\" in *'\"confirm\":true'*) echo deployed;; "
                 "*) echo '{\"type\":\"needs_input\",\"question\":{\"id\":\"confirm\","
                 "\"text\":\"Deploy to production?\",\"answer_type\":\"Boolean\"}}';; esac")

TOOLS = {"tools": [
    {"name": "run", "description": "Runs a command as a handle", "stateful": True,
     "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                    "required": ["command"]},
     "command": ["sh", "-c", "{{arguments.command}}"],
     "spawn": {"lifecycle": {"on_turn_end": "await"}}},
    # A handle that runs until released; at the turn end its tool's policy
    # (the default, "inquire") asks the model what to do with it.
    {"name": "watch", "description": "Watches for a line", "stateful": True,
     "command": ["sh", "-c", "read line < watch.fifo; echo \"watched $line\""]},
    {"name": "check", "description": "Checks the code",
     "command": ["sh", "-c", "echo 'src/main.c:3: missing semicolon' >&2; exit 2"]},
    {"name": "deploy", "description": "Deploys, after asking",
     "question_target": "assistant", "command": ["sh", "-c", DEPLOY_SCRIPT, "sh", "{{tool}}"]},
]}
TOOL_NAMES = ["run", "watch", "check", "deploy", "await"]

FIRST = "Check the project, then deploy."
SECOND = "Did the build finish?"
# The background build waits for this FIFO, written once the model has
# seen its spawn: its output and its end come after, while no one watches.
BUILD = "read line < release.fifo; echo \"build $line\""

CHECK_ERROR = ("Error: The tool failed (exit status 2).\n\nstderr:\n"
               "src/main.c:3: missing semicolon\n")
DONE = "Tests and lint pass, main.c has an error; deployed."
FINAL = "Yes: build ok."

# The calls of each assistant message, as (id, name, arguments).
CALLS_1 = [("call_tests", "run", {"action": "spawn", "id": "tests", "command": "echo 12 passed"}),
           ("call_lint", "run", {"action": "spawn", "id": "lint", "command": "echo 0 warnings"}),
           ("call_await", "await", {"all": ["tests", "lint"]})]
CALLS_2 = [("call_build", "run", {"action": "spawn", "id": "build", "command": BUILD}),
           ("call_check", "check", {}),
           ("call_watch", "watch", {"action": "spawn", "id": "watch"})]
CALLS_3 = [("call_deploy", "deploy", {})]
ANSWER_CALL = [("call_answer", "answer", {"answer": True})]
TURN_END_CALL = [("call_turn_end", "answer",
                  {"answer": {"handles": [{"id": "watch", "action": "wait"}]}})]

# What the second user message says first (jpt_registry_take_turn_text):
# the notification of the handle that ended unwatched, then the handle the
# turn end waited for; elapsed times written "N s".
TURN_END_TEXT = ("[Notification: handle `build` (tool `run`) stopped after N s]\n"
                 "build ok\n\n[process ended: exit status 0]\n\n"
                 "[Handle `watch` (tool `watch`) stopped after your last turn]\n"
                 "watched ok\n\n[process ended: exit status 0]\n\n")

FORBIDDEN_AT_TOP = {"oneOf", "anyOf", "allOf", "enum", "const", "not"}

# A retry the agent announces on stderr.
RETRY_LINE = re.compile(r"^\[(.*) from the provider: attempt (\d+) of (\d+) in ([0-9.]+) s"
                        r"(, as it asked)?\]$", re.M)


def check_schema(schema, name):
    assert schema["type"] == "object", (name, schema)
    assert "properties" in schema, (name, schema)
    assert not FORBIDDEN_AT_TOP & set(schema), (name, schema)


def check_spawn(content, handle):
    """A spawn's answer: running (what printed so far) or already stopped."""
    response = json.loads(content)
    assert response["id"] == handle, response
    assert response["state"] in ("running", "stopped"), response


def check_await(content):
    response = json.loads(content)
    assert response["pending"] == [], response
    completed = sorted(response["completed"], key=lambda h: h["id"])
    assert completed == [
        {"id": "lint", "state": "stopped",
         "result": "0 warnings\n\n[process ended: exit status 0]"},
        {"id": "tests", "state": "stopped",
         "result": "12 passed\n\n[process ended: exit status 0]"},
    ], completed


def http_date(seconds_from_now):
    """An HTTP-date (RFC 9110 5.6.7, IMF-fixdate) that many seconds ahead
    of now (whole seconds: the wait it asks is 1 or 2 s for 2)."""
    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


class OpenAI:
    """OpenAI Chat Completions: /v1/chat/completions."""
    name = "openai"
    path = "/v1/chat/completions"

    @staticmethod
    def env(base):
        return {"OPENAI_BASE_URL": base + "/v1", "OPENAI_API_KEY": KEY}

    @staticmethod
    def check_headers(request):
        assert request.headers["authorization"] == "Bearer " + KEY, request.headers
        assert request.headers["content-type"] == "application/json", request.headers

    @staticmethod
    def reply(text=None, calls=()):
        message = {"role": "assistant", "content": text, "refusal": None}
        if calls:
            message["tool_calls"] = [
                {"id": i, "type": "function",
                 "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a in calls]
        return {"id": "chatcmpl-replay", "object": "chat.completion", "created": 1700000000,
                "model": MODEL, "system_fingerprint": "fp_replay",
                "choices": [{"index": 0, "message": message, "logprobs": None,
                             "finish_reason": "tool_calls" if calls else "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}

    # The provider's errors, as its API sends them.
    @staticmethod
    def error(kind, message):
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}

    RATE_LIMITED = ("retry-after-ms", "1200")
    OVERLOADED = 503

    @staticmethod
    def kept(reply):
        """The assistant message as the API takes it back."""
        m = reply["choices"][0]["message"]
        kept = {"role": "assistant", "content": m["content"]}
        if "tool_calls" in m:
            kept["tool_calls"] = m["tool_calls"]
        return kept

    @staticmethod
    def user(text):
        return {"role": "user", "content": text}

    @staticmethod
    def check_request(body, messages, max_tokens=MAX_TOKENS):
        keys = {"model", "messages", "tools"}
        if max_tokens is not None:
            keys.add("max_completion_tokens")
        assert set(body) == keys, body.keys()
        assert body["model"] == MODEL, body
        if max_tokens is not None:
            assert body["max_completion_tokens"] == max_tokens, body
        assert body["messages"][0] == {"role": "system", "content": SYSTEM}, body["messages"][0]
        assert body["messages"][1:] == messages, body["messages"][1:]
        tools = body["tools"]
        assert [t["type"] for t in tools] == ["function"] * len(TOOL_NAMES), tools
        assert [t["function"]["name"] for t in tools] == TOOL_NAMES, tools
        for t in tools:
            assert set(t) == {"type", "function"}, t
            assert set(t["function"]) == {"name", "description", "parameters"}, t
            check_schema(t["function"]["parameters"], t["function"]["name"])

    @staticmethod
    def results(body_messages, calls):
        """The tool messages after the assistant message: one per call, in
        order, each exactly {"role": "tool", "tool_call_id", "content"}."""
        tail = body_messages[-len(calls):]
        for message, (call_id, _, _) in zip(tail, calls):
            assert set(message) == {"role", "tool_call_id", "content"}, message
            assert message["role"] == "tool", message
            assert message["tool_call_id"] == call_id, message
            assert isinstance(message["content"], str), message
        return [(m["content"], None) for m in tail], tail

    @staticmethod
    def check_structured(body, messages, prompt, answer_schema=None):
        """A structured call: the settled conversation, then the prompt as
        a user message, and a forced `answer` tool."""
        assert set(body) == {"model", "messages", "tools", "tool_choice",
                             "max_completion_tokens"}, body.keys()
        assert body["messages"][0] == {"role": "system", "content": SYSTEM}, body["messages"]
        assert body["messages"][1:-1] == messages, body["messages"][1:-1]
        question = body["messages"][-1]
        assert set(question) == {"role", "content"} and question["role"] == "user", question
        assert prompt in question["content"], question
        [tool] = body["tools"]
        assert tool["type"] == "function" and set(tool["function"]) == {
            "name", "description", "parameters"}, tool
        assert tool["function"]["name"] == "answer", tool
        parameters = tool["function"]["parameters"]
        assert parameters["required"] == ["answer"], parameters
        if answer_schema is not None:
            assert parameters["properties"] == {"answer": answer_schema}, parameters
        assert body["tool_choice"] == {"type": "function", "function": {"name": "answer"}}, body


class Anthropic:
    """Anthropic Messages: /v1/messages."""
    name = "anthropic"
    path = "/v1/messages"

    @staticmethod
    def env(base):
        return {"ANTHROPIC_BASE_URL": base, "ANTHROPIC_API_KEY": KEY}

    @staticmethod
    def check_headers(request):
        assert request.headers["x-api-key"] == KEY, request.headers
        assert request.headers["anthropic-version"] == "2023-06-01", request.headers
        assert request.headers["content-type"] == "application/json", request.headers

    @staticmethod
    def reply(text=None, calls=()):
        content = [{"type": "text", "text": text}] if text else []
        content += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls]
        return {"id": "msg_replay", "type": "message", "role": "assistant", "model": MODEL,
                "content": content, "stop_reason": "tool_use" if calls else "end_turn",
                "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}}

    @staticmethod
    def error(kind, message):
        return {"type": "error", "error": {"type": kind, "message": message}}

    RATE_LIMITED = ("retry-after", "1")
    OVERLOADED = 529

    @staticmethod
    def kept(reply):
        return {"role": "assistant", "content": reply["content"]}

    @staticmethod
    def user(text):
        return {"role": "user", "content": text}

    @staticmethod
    def check_request(body, messages, max_tokens=MAX_TOKENS):
        assert set(body) == {"model", "max_tokens", "system", "messages", "tools"}, body.keys()
        assert body["model"] == MODEL, body
        assert body["max_tokens"] == (4096 if max_tokens is None else max_tokens), body
        assert body["system"] == SYSTEM, body
        assert body["messages"] == messages, body["messages"]
        roles = [m["role"] for m in body["messages"]]
        assert all(a != b for a, b in zip(roles, roles[1:])), roles
        tools = body["tools"]
        assert [t["name"] for t in tools] == TOOL_NAMES, tools
        for t in tools:
            assert set(t) == {"name", "description", "input_schema"}, t
            check_schema(t["input_schema"], t["name"])

    @staticmethod
    def results(body_messages, calls):
        """One user message after the assistant's, holding one tool_result
        block per tool_use, in order, exactly {"type": "tool_result",
        "tool_use_id", "content", "is_error"}."""
        message = body_messages[-1]
        assert set(message) == {"role", "content"} and message["role"] == "user", message
        blocks = message["content"]
        assert len(blocks) == len(calls), blocks
        for block, (call_id, _, _) in zip(blocks, calls):
            assert set(block) == {"type", "tool_use_id", "content", "is_error"}, block
            assert block["type"] == "tool_result", block
            assert block["tool_use_id"] == call_id, block
            assert isinstance(block["content"], str), block
            assert isinstance(block["is_error"], bool), block
        return [(b["content"], b["is_error"]) for b in blocks], [message]

    @staticmethod
    def check_structured(body, messages, prompt, answer_schema=None):
        """A structured call. Roles alternate: after tool results, the
        prompt joins that user message as a text block after them; after
        the assistant's answer, it is a user message of its own."""
        assert set(body) == {"model", "max_tokens", "system", "messages", "tools",
                             "tool_choice"}, body.keys()
        last = body["messages"][-1]
        assert last["role"] == "user", last
        if messages[-1]["role"] == "user":
            assert body["messages"][:-1] == messages[:-1], body["messages"]
            assert last["content"][:-1] == messages[-1]["content"], last
            question = last["content"][-1]
            assert question["type"] == "text", question
            assert prompt in question["text"], question
        else:
            assert body["messages"][:-1] == messages, body["messages"]
            assert prompt in last["content"], last
        [tool] = body["tools"]
        assert set(tool) == {"name", "description", "input_schema"}, tool
        assert tool["name"] == "answer", tool
        assert tool["input_schema"]["required"] == ["answer"], tool
        if answer_schema is not None:
            assert tool["input_schema"]["properties"] == {"answer": answer_schema}, tool
        assert body["tool_choice"] == {"type": "tool", "name": "answer"}, body


def agent_env(p, base):
    """The environment without proxies (the server is local) or the other
    provider's settings, and with this provider's."""
    env = {k: v for k, v in os.environ.items()
           if not k.lower().endswith("_proxy") and not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.update(p.env(base))
    return env


def release(path, line="ok"):
    """Lets a background handle go on: writes a line to its FIFO (the open
    waits for the handle's shell to open it for reading)."""
    def write():
        with open(path, "w") as fifo:
            fifo.write(line + "\n")
    threading.Thread(target=write, daemon=True).start()


def run_agent(p, server, *args, stdin="hello\n", root=None):
    argv = [EXE, "--provider", p.name, "--model", MODEL, "--retry-delay-ms",
            str(RETRY_DELAY_MS), *args]
    if root is not None:
        argv += ["--root", root]
    return subprocess.run(argv, input=stdin, env=agent_env(p, server.base),
                          capture_output=True, text=True, timeout=300)


def retries(stderr):
    """The retries the agent announced: (what, attempt, of, seconds, asked)."""
    return [(m[0], int(m[1]), int(m[2]), float(m[3]), bool(m[4]))
            for m in RETRY_LINE.findall(stderr)]


class AgentReplayTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="llm-agent-test-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        for fifo in ("release.fifo", "watch.fifo"):
            os.mkfifo(os.path.join(self.dir, fifo))
        self.tools = os.path.join(self.dir, "tools.json")
        with open(self.tools, "w") as f:
            json.dump(TOOLS, f)

    def script(self, p):
        """The recorded replies, each with the check of the request it
        answers. `history` is the conversation the agent must send;
        `bodies` each request's raw body, for the retries' checks."""
        history, bodies = [], []
        replies = [p.reply(calls=CALLS_1), p.reply(calls=CALLS_2), p.reply(calls=CALLS_3),
                   p.reply(calls=ANSWER_CALL), p.reply(text=DONE),
                   p.reply(calls=TURN_END_CALL), p.reply(text=FINAL)]

        def recorded(check):
            def run(req):
                bodies.append(req.raw)
                p.check_headers(req)
                check(req)
            return run

        @recorded
        def again(req):
            assert req.raw == bodies[-2], "a retry's body differs from the first attempt's"

        @recorded
        def first(req):
            history.append(p.user(FIRST))
            p.check_request(req.body, history)
            history.append(p.kept(replies[0]))  # once its retry gets it

        @recorded
        def after_batch_1(req):
            got, messages = p.results(req.body["messages"], CALLS_1)
            check_spawn(got[0][0], "tests")
            check_spawn(got[1][0], "lint")
            check_await(got[2][0])
            assert [e for _, e in got] in ([None] * 3, [False] * 3), got
            history.extend(messages)
            p.check_request(req.body, history)
            history.append(p.kept(replies[1]))

        @recorded
        def after_batch_2(req):
            got, messages = p.results(req.body["messages"], CALLS_2)
            # Nothing printed yet: the build and the watch wait for their FIFOs.
            assert got[0][0] == '{"id":"build","state":"running","content":""}', got
            assert got[1][0] == CHECK_ERROR, got
            assert got[2][0] == '{"id":"watch","state":"running","content":""}', got
            assert [e for _, e in got] in ([None] * 3, [False, True, False]), got
            history.extend(messages)
            p.check_request(req.body, history)
            history.append(p.kept(replies[2]))
            release(os.path.join(self.dir, "release.fifo"))

        @recorded
        def question(req):
            # Without the assistant message whose call is asking.
            p.check_structured(req.body, history[:-1], "Deploy to production?",
                               {"type": "boolean"})

        @recorded
        def after_batch_3(req):
            got, messages = p.results(req.body["messages"], CALLS_3)
            assert got in ([("deployed\n", None)], [("deployed\n", False)]), got
            history.extend(messages)
            p.check_request(req.body, history)
            history.append(p.kept(replies[4]))

        @recorded
        def turn_end(req):
            # The turn end's question: the whole first turn, then the prompt.
            p.check_structured(req.body, history, "Your turn is ending while tools still run")
            schema = (req.body["tools"][0].get("input_schema") or
                      req.body["tools"][0]["function"]["parameters"])["properties"]["answer"]
            assert "handles" in schema["properties"], schema
            release(os.path.join(self.dir, "watch.fifo"))

        @recorded
        def second_turn(req):
            last = req.body["messages"][-1]
            assert last["role"] == "user", last
            text = last["content"]
            # What the tools left, as text: no JSON in JSON.
            seen = re.sub(r"\b[0-9]+\.[0-9] s\]", "N s]", text)
            assert seen == TURN_END_TEXT + SECOND, seen
            history.append(p.user(text))
            p.check_request(req.body, history)

        rate_limited = Reply(429, p.error("rate_limit_error", "Rate limit reached"),
                             [p.RATE_LIMITED])
        overloaded = Reply(p.OVERLOADED, p.error("overloaded_error", "Overloaded"),
                           [("retry-after", lambda: http_date(2))])
        server_error = Reply(500, p.error("api_error", "Internal server error"))
        return [
            (first, rate_limited), (again, replies[0]),
            (after_batch_1, replies[1]),
            (after_batch_2, replies[2]),
            (question, overloaded), (again, replies[3]),
            (after_batch_3, server_error), (again, HANGUP), (again, replies[4]),
            (turn_end, replies[5]),
            (second_turn, replies[6]),
        ]

    def run_transcript(self, p):
        with ReplayServer(p.path, self.script(p)) as server:
            proc = run_agent(p, server, "--tools", self.tools, "--system", SYSTEM,
                             "--max-tokens", str(MAX_TOKENS), root=self.dir,
                             stdin=FIRST + "\n" + SECOND + "\n")
        self.assertEqual(server.failures, [], proc.stderr)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(server.requests), 11, proc.stderr)
        self.assertEqual(proc.stdout, DONE + "\n" + FINAL + "\n")
        self.assertIn("[the model answers] true", proc.stderr)
        got = retries(proc.stderr)
        self.assertEqual(len(got), 4, proc.stderr)
        # 429: the wait its header asked (retry-after-ms 1200, retry-after 1).
        header, value = p.RATE_LIMITED
        asked = float(value) / (1000 if header == "retry-after-ms" else 1)
        self.assertEqual(got[0], ("HTTP 429", 2, 5, asked, True))
        # 503 / 529: retry-after as an HTTP-date two seconds ahead, read
        # in whole seconds.
        self.assertEqual(got[1][:3] + got[1][4:], (f"HTTP {p.OVERLOADED}", 2, 5, True))
        self.assertIn(got[1][3], (1.0, 2.0))
        # 500 without a header, then no reply at all: the backoff, doubled,
        # less up to a quarter.
        first = RETRY_DELAY_MS / 1000
        self.assertEqual(got[2][:3] + got[2][4:], ("HTTP 500", 2, 5, False))
        self.assertTrue(0.75 * first - 0.001 <= got[2][3] <= first, got[2])
        self.assertEqual(got[3][:3] + got[3][4:],
                         ("Server returned nothing (no headers, no data)", 3, 5, False))
        self.assertTrue(1.5 * first - 0.001 <= got[3][3] <= 2 * first, got[3])

    def test_openai(self):
        self.run_transcript(OpenAI)

    def test_anthropic(self):
        self.run_transcript(Anthropic)


class RequestTest(unittest.TestCase):
    """One request and its reply, without tools' work."""

    def reply_once(self, p, script, *args, **kw):
        with ReplayServer(p.path, script) as server:
            proc = run_agent(p, server, *args, **kw)
        return server, proc

    def test_max_tokens_as_each_provider_names_it(self):
        for p, args, expected in ((OpenAI, [], None), (OpenAI, ["--max-tokens", "77"], 77),
                                  (Anthropic, [], 4096), (Anthropic, ["--max-tokens", "77"], 77)):
            with self.subTest(provider=p.name, args=args):
                seen = []
                server, proc = self.reply_once(
                    p, [(lambda req: seen.append(req.body), p.reply(text="hi"))], *args)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                [body] = seen
                self.assertNotIn("max_tokens" if p is OpenAI else "max_completion_tokens",
                                 body)
                field = "max_completion_tokens" if p is OpenAI else "max_tokens"
                self.assertEqual(body.get(field), expected, body)

    def test_a_request_error_is_final(self):
        # 400, 401, 404: the request is at fault; making it again would not help.
        for status in (400, 401, 404, 422):
            with self.subTest(status=status):
                server, proc = self.reply_once(OpenAI, [
                    (lambda req: None, Reply(status, OpenAI.error("invalid_request_error",
                                                                  "refused on purpose")))])
                self.assertEqual(proc.returncode, 1, proc.stderr)
                self.assertEqual(len(server.requests), 1)
                self.assertIn(f"/v1/chat/completions: HTTP {status}: ", proc.stderr)
                self.assertIn("refused on purpose", proc.stderr)
                self.assertEqual(retries(proc.stderr), [])

    def test_408_and_409_are_tried_again(self):
        for status in (408, 409):
            with self.subTest(status=status):
                server, proc = self.reply_once(Anthropic, [
                    (lambda req: None, Reply(status, Anthropic.error("x", "again"))),
                    (lambda req: None, Anthropic.reply(text="hi"))])
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(proc.stdout, "hi\n")
                self.assertEqual([r[:3] for r in retries(proc.stderr)],
                                 [(f"HTTP {status}", 2, 5)])
                self.assertEqual(server.requests[0].raw, server.requests[1].raw)

    def test_the_attempts_are_bounded(self):
        failing = (lambda req: None, Reply(503, OpenAI.error("server_error", "down")))
        server, proc = self.reply_once(OpenAI, [failing] * 3, "--max-retries", "2")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertEqual(len(server.requests), 3)
        self.assertIn("/v1/chat/completions: HTTP 503 (after 3 attempts): ", proc.stderr)
        self.assertEqual([r[:3] for r in retries(proc.stderr)],
                         [("HTTP 503", 2, 3), ("HTTP 503", 3, 3)])

    def test_no_retries_when_asked_for_none(self):
        server, proc = self.reply_once(
            OpenAI, [(lambda req: None, Reply(429, OpenAI.error("requests", "slow")))],
            "--max-retries", "0")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertEqual(len(server.requests), 1)
        self.assertIn("HTTP 429: ", proc.stderr)

    def test_a_wait_longer_than_allowed_ends_the_session_at_once(self):
        for header in (("retry-after", "3600"), ("retry-after", http_date(3600)),
                       ("retry-after-ms", "3600000")):
            with self.subTest(header=header):
                server, proc = self.reply_once(Anthropic, [
                    (lambda req: None, Reply(429, Anthropic.error("rate_limit_error", "x"),
                                             [header]))])
                self.assertEqual(proc.returncode, 1, proc.stderr)
                self.assertEqual(len(server.requests), 1)
                self.assertRegex(proc.stderr, r"\[HTTP 429 from the provider, which asks to "
                                              r"wait 3[56]\d\d s: more than --max-retry-wait "
                                              r"allows, so no retry\]")
                self.assertIn("/v1/messages: HTTP 429: ", proc.stderr)

    def test_a_past_or_unreadable_retry_after_falls_back_on_the_backoff(self):
        for value in (http_date(-60), "soon", "0"):
            with self.subTest(value=value):
                server, proc = self.reply_once(OpenAI, [
                    (lambda req: None, Reply(429, OpenAI.error("requests", "x"),
                                             [("retry-after", value)])),
                    (lambda req: None, OpenAI.reply(text="hi"))])
                self.assertEqual(proc.returncode, 0, proc.stderr)
                [(what, attempt, of, wait, asked)] = retries(proc.stderr)
                self.assertFalse(asked)
                self.assertTrue(wait <= RETRY_DELAY_MS / 1000, wait)

    def test_the_asctime_form_of_an_http_date(self):
        # RFC 9110 5.6.7: a recipient reads the two obsolete forms too.
        server, proc = self.reply_once(OpenAI, [
            (lambda req: None, Reply(503, OpenAI.error("server_error", "x"),
                                     [("retry-after",
                                       lambda: time.asctime(time.gmtime(time.time() + 2)))])),
            (lambda req: None, OpenAI.reply(text="hi"))])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        [(_, _, _, wait, asked)] = retries(proc.stderr)
        self.assertTrue(asked)
        self.assertIn(wait, (1.0, 2.0))

    def test_x_should_retry_overrides_the_status(self):
        server, proc = self.reply_once(Anthropic, [
            (lambda req: None, Reply(500, Anthropic.error("api_error", "final"),
                                     [("x-should-retry", "false")]))])
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertEqual(len(server.requests), 1)
        server, proc = self.reply_once(Anthropic, [
            (lambda req: None, Reply(400, Anthropic.error("invalid_request_error", "x"),
                                     [("x-should-retry", "true")])),
            (lambda req: None, Anthropic.reply(text="hi"))])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(server.requests), 2)

    def test_a_connection_refused_is_tried_again_then_reported(self):
        with ReplayServer(OpenAI.path, []) as server:
            base = server.base
        # The server is gone: nothing listens on its port any more.
        proc = subprocess.run(
            [EXE, "--provider", "openai", "--model", MODEL, "--retry-delay-ms", "1",
             "--max-retries", "1"],
            input="hello\n", env=agent_env(OpenAI, base), capture_output=True, text=True,
            timeout=300)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertEqual([r[:3] for r in retries(proc.stderr)],
                         [("Couldn't connect to server", 2, 2)])
        self.assertIn("/v1/chat/completions: Couldn't connect to server (after 2 attempts)",
                      proc.stderr)

    def test_usage(self):
        for args in (["--provider", "gemini", "--model", MODEL],
                     ["--provider", "openai", "--model", MODEL, "--max-retries", "-1"],
                     ["--provider", "openai", "--model", MODEL, "--timeout", "soon"]):
            with self.subTest(args=args):
                proc = subprocess.run([EXE, *args], input="", capture_output=True, text=True,
                                      timeout=300)
                self.assertEqual(proc.returncode, 2)
                self.assertIn("usage: llm-agent --provider openai|anthropic", proc.stderr)


if __name__ == "__main__":
    unittest.main()
