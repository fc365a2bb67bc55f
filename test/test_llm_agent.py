"""Tests of examples/llm-agent against a local replay server.

    python3 test_llm_agent.py LLM_AGENT_EXE

Registered by test/meson.build (suite "examples"). For each provider
(OpenAI Chat Completions, Anthropic Messages) the server serves recorded
replies of that provider's API, in its documented shape: a message with two
spawns and an await in one batch, then a background spawn and a tool that
fails, then a tool that asks the assistant a question (which the agent puts
to the model as a structured call), a final answer, and a second turn whose
user message carries the notification the background handle left. Every
request body the agent sends is checked against what the provider's API
expects: the tool list's shape, each assistant message sent back as it
came, one result per call in the provider's shape (tool_call_id;
tool_use_id and is_error), the order of the messages, the forced tool
choice of the structured call. Standard library only; exits non-zero on
any failure.
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llm_replay_server import ReplayServer  # noqa: E402

if len(sys.argv) < 2:
    sys.exit("usage: test_llm_agent.py LLM_AGENT_EXE")
EXE = os.path.abspath(sys.argv.pop(1))

SYSTEM = "You are the replay test's agent."
MODEL = "replay-model-1"
KEY = "test-key"

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
    {"name": "check", "description": "Checks the code",
     "command": ["sh", "-c", "echo 'src/main.c:3: missing semicolon' >&2; exit 2"]},
    {"name": "deploy", "description": "Deploys, after asking",
     "question_target": "assistant", "command": ["sh", "-c", DEPLOY_SCRIPT, "sh", "{{tool}}"]},
]}
TOOL_NAMES = ["run", "check", "deploy", "await"]

FIRST = "Check the project, then deploy."
SECOND = "Did the build finish?"
# The background handle waits for this FIFO, written once the model has
# seen its spawn: its output and its end come after, while no one watches.
BUILD = "read line < release.fifo; echo \"build $line\""

CHECK_ERROR = ("Error: The tool failed (exit status 2).\n\nstderr:\n"
               "src/main.c:3: missing semicolon\n")
DONE = "Tests and lint pass, main.c has an error; deployed."

# The calls of each assistant message, as (id, name, arguments).
CALLS_1 = [("call_tests", "run", {"action": "spawn", "id": "tests", "command": "echo 12 passed"}),
           ("call_lint", "run", {"action": "spawn", "id": "lint", "command": "echo 0 warnings"}),
           ("call_await", "await", {"all": ["tests", "lint"]})]
CALLS_2 = [("call_build", "run", {"action": "spawn", "id": "build", "command": BUILD}),
           ("call_check", "check", {})]
CALLS_3 = [("call_deploy", "deploy", {})]
ANSWER_CALL = [("call_answer", "answer", {"answer": True})]

FORBIDDEN_AT_TOP = {"oneOf", "anyOf", "allOf", "enum", "const", "not"}


def check_schema(schema, name):
    assert schema["type"] == "object", (name, schema)
    assert "properties" in schema, (name, schema)
    assert not FORBIDDEN_AT_TOP & set(schema), (name, schema)


def loads_content(result_text):
    return json.loads(result_text)


def check_spawn(content, handle):
    """A spawn's answer: running (what printed so far) or already stopped."""
    response = loads_content(content)
    assert response["id"] == handle, response
    assert response["state"] in ("running", "stopped"), response


