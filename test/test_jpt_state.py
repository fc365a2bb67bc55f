"""Tests of the example program examples/jpt-state.

    python3 test_jpt_state.py JPT_STATE_EXE EXAMPLES_DATA_DIR

Registered by test/meson.build (suite "examples"). The inputs are written to
a temporary directory here; the examples/data directory is accepted but its
contents are not relied on. Standard library only; exits non-zero on any
failure.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

if len(sys.argv) < 3:
    sys.exit("usage: test_jpt_state.py JPT_STATE_EXE EXAMPLES_DATA_DIR")
EXE = os.path.abspath(sys.argv[1])
DATA_DIR = sys.argv[2]

USAGE_FIRST_LINE = ("usage: jpt-state [--json | --tool-state | --outcome] "
                    "[--root DIR] [--raw] [FILE]\n")
ENOENT_TEXT = os.strerror(2)

TEXT_ENVELOPE = {"content": [{"type": "text", "text": "hello"},
                             {"type": "text", "text": "world"}]}

QUESTION_ENVELOPE = {"content": [
    {"type": "text", "text": "Two commits are ready."},
    {"type": "question", "question": {
        "id": "target_branch", "text": "Which branch should I merge into?",
        "schema": {"type": "string", "enum": ["main", "develop"]},
        "default": "main"}},
]}

RUNNING_ENVELOPE = {"content": [{"type": "text", "text": "50%"}],
                    "_meta": {"computer.jp/status": "running"}}

MALFORMED_ENVELOPE = {"content": [{"type": "bogus"},
                                  {"type": "text", "text": "kept"}]}


class JptStateTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="jpt-state-test-")
        self.addCleanup(tmp.cleanup)
        # The canonical form of the directory: resource URIs under it are
        # named relative to it.
        self.dir = os.path.realpath(tmp.name)

    def write(self, name, content):
        path = os.path.join(self.dir, name)
        if isinstance(content, (dict, list)):
            content = json.dumps(content)
        if isinstance(content, str):
            content = content.encode("utf-8")
        with open(path, "wb") as f:
            f.write(content)
        return path

    def run_tool(self, *args, stdin=b"", cwd=None):
        proc = subprocess.run([EXE, *args], input=stdin, capture_output=True,
                              cwd=cwd or self.dir, timeout=60)
        return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")

    def assert_run(self, args, code, stdout=None, stderr="", **kw):
        rc, out, err = self.run_tool(*args, **kw)
        self.assertEqual(rc, code, f"jpt-state {' '.join(args)}: {err}")
        if stdout is not None:
            self.assertEqual(out, stdout)
        if stderr is not None:
            self.assertEqual(err, stderr)
        return out, err

    def resource_envelope(self):
        return {"content": [
            {"type": "text", "text": "One file:"},
            {"type": "resource", "resource": {
                "uri": "file://" + self.dir + "/src/./a.rs",
                "mimeType": "text/rust", "text": "fn a() {}\n"}},
        ]}

    # ---- the rendering (default) ----

    def test_default_output_is_the_rendering(self):
        path = self.write("text.json", TEXT_ENVELOPE)
        self.assert_run([path], 0, "hello\n\nworld\n")

    def test_render_question(self):
        path = self.write("question.json", QUESTION_ENVELOPE)
        self.assert_run([path], 0,
                        "Two commits are ready.\n\n"
                        "Question [target_branch]: Which branch should I merge into?\n"
                        'Expected answer: one of "main", "develop"\n'
                        'Default: "main"\n')

    def test_root_option_names_resources_relative_to_it(self):
        path = self.write("res.json", self.resource_envelope())
        expected = "One file:\n\nsrc/a.rs:\n```rs\nfn a() {}\n```\n"
        self.assert_run(["--root", self.dir, path], 0, expected)
        self.assert_run(["--root", "file://" + self.dir, path], 0, expected)
        self.assert_run(["--root", "/elsewhere", path], 0,
                        "One file:\n\nfile://" + self.dir +
                        "/src/a.rs:\n```rs\nfn a() {}\n```\n")

    def test_default_root_is_the_current_directory(self):
        # The usage: "--root DIR  name file resources relative to DIR
        # (default: the current directory)".
        path = self.write("res.json", self.resource_envelope())
        self.assert_run([path], 0, "One file:\n\nsrc/a.rs:\n```rs\nfn a() {}\n```\n",
                        cwd=self.dir)

    def test_plain_text_and_invalid_utf8(self):
        path = self.write("plain.txt", b"built 3 targets\xff\n")
        self.assert_run([path], 0, "built 3 targets\ufffd\n")

    def test_error_state(self):
        path = self.write("err.json", {"type": "error", "message": "disk full",
                                       "trace": ["write"], "transient": True})
        self.assert_run([path], 0, "Error (transient): disk full\nTrace:\n  - write\n")

    def test_large_input(self):
        text = "".join(f"line {i}\n" for i in range(40000))  # > 64 KiB
        path = self.write("big.txt", text)
        self.assert_run([path], 0, text)

    # ---- JSON forms ----

    def test_json_is_the_envelope(self):
        path = self.write("question.json", QUESTION_ENVELOPE)
        out, _ = self.assert_run(["--json", path], 0)
        # RFD 058: an absent status means stopped, so a waiting state names it.
        self.assertEqual(json.loads(out), {
            **QUESTION_ENVELOPE, "_meta": {"computer.jp/status": "waiting"}})
        self.assertTrue(out.startswith('{\n  "content": [\n'), out)  # pretty
        self.assertTrue(out.endswith("}\n"), out)

    def test_tool_state(self):
        path = self.write("text.json", TEXT_ENVELOPE)
        out, _ = self.assert_run(["--tool-state", path], 0)
        self.assertEqual(json.loads(out),
                         {"type": "stopped", "result": {"Ok": TEXT_ENVELOPE["content"]}})
        path = self.write("question.json", QUESTION_ENVELOPE)
        out, _ = self.assert_run(["--tool-state", path], 0)
        self.assertEqual(json.loads(out), {
            "type": "waiting", "content": "Two commits are ready.",
            "question": {"id": "target_branch",
                         "text": "Which branch should I merge into?",
                         "default": "main",
                         "answer_type": {"Select": {"options": ["main", "develop"]}}}})
        path = self.write("running.json", RUNNING_ENVELOPE)
        out, _ = self.assert_run(["--tool-state", path], 0)
        self.assertEqual(json.loads(out), {"type": "running", "content": "50%"})

    def test_outcome(self):
        path = self.write("one.json", {"content": [{"type": "text", "text": "done"}]})
        out, _ = self.assert_run(["--outcome", path], 0)
        self.assertEqual(json.loads(out), {"type": "success", "content": "done"})
        path = self.write("question.json", QUESTION_ENVELOPE)
        out, _ = self.assert_run(["--outcome", path], 0)
        obj = json.loads(out)
        self.assertEqual(obj["type"], "needs_input")
        self.assertEqual(obj["question"]["id"], "target_branch")
        self.assertEqual(obj["question"]["pre_amble"], "Two commits are ready.")
        path = self.write("err.json", {"content": [{"type": "text", "text": "no"}],
                                       "isError": True})
        out, _ = self.assert_run(["--outcome", path], 0)
        self.assertEqual(json.loads(out), {"type": "error", "message": "no",
                                           "trace": [], "transient": False})

    def test_outcome_of_a_running_state_is_a_usage_error(self):
        path = self.write("running.json", RUNNING_ENVELOPE)
        self.assert_run(["--outcome", path], 2, "",
                        "jpt-state: cannot write a running state in this form: "
                        "invalid argument or malformed input\n")

    def test_last_form_option_wins(self):
        path = self.write("text.json", TEXT_ENVELOPE)
        out, _ = self.assert_run(["--outcome", "--json", path], 0)
        self.assertEqual(json.loads(out), TEXT_ENVELOPE)

    # ---- --raw and stdin ----

    def test_raw(self):
        data = json.dumps(TEXT_ENVELOPE)
        path = self.write("text.json", data)
        self.assert_run(["--raw", path], 0, data + "\n")
        out, _ = self.assert_run(["--raw", "--json", path], 0)
        self.assertEqual(json.loads(out), {"content": [{"type": "text", "text": data}]})

    def test_reads_stdin_without_a_file(self):
        data = json.dumps(TEXT_ENVELOPE).encode()
        self.assert_run([], 0, "hello\n\nworld\n", stdin=data)
        self.assert_run(["-"], 0, "hello\n\nworld\n", stdin=data)
        out, _ = self.assert_run(["--json"], 0, stdin=data)
        self.assertEqual(json.loads(out), TEXT_ENVELOPE)
        self.assert_run(["--raw"], 0, data.decode() + "\n", stdin=data)

    def test_empty_stdin(self):
        self.assert_run([], 0, "")
        out, _ = self.assert_run(["--json"], 0)
        self.assertEqual(json.loads(out), {"content": [{"type": "text", "text": ""}]})

    # ---- warnings and errors ----

    def test_malformed_block_warns_and_exits_1(self):
        path = self.write("bad.json", MALFORMED_ENVELOPE)
        self.assert_run([path], 1, "kept\n",
                        "warning: content[0]: unknown block type 'bogus'; "
                        "block skipped\n")
        out, _ = self.assert_run(["--json", path], 1,
                                 stderr="warning: content[0]: unknown block type "
                                        "'bogus'; block skipped\n")
        self.assertEqual(json.loads(out), {"content": [{"type": "text", "text": "kept"}]})
        self.assert_run([], 1, "kept\n",
                        "warning: content[0]: unknown block type 'bogus'; "
                        "block skipped\n",
                        stdin=json.dumps(MALFORMED_ENVELOPE).encode())

    def test_missing_file_exits_2(self):
        path = os.path.join(self.dir, "no-such-file.json")
        self.assert_run([path], 2, "", f"jpt-state: {path}: {ENOENT_TEXT}\n")

    def test_unknown_option_exits_2(self):
        _, err = self.assert_run(["--bogus"], 2, "", None)
        self.assertTrue(err.startswith("jpt-state: unknown option --bogus\n" +
                                       USAGE_FIRST_LINE), err)

    def test_two_files_exit_2(self):
        a = self.write("a.txt", "a")
        b = self.write("b.txt", "b")
        _, err = self.assert_run([a, b], 2, "", None)
        self.assertTrue(err.startswith(USAGE_FIRST_LINE), err)

    def test_help(self):
        for opt in ("--help", "-h"):
            out, _ = self.assert_run([opt], 0)
            self.assertTrue(out.startswith(USAGE_FIRST_LINE), out)
            for word in ("--json", "--tool-state", "--outcome", "--root", "--raw"):
                self.assertIn(word, out)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]])