def check_await(content):
    response = loads_content(content)
    assert response["pending"] == [], response
    completed = sorted(response["completed"], key=lambda h: h["id"])
    assert completed == [
        {"id": "lint", "state": "stopped",
         "result": "0 warnings\n\n[process ended: exit status 0]"},
        {"id": "tests", "state": "stopped",
         "result": "12 passed\n\n[process ended: exit status 0]"},
    ], completed


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
    def check_request(body, messages, tools_check=True):
        assert body["model"] == MODEL, body
        assert "max_tokens" not in body, body
        assert body["messages"][0] == {"role": "system", "content": SYSTEM}, body["messages"][0]
        assert body["messages"][1:] == messages, body["messages"][1:]
        if tools_check:
            tools = body["tools"]
            assert [t["type"] for t in tools] == ["function"] * 4, tools
            assert [t["function"]["name"] for t in tools] == TOOL_NAMES, tools
            for t in tools:
                assert set(t["function"]) == {"name", "description", "parameters"}, t
                check_schema(t["function"]["parameters"], t["function"]["name"])
            assert "tool_choice" not in body, body

    @staticmethod
    def results(body_messages, calls):
        """The tool messages after the assistant message: one per call, in
        order, each {"role": "tool", "tool_call_id", "content"}."""
        tail = body_messages[-len(calls):]
        for message, (call_id, _, _) in zip(tail, calls):
            assert set(message) == {"role", "tool_call_id", "content"}, message
            assert message["role"] == "tool", message
            assert message["tool_call_id"] == call_id, message
        return [(m["content"], None) for m in tail], tail

    @staticmethod
    def check_question(body, messages):
        """The structured call: the settled conversation, the question as
        a user message, a forced `answer` tool taking {"answer": boolean}."""
        assert body["messages"][1:-1] == messages, body["messages"][1:-1]
        question = body["messages"][-1]
        assert question["role"] == "user", question
        assert "Deploy to production?" in question["content"], question
        assert body["tools"] == [{"type": "function", "function": {
            "name": "answer", "description": "Your answer to the tool's question",
            "parameters": {"type": "object", "properties": {"answer": {"type": "boolean"}},
                           "required": ["answer"]}}}], body["tools"]
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
    def kept(reply):
        return {"role": "assistant", "content": reply["content"]}

    @staticmethod
    def user(text):
        return {"role": "user", "content": text}

    @staticmethod
    def check_request(body, messages, tools_check=True):
        assert body["model"] == MODEL, body
        assert body["max_tokens"] == 4096, body
        assert body["system"] == SYSTEM, body
        assert body["messages"] == messages, body["messages"]
        roles = [m["role"] for m in body["messages"]]
        assert all(a != b for a, b in zip(roles, roles[1:])), roles
        if tools_check:
            tools = body["tools"]
            assert [t["name"] for t in tools] == TOOL_NAMES, tools
            for t in tools:
                assert set(t) == {"name", "description", "input_schema"}, t
                check_schema(t["input_schema"], t["name"])
            assert "tool_choice" not in body, body

    @staticmethod
    def results(body_messages, calls):
        """One user message after the assistant's, holding one tool_result
        block per tool_use, in order, with tool_use_id and is_error."""
        message = body_messages[-1]
        assert message["role"] == "user", message
        blocks = message["content"]
        assert len(blocks) == len(calls), blocks
        for block, (call_id, _, _) in zip(blocks, calls):
            assert set(block) == {"type", "tool_use_id", "content", "is_error"}, block
            assert block["type"] == "tool_result", block
            assert block["tool_use_id"] == call_id, block
        return [(b["content"], b["is_error"]) for b in blocks], [message]

    @staticmethod
    def check_question(body, messages):
        """The settled conversation ends with the tool results: the question
        joins that user message as a text block (roles alternate)."""
        assert body["messages"][:-1] == messages[:-1], body["messages"]
        last = body["messages"][-1]
        assert last["role"] == "user", last
        assert last["content"][:-1] == messages[-1]["content"], last
        question = last["content"][-1]
        assert question["type"] == "text", question
        assert "Deploy to production?" in question["text"], question
        assert body["tools"] == [{
            "name": "answer", "description": "Your answer to the tool's question",
            "input_schema": {"type": "object", "properties": {"answer": {"type": "boolean"}},
                             "required": ["answer"]}}], body["tools"]
        assert body["tool_choice"] == {"type": "tool", "name": "answer"}, body


def agent_env(p, base):
    """The environment without proxies (the server is local) or the other
    provider's settings, and with this provider's."""
    env = {k: v for k, v in os.environ.items()
           if not k.lower().endswith("_proxy") and not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.update(p.env(base))
    return env


def release(path):
    """Lets the background build go on: writes a line to its FIFO (the
    open waits for the build's shell to open it for reading)."""
    def write():
        with open(path, "w") as fifo:
            fifo.write("ok\n")
    threading.Thread(target=write, daemon=True).start()


class AgentReplayTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="llm-agent-test-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        os.mkfifo(os.path.join(self.dir, "release.fifo"))
        self.tools = os.path.join(self.dir, "tools.json")
        with open(self.tools, "w") as f:
            json.dump(TOOLS, f)

    def script(self, p):
        """The recorded replies, each with the check of the request it
        answers. `history` is the conversation the agent must send."""
        history = []
        replies = [p.reply(calls=CALLS_1), p.reply(calls=CALLS_2), p.reply(calls=CALLS_3),
                   p.reply(calls=ANSWER_CALL), p.reply(text=DONE), p.reply(text="Yes: build ok.")]
        fifo = os.path.join(self.dir, "release.fifo")

        def first(req):
            p.check_headers(req)
            history.append(p.user(FIRST))
            p.check_request(req.body, history)
            history.append(p.kept(replies[0]))

        def after_batch_1(req):
            p.check_headers(req)
            got, messages = p.results(req.body["messages"], CALLS_1)
            check_spawn(got[0][0], "tests")
            check_spawn(got[1][0], "lint")
            check_await(got[2][0])
            assert [e for _, e in got] in ([None] * 3, [False] * 3), got
            history.extend(messages)
            p.check_request(req.body, history)
            history.append(p.kept(replies[1]))

        def after_batch_2(req):
            got, messages = p.results(req.body["messages"], CALLS_2)
            # Nothing printed yet: the build waits for its FIFO.
            assert got[0][0] == '{"id":"build","state":"running","content":""}', got
            assert got[1][0] == CHECK_ERROR, got
            assert [e for _, e in got] in ([None, None], [False, True]), got
            history.extend(messages)
            p.check_request(req.body, history)
            history.append(p.kept(replies[2]))
            release(fifo)

        def question(req):
            p.check_headers(req)
            # Without the assistant message whose call is asking.
            p.check_question(req.body, history[:-1])

        def after_batch_3(req):
            got, messages = p.results(req.body["messages"], CALLS_3)
            assert got == [("deployed\n", None)] or got == [("deployed\n", False)], got
            history.extend(messages)
            p.check_request(req.body, history)
            history.append(p.kept(replies[4]))

        def second_turn(req):
            last = req.body["messages"][-1]
            assert last["role"] == "user", last
            prefix = "[Notifications from your tools: "
            text = last["content"]
            assert text.startswith(prefix), text
            notes, rest = text[len(prefix):].split("]\n\n", 1)
            assert rest == SECOND, text
            notes = json.loads(notes)
            for note in notes:
                note.pop("elapsed_secs")
            assert notes == [{"id": "build", "tool": "run", "state": "stopped",
                              "result": "build ok\n\n[process ended: exit status 0]",
                              "is_error": False}], notes
            history.append(p.user(text))
            p.check_request(req.body, history)

        checks = [first, after_batch_1, after_batch_2, question, after_batch_3, second_turn]
        return list(zip(checks, replies))

    def run_agent(self, p):
        with ReplayServer(p.path, self.script(p)) as server:
            env = agent_env(p, server.base)
            proc = subprocess.run(
                [EXE, "--provider", p.name, "--model", MODEL, "--tools", self.tools,
                 "--root", self.dir, "--system", SYSTEM],
                input=FIRST + "\n" + SECOND + "\n", env=env, capture_output=True, text=True,
                timeout=300)
        self.assertEqual(server.failures, [], proc.stderr)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(server.requests), 6, proc.stderr)
        self.assertEqual(proc.stdout, DONE + "\nYes: build ok.\n")
        self.assertIn("[the model answers] true", proc.stderr)

    def test_openai(self):
        self.run_agent(OpenAI)

    def test_anthropic(self):
        self.run_agent(Anthropic)

    def test_http_error_is_reported(self):
        def refuse(req):
            raise AssertionError("refused on purpose")
        with ReplayServer(OpenAI.path, [(refuse, {})]) as server:
            env = agent_env(OpenAI, server.base)
            proc = subprocess.run([EXE, "--provider", "openai", "--model", MODEL],
                                  input="hello\n", env=env, capture_output=True, text=True,
                                  timeout=300)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("/v1/chat/completions: HTTP 400: ", proc.stderr)
        self.assertIn("refused on purpose", proc.stderr)

    def test_usage(self):
        proc = subprocess.run([EXE, "--provider", "gemini", "--model", MODEL],
                              input="", capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 2)
        self.assertTrue(proc.stderr.startswith("usage: llm-agent --provider openai|anthropic"))


if __name__ == "__main__":
    unittest.main()
