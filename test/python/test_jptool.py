"""Tests of the ctypes binding bindings/python/jptool (the package's
__init__.py), and through it of libjptool's API as include/jptool/common.h,
state.h and registry.h document it.

Run by `meson test` (suite "python"), which sets JPTOOL_LIBRARY to the built
library, PYTHONPATH to bindings/python and JPT_TEST_TOOLS to the directory of
the helper programs (test/tools) the registry tests run as real tools.
Standard library only; exits non-zero on any failure (unittest.main).
"""

import ctypes
import gc
import json
import os
import re
import selectors
import tempfile
import threading
import time
import unittest

import jptool
from jptool import Batch, Handle, Inquiry, JptError, Registry, State

# RFD 058's question example with a text block in front: text, two resources,
# a question.
ENVELOPE = {
    "content": [
        {"type": "text", "text": "Two files so far."},
        {
            "type": "resource",
            "resource": {
                "uri": "file:///project/src/main.rs",
                "mimeType": "text/rust",
                "text": "fn main() {}",
            },
        },
        {
            "type": "resource",
            "resource": {
                "uri": "file:///project/src/./lib.rs",
                "mimeType": "text/rust",
                "text": "pub mod config;",
                "name": "lib.rs",
                "title": "The library",
                "description": "crate root",
            },
            "annotations": {"audience": ["user"], "priority": 0.5},
            "formatted": "lib.rs (formatted by the tool)",
        },
        {
            "type": "question",
            "question": {
                "id": "confirm",
                "text": "Apply these changes to a third file?",
                "schema": {"type": "boolean"},
                "default": True,
            },
        },
    ]
}

# JP's legacy Outcome asking with a Select answer type and a pre_amble.
LEGACY_NEEDS_INPUT = {
    "type": "needs_input",
    "question": {
        "id": "target_branch",
        "text": "Which branch should I merge into?",
        "pre_amble": "3 commits are ready.",
        "answer_type": {"Select": {"options": ["main", "develop", "staging"]}},
        "default": "main",
    },
}

UNKNOWN_BLOCK_WARNING = "content[0]: unknown block type 'bogus'; block skipped"


def parse_json(obj, **kw):
    return State.parse(json.dumps(obj), **kw)


class CommonTest(unittest.TestCase):
    def test_version(self):
        self.assertEqual(jptool.version(), "0.1.0")

    def test_strerror(self):
        self.assertEqual(jptool.strerror(jptool.JPT_ERR_INVALID),
                         "invalid argument or malformed input")
        self.assertEqual(jptool.strerror(jptool.JPT_ERR_STATE),
                         "not valid in the current state")
        self.assertEqual(jptool.strerror(-1000), "unknown status")
        for code in range(jptool.JPT_ERR_LIMIT, 1):
            self.assertTrue(jptool.strerror(code))
            self.assertNotEqual(jptool.strerror(code), "unknown status")

    def test_status_name(self):
        self.assertEqual(jptool.status_name(jptool.JPT_OK), "JPT_OK")
        self.assertEqual(jptool.status_name(jptool.JPT_ERR_INVALID), "JPT_ERR_INVALID")
        self.assertEqual(jptool.status_name(jptool.JPT_ERR_LIMIT), "JPT_ERR_LIMIT")
        self.assertIsNone(jptool.status_name(-1000))
        # Every constant is the name the library gives its value.
        for name in dir(jptool):
            if name.startswith("JPT_ERR_"):
                self.assertEqual(jptool.status_name(getattr(jptool, name)), name)

    def test_constants_match_the_header(self):
        expected = {
            "JPT_OK": 0, "JPT_ERR_INVALID": -1, "JPT_ERR_NOMEM": -2,
            "JPT_ERR_NOT_FOUND": -3, "JPT_ERR_EXISTS": -4, "JPT_ERR_STATE": -5,
            "JPT_ERR_UNSUPPORTED": -6, "JPT_ERR_DENIED": -7, "JPT_ERR_TIMEOUT": -8,
            "JPT_ERR_CANCELLED": -9, "JPT_ERR_IO": -10, "JPT_ERR_PROTOCOL": -11,
            "JPT_ERR_AGAIN": -12, "JPT_ERR_SANDBOX": -13, "JPT_ERR_LIMIT": -14,
            "JPT_LOG_ERROR": 1, "JPT_LOG_WARNING": 2, "JPT_LOG_INFO": 3,
            "JPT_LOG_DEBUG": 4,
            "JPT_STATE_RUNNING": 1, "JPT_STATE_WAITING": 2, "JPT_STATE_STOPPED": 3,
            "JPT_BLOCK_TEXT": 1, "JPT_BLOCK_RESOURCE": 2, "JPT_BLOCK_QUESTION": 3,
            "JPT_BLOCK_IMAGE": 4, "JPT_BLOCK_AUDIO": 5, "JPT_BLOCK_RESOURCE_LINK": 6,
            "JPT_FIELD_TEXT": 1, "JPT_FIELD_URI": 2, "JPT_FIELD_MIME_TYPE": 3,
            "JPT_FIELD_BLOB": 4, "JPT_FIELD_FORMATTED": 5, "JPT_FIELD_NAME": 6,
            "JPT_FIELD_TITLE": 7, "JPT_FIELD_DESCRIPTION": 8,
            "JPT_FIELD_ANNOTATIONS": 9, "JPT_FIELD_ID": 10, "JPT_FIELD_SCHEMA": 11,
            "JPT_FIELD_DEFAULT": 12, "JPT_FIELD_BLOB_SIZE": 13,
            "JPT_PARSE_RAW": 1, "JPT_JSON_ENVELOPE": 1, "JPT_JSON_TOOL_STATE": 2,
            "JPT_JSON_OUTCOME": 3, "JPT_JSON_PRETTY": 1, "JPT_JSON_MAX_DEPTH": 256,
        }
        for name, value in expected.items():
            self.assertEqual(getattr(jptool, name), value, name)

    def test_jpt_error(self):
        e = JptError(jptool.JPT_ERR_STATE, "why")
        self.assertIsInstance(e, Exception)
        self.assertEqual((e.status, e.name, e.message), (-5, "JPT_ERR_STATE", "why"))
        self.assertEqual(str(e), "why (JPT_ERR_STATE)")
        e = JptError(jptool.JPT_ERR_NOMEM)
        self.assertEqual(e.message, "out of memory")
        self.assertIsNone(JptError(-1000).name)

    def test_set_allocator_is_refused_once_memory_exists(self):
        # Not wrapped (see the module docstring), but declared: the library
        # has allocated by now, so it refuses any allocator change.
        State.new().close()
        self.assertEqual(jptool._lib.lib.jpt_set_allocator(None), jptool.JPT_ERR_STATE)


class ParseTest(unittest.TestCase):
    def test_envelope_with_text_resource_and_question(self):
        with parse_json(ENVELOPE) as s:
            self.assertEqual(s.kind, jptool.JPT_STATE_WAITING)
            self.assertFalse(s.is_error)
            self.assertEqual(s.error_message, "")
            self.assertFalse(s.error_transient)
            self.assertEqual(s.error_trace, [])
            self.assertIsNone(s.structured_content)
            self.assertEqual(s.warnings, [])
            self.assertEqual(s.blocks, [
                {"type": "text", "text": "Two files so far."},
                {"type": "resource", "uri": "file:///project/src/main.rs",
                 "mime_type": "text/rust", "text": "fn main() {}"},
                {"type": "resource", "uri": "file:///project/src/./lib.rs",
                 "mime_type": "text/rust", "text": "pub mod config;",
                 "name": "lib.rs", "title": "The library",
                 "description": "crate root",
                 "annotations": {"audience": ["user"], "priority": 0.5},
                 "formatted": "lib.rs (formatted by the tool)"},
                {"type": "question", "id": "confirm",
                 "text": "Apply these changes to a third file?",
                 "schema": {"type": "boolean"}, "default": True},
            ])
            self.assertEqual(s.block(3)["id"], "confirm")
            with self.assertRaises(IndexError):
                s.block(4)
            self.assertEqual(
                s.render("/project"),
                "Two files so far.\n\n"
                "src/main.rs:\n```rs\nfn main() {}\n```\n\n"
                "lib.rs (formatted by the tool)\n\n"
                "Question [confirm]: Apply these changes to a third file?\n"
                "Expected answer: true or false\n"
                "Default: true")

    def test_envelope_error_with_meta(self):
        env = {
            "content": [{"type": "text", "text": "connection refused"}],
            "isError": True,
            "structuredContent": {"code": 111},
            "_meta": {"computer.jp/error": {"transient": True,
                                            "trace": ["fetch failed", "connect()"]}},
        }
        with parse_json(env) as s:
            self.assertEqual(s.kind, jptool.JPT_STATE_STOPPED)
            self.assertTrue(s.is_error)
            self.assertTrue(s.error_transient)
            self.assertEqual(s.error_message, "connection refused")
            self.assertEqual(s.error_trace, ["fetch failed", "connect()"])
            self.assertEqual(s.structured_content, {"code": 111})
            self.assertEqual(s.render(),
                             "Error (transient): connection refused\n"
                             "Trace:\n  - fetch failed\n  - connect()")

    def test_envelope_status_and_string_content(self):
        with parse_json({"content": "50% done",
                         "_meta": {"computer.jp/status": "running"}}) as s:
            self.assertEqual(s.kind, jptool.JPT_STATE_RUNNING)
            self.assertEqual(s.blocks, [{"type": "text", "text": "50% done"}])

    def test_tool_state_spawned_is_running(self):
        with parse_json({"type": "spawned", "content": "started"}) as s:
            self.assertEqual(s.kind, jptool.JPT_STATE_RUNNING)
            self.assertEqual(s.blocks, [{"type": "text", "text": "started"}])

    def test_legacy_needs_input_with_select(self):
        with parse_json(LEGACY_NEEDS_INPUT) as s:
            self.assertEqual(s.kind, jptool.JPT_STATE_WAITING)
            self.assertEqual(s.warnings, [])
            self.assertEqual(s.blocks, [
                {"type": "text", "text": "3 commits are ready."},
                {"type": "question", "id": "target_branch",
                 "text": "Which branch should I merge into?",
                 "schema": {"type": "string",
                            "enum": ["main", "develop", "staging"]},
                 "default": "main"},
            ])
            self.assertEqual(
                s.render(),
                "3 commits are ready.\n\n"
                "Question [target_branch]: Which branch should I merge into?\n"
                'Expected answer: one of "main", "develop", "staging"\n'
                'Default: "main"')

    def test_legacy_error(self):
        with parse_json({"type": "error", "message": "disk full",
                         "trace": ["write"], "transient": False}) as s:
            self.assertTrue(s.is_error)
            self.assertFalse(s.error_transient)
            self.assertEqual(s.error_message, "disk full")
            self.assertEqual(s.error_trace, ["write"])
            self.assertEqual(s.blocks, [{"type": "text", "text": "disk full"}])
            self.assertEqual(s.render(), "Error: disk full\nTrace:\n  - write")

    def test_raw_invalid_utf8_survives_byte_exact(self):
        with State.parse(b"\xff\xfe") as s:
            self.assertEqual(s.kind, jptool.JPT_STATE_STOPPED)
            self.assertEqual(s.warnings, [])
            text = s.blocks[0]["text"]
            self.assertEqual(text.encode("utf-8", errors="surrogateescape"),
                             b"\xff\xfe")
            # Replaced only when rendered or serialised.
            self.assertEqual(s.render(), "\ufffd\ufffd")
            self.assertEqual(json.loads(s.to_json()),
                             {"content": [{"type": "text", "text": "\ufffd\ufffd"}]})

    def test_nul_bytes_are_kept_by_length(self):
        with State.parse(b"a\0b\xc3") as s:
            text = s.blocks[0]["text"]
            self.assertEqual(text.encode("utf-8", "surrogateescape"), b"a\0b\xc3")
            self.assertEqual(s.render(), "a\ufffdb\ufffd")

    def test_str_input_and_empty_input(self):
        with State.parse("plain text, é") as s:
            self.assertEqual(s.blocks, [{"type": "text", "text": "plain text, é"}])
        with State.parse(b"") as s:
            self.assertEqual(s.kind, jptool.JPT_STATE_STOPPED)
            self.assertEqual(s.blocks, [{"type": "text", "text": ""}])

    def test_raw_flag_keeps_json_as_text(self):
        data = json.dumps({"content": [{"type": "text", "text": "x"}]})
        with State.parse(data, raw=True) as s:
            self.assertEqual(s.blocks, [{"type": "text", "text": data}])
        with State.parse(data) as s:
            self.assertEqual(s.blocks, [{"type": "text", "text": "x"}])

    def test_json_that_is_not_a_format_is_raw_text(self):
        for data in ('{"content": 5', '[1, 2]', '{"result": 1}'):
            with State.parse(data) as s:
                self.assertEqual(s.blocks, [{"type": "text", "text": data}], data)
                self.assertFalse(s.is_error)

    def test_warnings(self):
        env = {"content": [{"type": "bogus"}, {"type": "text", "text": "kept"},
                           {"type": "resource", "resource": {"text": "x"}}]}
        with parse_json(env) as s:
            self.assertEqual(s.warnings, [
                UNKNOWN_BLOCK_WARNING,
                "content[2]: resource block has no uri; block skipped",
            ])
            self.assertEqual(s.blocks, [{"type": "text", "text": "kept"}])
        with parse_json({"type": "waiting", "content": "hm"}) as s:
            self.assertEqual(s.kind, jptool.JPT_STATE_WAITING)
            self.assertEqual(s.warnings, ["the state is waiting but the content "
                                          "has no question block"])

    def test_media_and_resource_link_blocks(self):
        env = {"content": [
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png",
             "annotations": {"priority": 1}},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "https://example.com/a",
             "name": "a", "title": "A", "description": "the a",
             "mimeType": "text/html"},
            {"type": "resource", "resource": {"uri": "file:///p/b.bin",
                                              "mimeType": "application/octet-stream",
                                              "blob": "AAECAw=="}},
        ]}
        with parse_json(env) as s:
            self.assertEqual(s.warnings, [])
            self.assertEqual(s.blocks, [
                {"type": "image", "blob": "iVBORw0KGgo=", "blob_size": 8,
                 "mime_type": "image/png", "annotations": {"priority": 1}},
                {"type": "audio", "blob": "AAAA", "blob_size": 3,
                 "mime_type": "audio/wav"},
                {"type": "resource_link", "uri": "https://example.com/a",
                 "name": "a", "title": "A", "description": "the a",
                 "mime_type": "text/html"},
                {"type": "resource", "uri": "file:///p/b.bin",
                 "mime_type": "application/octet-stream", "blob": "AAECAw==",
                 "blob_size": 4},
            ])
            self.assertEqual(
                s.render("/p"),
                "[image: image/png, 8 bytes of image data, not shown]\n\n"
                "[audio: audio/wav, 3 bytes of audio data, not shown]\n\n"
                '[resource link: https://example.com/a "a", text/html]\n\n'
                "b.bin: application/octet-stream, 4 bytes of binary data, not shown")


class RenderTest(unittest.TestCase):
    RESOURCE = {"content": [{"type": "resource", "resource": {
        "uri": "file:///p/src/a.rs", "mimeType": "text/rust", "text": "fn a() {}\n"}}]}

    def test_render_with_root(self):
        with parse_json(self.RESOURCE) as s:
            self.assertEqual(s.render("/p"), "src/a.rs:\n```rs\nfn a() {}\n```")
            self.assertEqual(s.render("file:///p"), "src/a.rs:\n```rs\nfn a() {}\n```")

    def test_render_without_root(self):
        with parse_json(self.RESOURCE) as s:
            self.assertEqual(s.render(),
                             "file:///p/src/a.rs:\n```rs\nfn a() {}\n```")

    def test_fence_longer_than_backticks_inside(self):
        with State.new() as s:
            s.add_resource("file:///p/README.md", mime_type="text/markdown",
                           text="```sh\nls\n```")
            self.assertEqual(s.render("/p"),
                             "README.md:\n````markdown\n```sh\nls\n```\n````")

    def test_empty_state(self):
        with State.new("running") as s:
            self.assertEqual(s.render(), "")


class JsonFormsTest(unittest.TestCase):
    def assert_round_trip(self, s, form):
        text = s.to_json(form)
        obj = json.loads(text)
        self.assertEqual(json.loads(s.to_json(form, pretty=True)), obj)
        with State.parse(text) as back:
            self.assertEqual(back.kind, s.kind, form)
            self.assertEqual(back.is_error, s.is_error, form)
            self.assertEqual(back.error_message, s.error_message, form)
            self.assertEqual(back.error_transient, s.error_transient, form)
            self.assertEqual(back.error_trace, s.error_trace, form)
            self.assertEqual(back.structured_content, s.structured_content, form)
            self.assertEqual(back.blocks, s.blocks, form)
        return obj

    def test_three_forms_of_a_question(self):
        with parse_json(ENVELOPE) as s:
            env = self.assert_round_trip(s, "envelope")
            self.assertEqual(env, {"content": [
                {"type": "text", "text": "Two files so far."},
                ENVELOPE["content"][1], ENVELOPE["content"][2],
                ENVELOPE["content"][3]],
                "_meta": {"computer.jp/status": "waiting"}})
            ts = self.assert_round_trip(s, "tool_state")
            self.assertEqual(ts["type"], "waiting")
            self.assertEqual(ts["question"]["id"], "confirm")
            out = self.assert_round_trip(s, "outcome")
            self.assertEqual(out["type"], "needs_input")
            self.assertEqual(out["question"]["answer_type"], "Boolean")

    def test_three_forms_of_a_legacy_select(self):
        with parse_json(LEGACY_NEEDS_INPUT) as s:
            self.assertEqual(self.assert_round_trip(s, "outcome"), LEGACY_NEEDS_INPUT)
            self.assert_round_trip(s, "tool_state")
            self.assert_round_trip(s, "envelope")

    def test_three_forms_of_success(self):
        with State.new() as s:
            s.add_text("done")
            s.set_structured_content({"files": 2})
            self.assertEqual(self.assert_round_trip(s, "envelope"),
                             {"content": [{"type": "text", "text": "done"}],
                              "structuredContent": {"files": 2}})
            self.assertEqual(self.assert_round_trip(s, "tool_state"),
                             {"type": "stopped", "result": {"Ok": "done"},
                              "structuredContent": {"files": 2}})
            self.assertEqual(self.assert_round_trip(s, "outcome"),
                             {"type": "success", "content": "done",
                              "structuredContent": {"files": 2}})

    def test_three_forms_of_an_error(self):
        with State.new() as s:
            s.add_text("failed")
            s.set_error("", transient=True)
            s.add_error_trace("outer")
            self.assertEqual(self.assert_round_trip(s, "envelope"), {
                "content": [{"type": "text", "text": "failed"}], "isError": True,
                "_meta": {"computer.jp/error": {"transient": True,
                                                "trace": ["outer"]}}})
            self.assertEqual(self.assert_round_trip(s, "tool_state"), {
                "type": "stopped", "result": {"Err": {
                    "message": "failed", "trace": ["outer"], "transient": True}}})
            self.assertEqual(self.assert_round_trip(s, "outcome"), {
                "type": "error", "message": "failed", "trace": ["outer"],
                "transient": True})

    def test_three_forms_of_an_error_with_several_blocks(self):
        # state.h: "Every form parses back to an equal state"; content that
        # is not one text block is written as a block array.
        with State.new() as s:
            s.add_text("compiling")
            s.add_resource("file:///p/log.txt", mime_type="text/plain", text="E1\n")
            s.set_error("build failed")
            s.add_error_trace("cc exited 1")
            for form in ("envelope", "tool_state", "outcome"):
                with self.subTest(form=form):
                    self.assert_round_trip(s, form)

    def test_running_state(self):
        with State.new(jptool.JPT_STATE_RUNNING) as s:
            s.add_text("50%")
            self.assertEqual(self.assert_round_trip(s, "envelope"), {
                "content": [{"type": "text", "text": "50%"}],
                "_meta": {"computer.jp/status": "running"}})
            self.assertEqual(self.assert_round_trip(s, "tool_state"),
                             {"type": "running", "content": "50%"})
            with self.assertRaises(JptError) as cm:
                s.to_json("outcome")
            self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)
            self.assertEqual(cm.exception.name, "JPT_ERR_INVALID")
            self.assertTrue(cm.exception.message)

    def test_form_numbers_and_pretty(self):
        with State.new() as s:
            s.add_text("x")
            self.assertEqual(s.to_json(jptool.JPT_JSON_ENVELOPE),
                             '{"content":[{"type":"text","text":"x"}]}')
            self.assertEqual(s.to_json(jptool.JPT_JSON_OUTCOME, pretty=True),
                             '{\n  "type": "success",\n  "content": "x"\n}')
            for bad in (0, 4, "xml"):
                with self.assertRaises(JptError) as cm:
                    s.to_json(bad)
                self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)


class BuilderTest(unittest.TestCase):
    def assert_fails(self, status, fn, *args, message=None, **kw):
        with self.assertRaises(JptError) as cm:
            fn(*args, **kw)
        self.assertEqual(cm.exception.status, status)
        self.assertEqual(cm.exception.name, jptool.status_name(status))
        self.assertTrue(cm.exception.message)
        if message is not None:
            self.assertEqual(cm.exception.message, message)
        return cm.exception

    def test_new(self):
        for kind in (jptool.JPT_STATE_RUNNING, jptool.JPT_STATE_WAITING,
                     jptool.JPT_STATE_STOPPED):
            with State.new(kind) as s:
                self.assertEqual(s.kind, kind)
                self.assertEqual(s.blocks, [])
        with State.new("waiting") as s:
            self.assertEqual(s.kind, jptool.JPT_STATE_WAITING)
        self.assert_fails(jptool.JPT_ERR_INVALID, State.new, 0)
        self.assert_fails(jptool.JPT_ERR_INVALID, State.new, 4)

    def test_every_builder(self):
        with State.new() as s:
            s.add_text("intro")
            s.add_resource("file:///p/src/a.rs", mime_type="text/rust",
                           text="fn a() {}\n", name="a.rs", title="A",
                           description="a file", annotations={"priority": 1})
            s.add_resource("file:///p/a.png", mime_type="image/png",
                           blob="iVBORw0KGgo=", formatted="[a picture]")
            s.add_question("go", "Go on?", schema={"type": "boolean"},
                           default=False)
            s.add_question("any", "Anything?")
            s.add_question("nul", "Null default?", default=None)
            s.add_block({"type": "resource_link", "uri": "https://e.com/x"})
            s.add_block('{"type": "text", "text": "as JSON text"}')
            s.set_structured_content([1, "two"])
            s.set_structured_content('{"n": 3}', raw=True)
            self.assertEqual(s.errmsg, "")
            self.assertEqual(s.structured_content, {"n": 3})
            self.assertEqual(s.blocks, [
                {"type": "text", "text": "intro"},
                {"type": "resource", "uri": "file:///p/src/a.rs",
                 "mime_type": "text/rust", "text": "fn a() {}\n", "name": "a.rs",
                 "title": "A", "description": "a file",
                 "annotations": {"priority": 1}},
                {"type": "resource", "uri": "file:///p/a.png",
                 "mime_type": "image/png", "blob": "iVBORw0KGgo=",
                 "blob_size": 8, "formatted": "[a picture]"},
                {"type": "question", "id": "go", "text": "Go on?",
                 "schema": {"type": "boolean"}, "default": False},
                {"type": "question", "id": "any", "text": "Anything?"},
                {"type": "question", "id": "nul", "text": "Null default?",
                 "default": None},
                {"type": "resource_link", "uri": "https://e.com/x"},
                {"type": "text", "text": "as JSON text"},
            ])
            s.set_error("it broke", transient=True)
            s.add_error_trace("outer")
            s.add_error_trace("inner")
            self.assertTrue(s.is_error)
            self.assertEqual(s.kind, jptool.JPT_STATE_STOPPED)
            self.assertTrue(s.error_transient)
            self.assertEqual(s.error_message, "intro\nas JSON text\nit broke")
            self.assertEqual(s.error_trace, ["outer", "inner"])
            self.assertEqual(s.blocks[-1], {"type": "text", "text": "it broke"})

    def test_resource_errors(self):
        with State.new() as s:
            self.assert_fails(jptool.JPT_ERR_INVALID, s.add_resource, "file:///x",
                              message="resource 'file:///x' has neither text nor blob")
            self.assert_fails(jptool.JPT_ERR_INVALID, s.add_resource, "file:///x",
                              text="a", blob="AA==",
                              message="resource 'file:///x' has both text and blob")
            self.assert_fails(jptool.JPT_ERR_INVALID, s.add_resource, "file:///x",
                              blob="not base64!",
                              message="resource 'file:///x': blob is not valid base64")
            self.assert_fails(jptool.JPT_ERR_INVALID, s.add_resource, "file:///x",
                              text="a", annotations=[1])
            self.assert_fails(jptool.JPT_ERR_INVALID, s.add_resource, "", text="a")
            self.assert_fails(jptool.JPT_ERR_INVALID, s.add_resource,
                              b"file:///\xff", text="a")
            self.assertTrue(s.errmsg)
            # On failure the state is unchanged.
            self.assertEqual(s.blocks, [])

    def test_question_errors(self):
        with State.new() as s:
            self.assert_fails(jptool.JPT_ERR_INVALID, s.add_question, "", "text",
                              message="question has an empty id")
            self.assert_fails(jptool.JPT_ERR_INVALID, s.add_question, "q", "t",
                              schema="string")
            self.assertEqual(s.blocks, [])

    def test_question_schema_must_be_an_object_or_boolean(self):
        # state.h: JPT_ERR_INVALID for "a schema that is neither an object
        # nor a boolean"; true / false are JSON Schema's boolean schemas.
        with State.new() as s:
            self.assert_fails(jptool.JPT_ERR_INVALID, s.add_question, "q", "t",
                              schema=3)
            self.assertEqual(s.blocks, [])
            s.add_question("q", "t", schema=True)
            self.assertEqual(s.blocks[0]["schema"], True)

    def test_block_and_structured_content_errors(self):
        with State.new() as s:
            self.assert_fails(jptool.JPT_ERR_INVALID, s.add_block, {"type": "bogus"},
                              message="unknown block type 'bogus'")
            self.assert_fails(jptool.JPT_ERR_INVALID, s.add_block, "[1]",
                              message="block is an array, not an object")
            e = self.assert_fails(jptool.JPT_ERR_INVALID, s.add_block, "{nope")
            self.assertTrue(e.message.startswith("block is not a JSON object: "))
            e = self.assert_fails(jptool.JPT_ERR_INVALID, s.set_structured_content,
                                  "{nope", raw=True)
            self.assertTrue(e.message.startswith("structuredContent is not JSON: "))
            self.assertIsNone(s.structured_content)
            self.assertEqual(s.blocks, [])

    def test_error_ends_content(self):
        with State.new() as s:
            self.assert_fails(jptool.JPT_ERR_STATE, s.add_error_trace, "x",
                              message="no error is set to add a trace to")
            s.set_error("boom")
            msg = "the error is set; content can no longer be added"
            self.assert_fails(jptool.JPT_ERR_STATE, s.add_text, "x", message=msg)
            self.assert_fails(jptool.JPT_ERR_STATE, s.add_resource, "file:///x",
                              text="x", message=msg)
            self.assert_fails(jptool.JPT_ERR_STATE, s.add_question, "q", "t",
                              message=msg)
            self.assert_fails(jptool.JPT_ERR_STATE, s.add_block,
                              {"type": "text", "text": "x"}, message=msg)
            s.add_error_trace("still allowed")
            s.set_structured_content({"still": "allowed"})
            self.assertEqual(s.blocks, [{"type": "text", "text": "boom"}])
            self.assertEqual(s.error_message, "boom")

    def test_shared_state_refuses_builders(self):
        s = State.new()
        s.add_text("mine")
        s.set_error("err")
        other = s.ref()
        msg = "the state is shared and can no longer change"
        for state in (s, other):
            self.assert_fails(jptool.JPT_ERR_STATE, state.add_text, "x", message=msg)
            self.assert_fails(jptool.JPT_ERR_STATE, state.add_resource,
                              "file:///x", text="x", message=msg)
            self.assert_fails(jptool.JPT_ERR_STATE, state.add_question, "q", "t",
                              message=msg)
            self.assert_fails(jptool.JPT_ERR_STATE, state.add_block,
                              {"type": "text", "text": "x"}, message=msg)
            self.assert_fails(jptool.JPT_ERR_STATE, state.set_structured_content,
                              1, message=msg)
            self.assert_fails(jptool.JPT_ERR_STATE, state.set_error, "x", message=msg)
            self.assert_fails(jptool.JPT_ERR_STATE, state.add_error_trace, "x",
                              message=msg)
        # Both objects read the same state; closing one keeps the other.
        self.assertEqual(other.blocks, s.blocks)
        s.close()
        self.assertTrue(s.closed)
        self.assertEqual(other.blocks, [{"type": "text", "text": "mine"},
                                        {"type": "text", "text": "err"}])
        other.close()

    def test_state_stays_immutable_after_ref(self):
        # state.h, jpt_state_ref: "The state becomes immutable." Dropping
        # the extra reference does not make it mutable again.
        with State.new() as s:
            s.ref().close()
            self.assert_fails(jptool.JPT_ERR_STATE, s.add_text, "x",
                              message="the state is shared and can no longer change")
            self.assertEqual(s.blocks, [])

    def test_closed_state(self):
        s = State.new()
        s.close()
        s.close()
        with self.assertRaises(ValueError):
            s.blocks
        with self.assertRaises(ValueError):
            s.add_text("x")
        # Dropped without close(): __del__ releases the reference.
        State.parse(b"x")
        gc.collect()

    def test_argument_checks(self):
        with State.new() as s:
            with self.assertRaises(ValueError):
                s.add_text("a\0b")
            with self.assertRaises(TypeError):
                s.add_text(5)
            with self.assertRaises(ValueError):
                s.set_structured_content(float("nan"))
            with self.assertRaises(TypeError):
                State.parse(5)


class HelperTest(unittest.TestCase):
    def test_uri_canonicalize(self):
        cases = [
            (("file:///project/./src/../src/main.rs",), "file:///project/src/main.rs"),
            (("file:///project/./src/../src/main.rs", "/project"), "src/main.rs"),
            (("file:///project/src//main.rs/", "file:///project"), "src/main.rs"),
            (("file:///project", "/project"), "."),
            (("file:///project-evil/x", "/project"), "file:///project-evil/x"),
            (("src/../lib.rs", "/project"), "lib.rs"),
            (("/etc/passwd", "/project"), "file:///etc/passwd"),
            (("file:///a%20b/c%7e",), "file:///a%20b/c~"),
            (("HTTPS://Example.COM:443/a/./b/../c",), "https://example.com/a/c"),
            (("http://h:8080/x",), "http://h:8080/x"),
            (("URN:isbn:0451450523",), "urn:isbn:0451450523"),
        ]
        for args, expected in cases:
            self.assertEqual(jptool.uri_canonicalize(*args), expected, args)

    def test_uri_percent_encoding_is_normalised(self):
        # state.h: "percent-encoding normalised (unreserved characters
        # decoded, hex digits uppercase)".
        self.assertEqual(jptool.uri_canonicalize("https://h/a%7eb%2fc?q=%3d"),
                         "https://h/a~b%2Fc?q=%3D")

    def test_uri_errors(self):
        # The message is the library's (jpt_last_error): it names the URI.
        for uri, why in (("", "jpt_uri_canonicalize: the URI is empty"),
                         ("file://remote.host/x", "jpt_uri_canonicalize 'file://remote.host/x': "
                                                  "a file URI naming a remote host"),
                         ("file:///a%00b", "jpt_uri_canonicalize 'file:///a%00b': a file URI"),
                         ("https://exa mple.com/", "jpt_uri_canonicalize 'https://exa "
                                                   "mple.com/': libcurl refuses it")):
            with self.assertRaises(JptError) as cm:
                jptool.uri_canonicalize(uri)
            self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID, uri)
            self.assertTrue(cm.exception.message.startswith(why), cm.exception.message)
            self.assertEqual(jptool.last_error(), cm.exception.message)

    def test_mime_fence_lang(self):
        cases = {
            "text/rust": "rs",
            "text/x-python": "python",
            "application/json": "json",
            "TEXT/Rust; charset=utf-8": "rs",
            "application/vnd.api+json": "json",
            "image/svg+xml": "xml",
            "application/octet-stream": None,
            "": None,
            None: None,
        }
        for mime, lang in cases.items():
            self.assertEqual(jptool.mime_fence_lang(mime), lang, mime)

    def test_schema_check_success(self):
        schema = {"type": "object", "required": ["files"],
                  "properties": {"files": {"type": "array",
                                           "items": {"type": "string"}}}}
        self.assertEqual(jptool.schema_check(schema, {"files": ["a", "b"]}),
                         (True, None))
        self.assertEqual(jptool.schema_check('{"type": "integer"}', "3",
                                             raw_schema=True, raw_value=True),
                         (True, None))
        self.assertEqual(jptool.schema_check(True, None), (True, None))

    def test_schema_check_failure(self):
        schema = {"type": "object",
                  "properties": {"files": {"type": "array",
                                           "items": {"type": "string"}}}}
        self.assertEqual(jptool.schema_check(schema, {"files": ["a", "b", 3]}),
                         (False, "at /files/2: expected string, got integer"))
        self.assertEqual(jptool.schema_check({"enum": ["a", "b"]}, "c"),
                         (False, 'at the top level: "c" is not one of ["a","b"]'))
        self.assertEqual(jptool.schema_check({"required": ["a"]}, {}),
                         (False, 'at the top level: missing required property "a"'))
        self.assertEqual(jptool.schema_check(False, 1),
                         (False, "at the top level: no value is allowed here"))
        ok, why = jptool.schema_check({"type": "object"}, "1,", raw_value=True)
        self.assertFalse(ok)
        self.assertTrue(why.startswith("the value is not JSON: "), why)
        ok, why = jptool.schema_check(b"{", "1", raw_schema=True, raw_value=True)
        self.assertFalse(ok)
        self.assertTrue(why.startswith("the schema is not JSON: "), why)


class LogTest(unittest.TestCase):
    def tearDown(self):
        jptool.set_log(None)

    def test_warning_of_a_malformed_block_is_logged(self):
        got = []
        jptool.set_log(lambda level, msg: got.append((level, msg)),
                       jptool.JPT_LOG_WARNING)
        with State.parse('{"content": [{"type": "bogus"}]}') as s:
            self.assertEqual(s.warnings, [UNKNOWN_BLOCK_WARNING])
        self.assertEqual(len(got), 1, got)
        level, msg = got[0]
        self.assertEqual(level, 2)
        self.assertEqual(level, jptool.JPT_LOG_WARNING)
        self.assertIsInstance(msg, str)
        self.assertTrue(msg.endswith(UNKNOWN_BLOCK_WARNING), msg)
        self.assertNotIn("\n", msg)

    def test_min_level_filters(self):
        got = []
        jptool.set_log(lambda level, msg: got.append(level), jptool.JPT_LOG_ERROR)
        State.parse('{"content": [{"type": "bogus"}]}').close()
        self.assertEqual(got, [])

    def test_removed_function_is_not_called(self):
        got = []
        jptool.set_log(lambda level, msg: got.append(level), jptool.JPT_LOG_DEBUG)
        jptool.set_log(None)
        State.parse('{"content": [{"type": "bogus"}]}').close()
        self.assertEqual(got, [])

    def test_rejects_non_callable(self):
        with self.assertRaises(TypeError):
            jptool.set_log(42)


class CApiContractTest(unittest.TestCase):
    """Points of the C contract the Python surface does not reach, checked
    through the declared prototypes."""

    lib = jptool._lib.lib

    def test_null_safety_and_ranges(self):
        self.assertFalse(self.lib.jpt_state_ref(None))
        self.lib.jpt_state_unref(None)
        self.lib.jpt_free(None)
        with parse_json({"content": [{"type": "bogus"}, {"type": "text", "text": "t"}],
                         "isError": True,
                         "_meta": {"computer.jp/error": {"trace": ["a"]}}}) as s:
            p = s._ptr
            self.assertEqual(self.lib.jpt_state_block_count(p), 1)
            self.assertEqual(self.lib.jpt_state_block_type(p, 0), jptool.JPT_BLOCK_TEXT)
            self.assertEqual(self.lib.jpt_state_block_type(p, 1), 0)
            n = ctypes.c_size_t(99)
            ptr = self.lib.jpt_state_block_field(p, 0, jptool.JPT_FIELD_TEXT,
                                                 ctypes.byref(n))
            self.assertEqual(ctypes.string_at(ptr, n.value), b"t")
            self.assertIsNotNone(self.lib.jpt_state_block_field(
                p, 0, jptool.JPT_FIELD_TEXT, None))
            for i, field in ((1, jptool.JPT_FIELD_TEXT), (0, 0), (0, 14),
                             (0, jptool.JPT_FIELD_URI)):
                self.assertIsNone(self.lib.jpt_state_block_field(p, i, field, None))
            self.assertEqual(self.lib.jpt_state_error_trace_count(p), 1)
            self.assertEqual(self.lib.jpt_state_error_trace(p, 0), b"a")
            self.assertIsNone(self.lib.jpt_state_error_trace(p, 1))
            self.assertEqual(self.lib.jpt_state_warning_count(p), 1)
            self.assertIsNone(self.lib.jpt_state_warning(p, 1))
            self.assertIsNone(self.lib.jpt_state_structured_content(p))
            out = ctypes.c_void_p()
            self.assertEqual(self.lib.jpt_state_to_json(p, jptool.JPT_JSON_ENVELOPE,
                                                        2, ctypes.byref(out)),
                             jptool.JPT_ERR_INVALID)
            self.assertIsNone(out.value)
            self.assertEqual(self.lib.jpt_state_render(p, None, ctypes.byref(out)),
                             jptool.JPT_OK)
            self.assertEqual(jptool._util._take_string(out), "Error: t\nTrace:\n  - a")
            small = jptool._lib._RenderOptions(ctypes.sizeof(jptool._lib._RenderOptions) - 1)
            self.assertEqual(self.lib.jpt_state_render(p, ctypes.byref(small),
                                                       ctypes.byref(out)),
                             jptool.JPT_ERR_INVALID)

    def test_parse_arguments(self):
        out = jptool._lib._StatePtr()
        self.assertEqual(self.lib.jpt_state_parse(b"x", 1, 2, ctypes.byref(out)),
                         jptool.JPT_ERR_INVALID)
        self.assertEqual(self.lib.jpt_state_parse(None, 1, 0, ctypes.byref(out)),
                         jptool.JPT_ERR_INVALID)
        self.assertEqual(self.lib.jpt_state_parse(None, 0, 0, ctypes.byref(out)),
                         jptool.JPT_OK)
        State(out).close()

    def test_builder_null_arguments(self):
        with State.new() as s:
            p = s._ptr
            self.assertEqual(self.lib.jpt_state_add_text(p, None),
                             jptool.JPT_ERR_INVALID)
            self.assertEqual(s.errmsg, "text block: text is NULL")
            self.assertEqual(self.lib.jpt_state_add_question(p, b"q", None, None, None),
                             jptool.JPT_ERR_INVALID)
            self.assertEqual(self.lib.jpt_state_add_block_json(p, None),
                             jptool.JPT_ERR_INVALID)
            self.assertEqual(self.lib.jpt_state_set_structured_content(p, None),
                             jptool.JPT_ERR_INVALID)
            self.assertEqual(self.lib.jpt_state_set_error(p, None, 0),
                             jptool.JPT_ERR_INVALID)
            small = jptool._lib._Resource(ctypes.sizeof(jptool._lib._Resource) - 1, b"file:///x",
                                     None, b"t")
            self.assertEqual(self.lib.jpt_state_add_resource(p, ctypes.byref(small)),
                             jptool.JPT_ERR_INVALID)
            self.assertEqual(s.blocks, [])
            self.assertEqual(self.lib.jpt_schema_check(None, b"1", None),
                             jptool.JPT_ERR_INVALID)
            self.assertEqual(self.lib.jpt_schema_check(b"true", b"1", None),
                             jptool.JPT_OK)


# ---- The access policy (vfs.h) ---------------------------------------------------

VFS_H = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                     "include", "jptool", "vfs.h")


def policy_section():
    """The text of vfs.h's access policy section."""
    with open(VFS_H) as f:
        header = f.read()
    start = header.index("/* ==== The access policy (lib/policy)")
    return header[start:header.index("/* ==== ", start + 1)]


class PolicyTest(unittest.TestCase):
    def test_default_policy(self):
        with jptool.Policy() as p:
            self.assertEqual(
                p.check("read", "src/main.rs"),
                (jptool.JPT_VERDICT_ALLOW, "fs.read 'src/main.rs': allowed: the default "
                 "policy lets tools read the workspace"))
            self.assertEqual(
                p.check(jptool.JPT_ACCESS_WRITE, "src/main.rs"),
                (jptool.JPT_VERDICT_ASK, "fs.write 'src/main.rs': needs approval: not "
                 "covered by the policy (the workspace is read-only: filesystem.writable "
                 "is false)"))
            self.assertFalse(p.hardlinks_allowed)

    def test_sensitive_paths_and_their_case(self):
        with jptool.Policy({"filesystem": {"allow": ["."], "writable": True}}) as p:
            self.assertEqual(
                p.check("read", ".ENV"),
                (jptool.JPT_VERDICT_DENY,
                 "fs.read '.ENV': denied: path is in the sensitive paths list (.env)"))
            self.assertEqual(p.check("list", "home/.ssh")[0], jptool.JPT_VERDICT_DENY)
            self.assertEqual(p.check("write", "keys/Id_Rsa.pub")[0], jptool.JPT_VERDICT_DENY)
        with jptool.Policy({"sensitive": "ask", "sensitive_paths": ["*.key"]}) as p:
            self.assertEqual(
                p.check("read", "tls/server.key"),
                (jptool.JPT_VERDICT_ASK, "fs.read 'tls/server.key': needs approval: path is "
                 "in the sensitive paths list (*.key)"))

    def test_deny_beats_allow(self):
        sandbox = '{"filesystem": {"allow": ["src"], "deny": ["src/private"], ' \
                  '"hardlinks": "allow"}}'
        with jptool.Policy(sandbox, raw=True) as p:
            self.assertEqual(p.check("read", "src/a.c")[0], jptool.JPT_VERDICT_ALLOW)
            self.assertEqual(
                p.check("read", "src/private/key"),
                (jptool.JPT_VERDICT_DENY,
                 "fs.read 'src/private/key': denied: under 'src/private' in filesystem.deny"))
            self.assertTrue(p.hardlinks_allowed)

    def test_refused_configuration_raises_with_its_message(self):
        with self.assertRaises(JptError) as cm:
            jptool.Policy({"filesystem": {"allow": ["/etc"]}})
        self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)
        self.assertEqual(cm.exception.message, "filesystem.allow[0]: '/etc' is absolute: "
                         "paths are relative to the workspace root")
        with self.assertRaises(JptError) as cm:
            jptool.Policy("{", raw=True)
        self.assertTrue(cm.exception.message.startswith("sandbox: invalid JSON at line 1"),
                        cm.exception.message)
        with self.assertRaises(JptError) as cm:
            jptool.Policy({"netwrk": {}})
        self.assertEqual(cm.exception.message,
                         "sandbox: unknown key 'netwrk' (known: filesystem, network, "
                         "commands, sensitive_paths, sensitive, uncovered)")

    def test_http_follows_network_allow_and_processes_their_commands_rule(self):
        with jptool.Policy({"network": {"allow": ["https://example.com/api"]},
                            "commands": {"git": {"args": [["log", "**"]]}}}) as p:
            self.assertEqual(
                p.check("http", "https://example.com/api/x"),
                (jptool.JPT_VERDICT_ALLOW, "http 'https://example.com/api/x': allowed: under "
                 "'https://example.com/api' in network.allow"))
            self.assertEqual(
                p.check("http", "https://allowed@example.com/api/x"),
                (jptool.JPT_VERDICT_DENY, "http 'https://allowed@example.com/api/x': denied: "
                 "the URL has user information (user@host), which is refused"))
            self.assertEqual(p.check("http", "https://example.com/apix")[0],
                             jptool.JPT_VERDICT_ASK)
            self.assertEqual(
                p.check("process", ["git", "log", "-p"]),
                (jptool.JPT_VERDICT_ALLOW, "process.run 'git': allowed: the arguments match "
                 "commands.git.args[0]"))
            self.assertEqual(
                p.check("process", ["git", "push"]),
                (jptool.JPT_VERDICT_ASK, "process.run 'git': needs approval: not covered by "
                 "the policy (the arguments match none of commands.git.args)"))
            self.assertEqual(p.check("process", '["git"]')[0], jptool.JPT_VERDICT_ASK)
            for bad in ([], "git", [1]):
                with self.assertRaises(JptError) as cm:
                    p.check("process", bad)
                self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)

    def test_paths_not_normalised(self):
        with jptool.Policy() as p:
            self.assertEqual(p.check("read", "a/../.env"),
                             (jptool.JPT_VERDICT_DENY,
                              "fs.read 'a/../.env': denied: path is not normalised"))
            self.assertEqual(p.check("read", jptool.normalize_path("a/../.env"))[0],
                             jptool.JPT_VERDICT_DENY)
        self.assertEqual(jptool.normalize_path("./src//lib/../main.rs"), "src/main.rs")
        self.assertEqual(jptool.normalize_path(""), ".")
        for bad in ("/etc/passwd", "../x", "a/../.."):
            with self.assertRaises(JptError) as cm:
                jptool.normalize_path(bad)
            self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)

    def test_arguments_and_lifetime(self):
        p = jptool.Policy()
        with self.assertRaises(JptError):
            p.check("execute", "x")
        with self.assertRaises(JptError):
            p.check(9, "x")
        with self.assertRaises(ValueError):
            p.check("read", "a\0b")
        p.close()
        p.close()
        self.assertTrue(p.closed)
        with self.assertRaises(ValueError):
            p.check("read", "a")
        lib = jptool._lib.lib
        self.assertEqual(lib.jpt_policy_check(None, 1, b"a", None), jptool.JPT_ERR_INVALID)
        self.assertEqual(lib.jpt_policy_new(None, None), jptool.JPT_ERR_INVALID)
        self.assertEqual(lib.jpt_policy_errmsg(None), b"")
        self.assertEqual(lib.jpt_policy_hardlinks_allowed(None), 0)
        lib.jpt_policy_free(None)

    def test_every_function_of_the_section_has_a_prototype(self):
        names = re.findall(r"JPT_EXPORT\s[^;(]*?\b(jpt_\w+)\s*\(", policy_section())
        self.assertEqual(len(names), 6, names)
        for name in names:
            self.assertIn(name, jptool._lib._PROTOTYPES, name)
            fn = getattr(jptool._lib.lib, name)
            self.assertEqual(tuple(fn.argtypes), tuple(jptool._lib._PROTOTYPES[name][1]), name)
            self.assertEqual(fn.restype, jptool._lib._PROTOTYPES[name][0], name)

    def test_constants_match_the_header(self):
        defines = re.findall(r"#define (JPT_\w+) (\d+)", policy_section())
        self.assertEqual(len(defines), 16, defines)
        for name, value in defines:
            self.assertEqual(getattr(jptool, name), int(value), name)
            self.assertIn(name, jptool.__all__)


# ---- Registry (registry.h) ----------------------------------------------------

TOOLS_DIR = os.environ.get("JPT_TEST_TOOLS")
REGISTRY_H = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                          os.pardir, "include", "jptool", "registry.h")

# Generous bound for waits: no test asserts a duration.
WAIT_MS = 20000

needs_tools = unittest.skipUnless(
    TOOLS_DIR and os.path.isdir(TOOLS_DIR),
    "JPT_TEST_TOOLS does not name the test tools' directory (meson sets it)")


def tool(name):
    return os.path.join(TOOLS_DIR, name)


def tools_config():
    return {"tools": [
        {"name": "greet", "description": "Greets someone.",
         "parameters": {"type": "object",
                        "properties": {"name": {"type": "string"}}},
         "command": [tool("outcome-tool"), "success", "{{tool}}"]},
        {"name": "merge", "command": [tool("ask-tool"), "{{tool}}"],
         "question_target": "assistant"},
        {"name": "merge_user", "command": [tool("ask-tool"), "{{tool}}"]},
        {"name": "echo", "description": "A line echo.", "stateful": True,
         "command": [tool("echo-lines")]},
        {"name": "nap", "command": [tool("sleep-ms"), "{{arguments.ms}}", "x"],
         "parameters": {"type": "object",
                        "properties": {"ms": {"type": "integer"}},
                        "required": ["ms"]}},
    ]}


def new_registry(**kw):
    """A registry with a short kill grace and drain window and the tools of
    tools_config() loaded."""
    opts = {"kill_grace_ms": 300, "drain_ms": 100, "settle_ms": 200}
    opts.update(kw)
    r = Registry(**opts)
    r.load_tools(tools_config())
    return r


def children_in_proc():
    """The pids whose parent is this process, zombies included."""
    me, out = os.getpid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == me:
            out.append(int(name))
    return out


def response(content):
    """A stateful call's content: the handle's response as JSON text."""
    return json.loads(content)


# RFD 037's await tool, exactly as the RFD gives it.
AWAIT_DESCRIPTION = (
    "Block until stateful tool handles reach completion. Use `any` to wait for "
    "the first handle to finish, `all` to wait for every handle to finish, or "
    "both to combine conditions.")
AWAIT_SCHEMA = {
    "type": "object",
    "properties": {
        "any": {"type": "array", "items": {"type": "string"},
                "description": "Handle IDs. Returns when at least one of these "
                               "handles reaches 'stopped'."},
        "all": {"type": "array", "items": {"type": "string"},
                "description": "Handle IDs. Returns when every one of these "
                               "handles reaches 'stopped'."},
        "timeout_secs": {"type": "integer",
                         "description": "Maximum seconds to wait. If exceeded, "
                                        "returns with current handle states. "
                                        "Omit for no timeout."},
    },
    "anyOf": [{"required": ["any"]}, {"required": ["all"]}],
}


@needs_tools
class RegistryOneShotTest(unittest.TestCase):
    def setUp(self):
        self.r = new_registry()

    def tearDown(self):
        self.r.close()

    def test_success_outcome_is_its_exact_content(self):
        self.assertEqual(self.r.call("greet", {"name": "Ada"}), ("hello Ada", False))
        # Arguments as a JSON string (providers send both), and submit().
        with self.r.submit([{"id": "call_1", "name": "greet",
                             "arguments": '{"name": "Bo"}'},
                            {"id": "call_2", "name": "nope", "arguments": {}}]) as b:
            self.assertIsInstance(b, Batch)
            self.assertTrue(self.r.wait(b, WAIT_MS))
            self.assertTrue(b.done)
            self.assertEqual(b.results(), [
                {"id": "call_1", "content": "hello Bo", "is_error": False},
                {"id": "call_2", "content": "Unknown tool `nope`", "is_error": True},
            ])

    def test_pending_results_and_timeouts(self):
        with self.r.submit([{"id": "n", "name": "nap", "arguments": {"ms": 400}}]) as b:
            self.assertFalse(b.done)
            self.assertEqual(b.results(), [{"id": "n", "content": None,
                                            "is_error": False, "pending": True}])
            self.assertFalse(self.r.wait(b, 1))
            self.assertTrue(self.r.run(WAIT_MS))
            self.assertTrue(b.done)
            self.assertEqual(b.results()[0]["content"], "xslept 400\n")
        with self.assertRaises(JptError) as cm:
            self.r.call("nap", {"ms": 5000}, timeout_ms=50)
        self.assertEqual(cm.exception.status, jptool.JPT_ERR_TIMEOUT)
        self.assertFalse(self.r.run(1))  # the dropped call still runs

    def test_legacy_question_answered_by_a_python_handler(self):
        asked = []
        replies = iter(["develop", True])

        def handler(q):
            self.assertIsInstance(q, Inquiry)
            with q.context as ctx:
                asked.append((q.tool, q.call_id, q.question, q.target, ctx.blocks))
            q.answer(next(replies))
            self.assertFalse(q.valid)

        self.r.set_inquiry_handler(handler)
        self.assertEqual(self.r.call("merge", {}, id="m1"),
                         ("merged into develop", False))
        self.assertEqual(asked, [
            ("merge", "m1",
             {"id": "branch", "text": "Which branch should I merge into?",
              "schema": {"type": "string", "enum": ["main", "develop", "staging"]},
              "default": "main"},
             jptool.JPT_TARGET_ASSISTANT,
             [{"type": "text", "text": "Feature is 2 commits ahead."}]),
            ("merge", "m1",
             {"id": "confirm", "text": "Really merge into develop?",
              "schema": {"type": "boolean"}},
             jptool.JPT_TARGET_ASSISTANT, []),
        ])
        # The default target is the user; an answer of False is a refusal.
        asked.clear()
        replies = iter(["main", False])
        self.assertEqual(self.r.call("merge_user", {}),
                         ("Error: merge cancelled", True))
        self.assertEqual([a[3] for a in asked], [jptool.JPT_TARGET_USER] * 2)

    def test_inquiry_answered_later_checked_and_cancelled(self):
        held = []
        self.r.set_inquiry_handler(held.append)
        with self.r.submit([{"id": "c", "name": "merge", "arguments": {}}]) as b:
            self.assertFalse(self.r.wait(b, 300))
            q = held.pop()
            self.assertEqual((q.tool, q.call_id, q.question["id"]),
                             ("merge", "c", "branch"))
            ctx = q.context  # a reference of our own: outlives the inquiry
            with self.assertRaises(JptError) as cm:
                q.answer("trunk")
            self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)
            self.assertIn("the answer does not fit question 'branch'",
                          cm.exception.message)
            self.assertEqual(q.errmsg, cm.exception.message)
            with self.assertRaises(JptError) as cm:
                q.answer("not json", raw=True)
            self.assertTrue(cm.exception.message.startswith("the answer is not JSON"),
                            cm.exception.message)
            self.assertTrue(q.valid)
            q.answer('"staging"', raw=True)
            self.assertFalse(q.valid)
            for use in (lambda: q.answer("main"), lambda: q.cancel(),
                        lambda: q.context):
                with self.assertRaises(ValueError):
                    use()
            self.assertEqual(q.question["id"], "branch")  # copies stay readable
            self.assertEqual(ctx.blocks,
                             [{"type": "text", "text": "Feature is 2 commits ahead."}])
            ctx.close()
            self.assertFalse(self.r.wait(b, 300))
            q = held.pop()
            self.assertEqual(q.question["text"], "Really merge into staging?")
            q.cancel("the user walked away")
            self.assertFalse(q.valid)
            self.assertTrue(self.r.wait(b, WAIT_MS))
            self.assertEqual(b.results(), [
                {"id": "c", "content": "The question `confirm` was not answered: "
                                       "the user walked away", "is_error": True}])

    def test_question_without_handler_is_an_error(self):
        self.r.set_inquiry_handler(lambda q: q.answer("main"))
        self.r.set_inquiry_handler(None)
        content, is_error = self.r.call("merge", {})
        self.assertTrue(is_error)
        self.assertEqual(content, "`merge` needs input that no one can give here: it "
                                  "asked question `branch` (\"Which branch should I "
                                  "merge into?\"), and no inquiry handler is installed")
        with self.assertRaises(TypeError):
            self.r.set_inquiry_handler(42)

    def test_handler_exception_cancels_and_is_raised_again(self):
        def handler(q):
            raise LookupError("no such branch")

        self.r.set_inquiry_handler(handler)
        with self.r.submit([{"id": "c", "name": "merge", "arguments": {}}]) as b:
            with self.assertRaises(LookupError):
                self.r.wait(b, WAIT_MS)
            self.assertTrue(self.r.wait(b, WAIT_MS))  # raised once only
            self.assertEqual(b.results(), [
                {"id": "c", "content": "The question `branch` was not answered: the "
                                       "inquiry handler failed: LookupError: no such "
                                       "branch", "is_error": True}])

    def test_handler_closing_the_batch_being_waited_on_ends_the_wait(self):
        # issue 7: this was a use after free inside jpt_registry_wait.
        held = []
        b = self.r.submit([{"id": "c", "name": "merge", "arguments": {}}])

        def handler(q):
            held.append(q)
            b.close()

        self.r.set_inquiry_handler(handler)
        with self.assertRaises(JptError) as cm:
            self.r.wait(b, WAIT_MS)
        self.assertEqual(cm.exception.status, jptool.JPT_ERR_CANCELLED)
        self.assertTrue(b.closed)
        held.pop().cancel()
        self.assertTrue(self.r.run(WAIT_MS))

    def test_inquiry_outlives_its_batch_and_dies_with_the_registry(self):
        held = []
        self.r.set_inquiry_handler(held.append)
        b = self.r.submit([{"id": "c", "name": "merge", "arguments": {}}])
        self.assertFalse(self.r.wait(b, 300))
        q = held.pop()
        b.close()  # the call goes on, its result dropped; the inquiry stays
        self.assertTrue(q.valid)
        q.answer("main")
        self.assertFalse(self.r.run(300))  # waiting for the second answer
        q = held.pop()
        self.assertEqual(q.question["id"], "confirm")
        q.cancel()
        self.assertTrue(self.r.run(WAIT_MS))
        self.assertEqual(list(e["type"] for e in self.r.events()), [])
        # An inquiry still held when the registry closes becomes invalid.
        b = self.r.submit([{"id": "d", "name": "merge", "arguments": {}}])
        self.assertFalse(self.r.wait(b, 300))
        q = held.pop()
        self.r.close()
        self.assertFalse(q.valid)
        self.assertTrue(b.closed)
        with self.assertRaises(ValueError):
            q.answer("main")
        with self.assertRaises(ValueError):
            b.results()
        b.close()


@needs_tools
class RegistryStatefulTest(unittest.TestCase):
    def setUp(self):
        self.r = new_registry()

    def tearDown(self):
        self.r.close()

    def test_echo_lines_session(self):
        content, is_error = self.r.call("echo", {"action": "spawn", "id": "e"})
        self.assertFalse(is_error)
        self.assertEqual(response(content),
                         {"id": "e", "state": "running", "content": "ready\n> "})
        content, is_error = self.r.call("echo", {"action": "apply", "id": "e",
                                                 "input": "hi\n"})
        self.assertEqual(response(content),
                         {"id": "e", "state": "running", "content": "echo: hi\n> "})
        content, is_error = self.r.call("echo", {"action": "fetch", "id": "e"})
        self.assertEqual(response(content),
                         {"id": "e", "state": "running", "content": ""})
        content, is_error = self.r.call("echo", {"action": "abort", "id": "e"})
        self.assertFalse(is_error)
        resp = response(content)
        self.assertEqual((resp["id"], resp["state"]), ("e", "stopped"))
        self.assertEqual(resp["result"], "[process ended: aborted]")
        # The model saw it stop: the handle is gone.
        self.assertEqual(self.r.call("echo", {"action": "fetch", "id": "e"}),
                         ("Handle `e` has stopped, and an earlier answer gave its result", True))

    def test_one_shot_and_stateful_calls_in_one_batch(self):
        calls = [{"id": "a", "name": "greet", "arguments": {"name": "Ada"}},
                 {"id": "b", "name": "echo", "arguments": {"action": "spawn", "id": "s"}}]
        with self.r.submit(calls) as b:
            self.assertTrue(self.r.wait(b, WAIT_MS))
            res = b.results()
        self.assertEqual(res[0], {"id": "a", "content": "hello Ada", "is_error": False})
        self.assertEqual(response(res[1]["content"]),
                         {"id": "s", "state": "running", "content": "ready\n> "})
        content, _ = self.r.call("echo", {"action": "apply", "id": "s",
                                          "input": "quit\n"})
        self.assertEqual(response(content)["state"], "stopped")


@needs_tools
class RegistryTest(unittest.TestCase):
    def test_an_unknown_dialect_names_the_known_ones(self):
        # "openai-responses" is the spelling a user tries first.
        with new_registry() as r, r.submit([]) as b:
            with self.assertRaises(jptool.JptError) as e:
                r.tools("openai-responses")
            self.assertEqual(e.exception.message,
                             "unknown dialect 'openai-responses' (openai, anthropic, gemini, "
                             "mcp, openai_responses)")
            with self.assertRaises(jptool.JptError) as e:
                b.results("openai-responses")
            self.assertEqual(e.exception.message,
                             "unknown result shape 'openai-responses' (as_called, openai, "
                             "openai_responses, anthropic, gemini)")

    def test_tools_in_the_anthropic_dialect(self):
        with new_registry() as r:
            tools = r.tools("anthropic")
            # RFD 037: a stateful tool (echo) brings the await tool.
            self.assertEqual([t["name"] for t in tools],
                             ["greet", "merge", "merge_user", "echo", "nap", "await"])
            for t in tools:
                self.assertEqual(set(t), {"name", "description", "input_schema"})
            self.assertEqual(tools[0], {
                "name": "greet", "description": "Greets someone.",
                "input_schema": {"type": "object",
                                 "properties": {"name": {"type": "string"}}}})
            # By default the flat schema: a plain object Anthropic accepts.
            echo = tools[3]["input_schema"]
            self.assertEqual(echo["type"], "object")
            self.assertNotIn("oneOf", echo)
            self.assertEqual(echo["properties"]["action"]["enum"],
                             ["spawn", "fetch", "apply", "abort"])
            self.assertEqual(tools, r.tools(jptool.JPT_DIALECT_ANTHROPIC))
            self.assertEqual(tools, r.tools("anthropic", flat=True))
            # RFD 009's oneOf on request.
            one_of = r.tools("anthropic", one_of=True)
            self.assertEqual([v["properties"]["action"]["const"]
                              for v in one_of[3]["input_schema"]["oneOf"]],
                             ["spawn", "fetch", "apply", "abort"])
            self.assertEqual(one_of[5], {"name": "await", "description": AWAIT_DESCRIPTION,
                                         "input_schema": AWAIT_SCHEMA})
            # The other dialects wrap the same schemas.
            openai = r.tools()
            self.assertEqual(openai[0], {"type": "function", "function": {
                "name": "greet", "description": "Greets someone.",
                "parameters": tools[0]["input_schema"]}})
            self.assertEqual(r.tools("mcp")["tools"][3]["inputSchema"], echo)
            responses = r.tools("openai_responses")
            self.assertEqual(responses[0], {
                "type": "function", "name": "greet", "description": "Greets someone.",
                "parameters": tools[0]["input_schema"], "strict": False})
            gemini = r.tools("gemini")["functionDeclarations"]
            self.assertNotIn("oneOf", gemini[3]["parameters"])
            self.assertEqual(gemini[3]["parameters"]["properties"]["input"]["type"],
                             "string")
            flat_await = dict(AWAIT_SCHEMA)
            del flat_await["anyOf"]
            self.assertEqual(tools[5], {"name": "await", "description": AWAIT_DESCRIPTION,
                                        "input_schema": flat_await})
            self.assertEqual(gemini[5]["name"], "await")
            self.assertNotIn("anyOf", gemini[5]["parameters"])
            strict = r.tools("openai", strict=True)
            self.assertTrue(strict[3]["function"]["strict"])
            echo_strict = strict[3]["function"]["parameters"]
            self.assertFalse(echo_strict["additionalProperties"])
            self.assertEqual(echo_strict["required"], list(echo_strict["properties"]))
            with self.assertRaises(JptError) as cm:
                r.tools("bogus")
            self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)
            with self.assertRaises(JptError):
                r.tools(99)
            with self.assertRaises(JptError):
                r.tools("anthropic", strict=True)
            with self.assertRaises(JptError):
                r.tools("gemini", one_of=True)

    def test_provider_calls_go_in_as_sent_and_results_come_back_in_their_shapes(self):
        with new_registry() as r:
            # An OpenAI Chat Completions message's tool_calls, as they came.
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "greet", "arguments": '{"name":"Ada"}'}}]}
            with r.submit(message["tool_calls"]) as b:
                self.assertTrue(r.wait(b, WAIT_MS))
                self.assertEqual(b.results("as_called"), [
                    {"role": "tool", "tool_call_id": "call_1", "content": "hello Ada"}])
                self.assertEqual(b.results(), [
                    {"id": "call_1", "content": "hello Ada", "is_error": False}])
            # An Anthropic message's content, text block and all.
            content = [{"type": "text", "text": "Greeting."},
                       {"type": "tool_use", "id": "toolu_1", "name": "greet",
                        "input": {"name": "Bo"}},
                       {"type": "tool_use", "id": "toolu_2", "name": "nope", "input": {}}]
            with r.submit(content) as b:
                self.assertTrue(r.wait(b, WAIT_MS))
                self.assertEqual(b.results("anthropic"), [
                    {"type": "tool_result", "tool_use_id": "toolu_1",
                     "content": "hello Bo", "is_error": False},
                    {"type": "tool_result", "tool_use_id": "toolu_2",
                     "content": "Unknown tool `nope`", "is_error": True}])
                self.assertEqual(b.results(jptool.JPT_DIALECT_OPENAI_RESPONSES)[0], {
                    "type": "function_call_output", "call_id": "toolu_1",
                    "output": "hello Bo"})
            # Gemini parts: a call without an id is named by its position.
            parts = [{"text": "Greeting."},
                     {"functionCall": {"name": "greet", "args": {"name": "Cy"}}}]
            with r.submit(parts) as b:
                self.assertTrue(r.wait(b, WAIT_MS))
                self.assertEqual(b.results()[0]["id"], "greet#1")
                self.assertEqual(b.results("gemini"), [{"functionResponse": {
                    "name": "greet", "response": {"output": "hello Cy"}}}])
                with self.assertRaises(JptError) as cm:
                    b.results("mcp")
                self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)
            with r.submit([{"id": "s", "name": "nap", "arguments": {"ms": 10000}}]) as b:
                with self.assertRaises(JptError) as cm:
                    b.results("openai")
                self.assertEqual(cm.exception.status, jptool.JPT_ERR_STATE)
                b.cancel()
                self.assertTrue(r.wait(b, WAIT_MS))

    def test_an_empty_batch_emits_batch_done(self):
        with new_registry() as r, r.submit([]) as b:
            self.assertTrue(b.done)
            r.dispatch()
            self.assertEqual([e["type"] for e in r.events()], ["batch_done"])
            self.assertEqual(b.results("as_called"), [])

    def test_await_is_listed_only_with_a_stateful_tool(self):
        with Registry() as r:
            r.load_tools({"tools": [{"name": "t", "command": ["true"]}]})
            self.assertEqual([t["name"] for t in r.tools("anthropic")], ["t"])
            self.assertEqual(r.call("await", {"all": ["x"]}),
                             ("Unknown tool `await`", True))
            r.load_tools({"tools": [{"name": "s", "stateful": True,
                                     "command": ["cat"]}]})
            self.assertEqual([t["name"] for t in r.tools("anthropic")],
                             ["t", "s", "await"])

    def test_tool_sandbox_says_what_a_tools_os_sandbox_enforces(self):
        with Registry() as r:
            r.load_tools({"tools": [{"name": "t", "command": ["true"]},
                                    {"name": "s", "command": ["true"], "sandbox": True,
                                     "os_sandbox": {"mode": "best-effort"}}]})
            self.assertEqual(r.tool_sandbox("t"),
                             (0, 'none: a stdio tool without "sandbox" runs unconfined'))
            enforced, report = r.tool_sandbox("s")
            self.assertTrue(report.startswith("stdio profile"), report)
            self.assertEqual(enforced & 0x01, 0x01)  # no_new_privs, always
            with self.assertRaises(JptError) as cm:
                r.tool_sandbox("nope")
            self.assertEqual(cm.exception.status, jptool.JPT_ERR_NOT_FOUND)

    def test_the_registrys_sandbox_mode_is_the_default_of_its_definitions(self):
        vfs = {"runtime": "vfs", "command": ["true"]}
        with Registry(sandbox_mode=jptool.JPT_SANDBOX_OFF) as r:
            r.load_tools({"tools": [{"name": "v", **vfs},
                                    {"name": "w", **vfs, "os_sandbox": {"mode": "best-effort"}}]})
            self.assertEqual(r.tool_sandbox("v"), (0, 'off: the sandbox mode is "off"'))
            enforced, report = r.tool_sandbox("w")
            self.assertTrue(report.startswith("vfs profile"), report)
            self.assertEqual(enforced & jptool.JPT_SANDBOX_ENFORCED_NO_NEW_PRIVS,
                             jptool.JPT_SANDBOX_ENFORCED_NO_NEW_PRIVS)
        for bad in (4, -1):
            with self.assertRaises(JptError) as cm:
                Registry(sandbox_mode=bad)
            self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)
            self.assertEqual(cm.exception.message,
                             f"Registry: unknown sandbox_mode {bad} (JPT_SANDBOX_*)")

    def test_load_tools_errors_name_the_tool_and_the_field(self):
        with Registry() as r:
            r.load_tools(tools_config())
            with self.assertRaises(JptError) as cm:
                r.load_tools({"tools": [
                    {"name": "fine", "command": ["true"]},
                    {"name": "broken", "command": "not an array"}]})
            e = cm.exception
            self.assertEqual((e.status, e.name),
                             (jptool.JPT_ERR_INVALID, "JPT_ERR_INVALID"))
            self.assertEqual(e.message, "tool 'broken': 'command' must be a "
                                        "non-empty array of strings")
            self.assertEqual(r.errmsg, e.message)
            # Nothing was added.
            self.assertNotIn("fine", [t["name"] for t in r.tools("anthropic")])
            with self.assertRaises(JptError) as cm:
                r.load_tools('{"tools": [{"name": "greet", "command": ["true"]}]}')
            self.assertEqual(cm.exception.status, jptool.JPT_ERR_EXISTS)
            self.assertIn("'greet'", cm.exception.message)
            r.load_tools({"tools": [{"name": "greet", "command": ["true"]}]},
                         replace=True)
            with self.assertRaises(JptError) as cm:
                r.load_tools({"tools": [{"name": "v", "runtime": "vfs"}]})
            self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)
            with self.assertRaises(JptError) as cm:
                r.load_tools(b"{")
            self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)

    def test_submit_errors(self):
        with new_registry() as r:
            with self.assertRaises(JptError) as cm:
                r.submit({"id": "x"})
            self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)
            self.assertEqual(cm.exception.message,
                             "submit: the calls must be a JSON array")
            with self.assertRaises(JptError):
                r.submit("[{")
            with self.assertRaises(TypeError):
                r.wait("not a batch")
            with new_registry() as other, other.submit([]) as b:
                with self.assertRaises(TypeError):
                    r.wait(b)

    def test_events_after_a_batch(self):
        with new_registry() as r:
            self.assertEqual(list(r.events()), [])
            calls = [{"id": "a", "name": "greet", "arguments": {}},
                     {"id": "b", "name": "greet", "arguments": {"name": "Bo"}}]
            with r.submit(calls) as b:
                self.assertTrue(r.wait(b, WAIT_MS))
                events = list(r.events())
                self.assertEqual(len(events), 3, events)
                done = sorted(events[:2], key=lambda e: e["call_id"])
                self.assertEqual(done, [
                    {"type": "call_done", "call_id": "a", "handle_id": None,
                     "tool": "greet", "state": None, "batch": b},
                    {"type": "call_done", "call_id": "b", "handle_id": None,
                     "tool": "greet", "state": None, "batch": b},
                ])
                self.assertEqual(events[2], {"type": "batch_done", "call_id": None,
                                             "handle_id": None, "tool": None,
                                             "state": None, "batch": b})
                self.assertEqual(list(r.events()), [])
            # A stateful handle: output, then its call; abort: stopped.
            r.call("echo", {"action": "spawn", "id": "e"}, id="s1")
            events = list(r.events())
            self.assertEqual([e["type"] for e in events],
                             ["output", "call_done", "batch_done"])
            self.assertEqual((events[0]["handle_id"], events[0]["tool"]), ("e", "echo"))
            self.assertEqual((events[1]["call_id"], events[1]["handle_id"]), ("s1", "e"))
            self.assertIsNone(events[1]["batch"])  # closed by call()
            r.call("echo", {"action": "abort", "id": "e"})
            state = [e for e in r.events() if e["type"] == "state"]
            self.assertEqual(state, [{"type": "state", "call_id": None,
                                      "handle_id": "e", "tool": "echo",
                                      "state": "stopped", "batch": None}])

    def test_driven_from_a_selectors_loop(self):
        with new_registry() as r, selectors.DefaultSelector() as sel:
            fd = r.fileno()
            self.assertIsInstance(fd, int)
            self.assertEqual(r.fileno(), fd)
            sel.register(r, selectors.EVENT_READ)  # via fileno()
            self.assertEqual(r.timeout(), -1)
            calls = [{"id": "a", "name": "greet", "arguments": {"name": "Ada"}},
                     {"id": "b", "name": "nap", "arguments": {"ms": 100}},
                     {"id": "c", "name": "echo", "arguments": {"action": "spawn",
                                                               "id": "e"}}]
            deadline = time.monotonic() + WAIT_MS / 1000
            rounds = 0
            with r.submit(calls) as b:
                while not b.done:
                    self.assertLess(time.monotonic(), deadline, "the batch never finished")
                    ms = r.timeout()
                    sel.select(None if ms < 0 else ms / 1000)
                    while r.dispatch() > 0:
                        pass
                    rounds += 1
                res = b.results()
            self.assertGreater(rounds, 1)
            self.assertEqual(res[0]["content"], "hello Ada")
            self.assertEqual(res[1]["content"], "xslept 100\n")
            self.assertEqual(response(res[2]["content"]),
                             {"id": "e", "state": "running", "content": "ready\n> "})
            # wakeup() makes the fd readable; dispatch() consumes it.
            r.wakeup()
            self.assertTrue(sel.select(0))
            self.assertEqual(r.dispatch(), 0)
            self.assertFalse(sel.select(0))

    def test_wakeup_from_another_thread_interrupts_a_poll(self):
        with new_registry() as r, selectors.DefaultSelector() as sel:
            sel.register(r.fileno(), selectors.EVENT_READ)
            t = threading.Timer(0.05, r.wakeup)
            t.start()
            try:
                self.assertTrue(sel.select(WAIT_MS / 1000))
            finally:
                t.join()
            r.dispatch()

    def test_context_manager_leaves_no_child(self):
        flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
        with new_registry() as r:
            content, _ = r.call("echo", {"action": "spawn", "id": "e"})
            self.assertEqual(response(content)["state"], "running")
            self.assertEqual(len(children_in_proc()), 1)  # the check sees it
            with r.submit([{"id": "n", "name": "nap",
                            "arguments": {"ms": 10000}}]) as b:
                self.assertFalse(r.wait(b, 200))
            # The call keeps running after its batch is freed.
            self.assertEqual(len(children_in_proc()), 2)
        self.assertTrue(r.closed)
        with self.assertRaises(ChildProcessError):
            os.waitid(os.P_ALL, 0, flags)
        self.assertEqual(children_in_proc(), [])
        for use in (r.fileno, r.timeout, r.dispatch, r.run, r.wakeup,
                    lambda: r.call("greet"), lambda: list(r.events()),
                    lambda: r.load_tools({"tools": []}), lambda: r.tools(),
                    r.take_notifications, r.end_turn):
            with self.assertRaises(ValueError):
                use()
        r.close()  # twice is harmless

    def test_garbage_collection_frees_registry_batches_and_children(self):
        r = new_registry()
        r.call("echo", {"action": "spawn", "id": "e"})
        b = r.submit([{"id": "n", "name": "nap", "arguments": {"ms": 10000}}])
        self.assertFalse(r.wait(b, 200))
        self.assertEqual(len(children_in_proc()), 2)
        del r  # the batch keeps the registry alive
        gc.collect()
        self.assertEqual(len(children_in_proc()), 2)
        del b
        gc.collect()
        self.assertEqual(children_in_proc(), [])

    def test_options(self):
        with tempfile.TemporaryDirectory() as d:
            state_file = os.path.join(d, "children.json")
            with Registry(root=d, kill_grace_ms=300, capture_bytes=4096,
                          output_limit=100, settle_ms=50, yield_ms=1000,
                          drain_ms=50, max_inquiry_rounds=1, spool_dir=d,
                          state_file=state_file, turn_end_timeout_ms=5000) as r:
                r.load_tools(tools_config())
                r.load_tools({"tools": [{"name": "pwd", "command": ["pwd"]}]})
                self.assertEqual(r.call("pwd"), (os.path.realpath(d) + "\n", False))
                r.set_inquiry_handler(lambda q: q.answer("main"))
                content, is_error = r.call("merge")
                self.assertTrue(is_error)
                self.assertIn("was stopped after 1 questions", content)
                r.call("echo", {"action": "spawn", "id": "e"})
                self.assertTrue(os.path.exists(state_file))
            self.assertFalse(os.path.exists(state_file))
            self.assertEqual(jptool.reap_stale(state_file), 0)  # missing: no error
        # The library's message (jpt_last_error) names the option and why
        # (issue 16: there was none).
        with self.assertRaises(JptError) as cm:
            Registry(root="/nonexistent/jptool/root")
        self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)
        self.assertEqual(cm.exception.message, "jpt_registry_new: root "
                         "'/nonexistent/jptool/root': No such file or directory")
        self.assertEqual(jptool.last_error(), cm.exception.message)
        with self.assertRaises(JptError) as cm:
            Registry(settle_ms=-1)
        self.assertEqual(cm.exception.message, "jpt_registry_new: settle_ms is -1: a "
                         "duration is 0 (the default) or more")
        with self.assertRaises(JptError) as cm:
            Registry(turn_end_timeout_ms=-1)
        self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)
        self.assertIn("turn_end_timeout_ms is -1", cm.exception.message)
        with Registry():
            self.assertEqual(jptool.last_error(), "")  # a success clears it
        with self.assertRaises(JptError) as cm:
            jptool.Files.open_dir("/nonexistent/jptool/root")
        self.assertIn("jpt_files_open_dir '/nonexistent/jptool/root'", cm.exception.message)
        with self.assertRaises(JptError) as cm:
            jptool.State.new(9)
        self.assertEqual(cm.exception.message,
                         "jpt_state_new: kind 9 is not a JPT_STATE_* kind")
        with tempfile.TemporaryDirectory() as d, self.assertRaises(JptError) as cm:
            jptool.reap_stale(d)  # a directory: it cannot be removed as a file
        self.assertEqual(cm.exception.status, jptool.JPT_ERR_IO)
        self.assertIn("jpt_registry_reap_stale: removing", cm.exception.message)
        with self.assertRaises(ValueError):
            Registry(turn_end_timeout_ms=2 ** 31)
        with self.assertRaises(TypeError):
            Registry(turn_end_timeout_ms=1.5)
        with self.assertRaises(ValueError):
            Registry(kill_grace_ms=2 ** 40)
        with self.assertRaises(ValueError):
            Registry(output_limit=-1)
        with self.assertRaises(TypeError):
            Registry(settle_ms="10")
        with self.assertRaises(TypeError):
            Registry("/tmp")  # keyword options only
        Registry().close()  # every default

    def test_containment_option(self):
        Registry(containment=jptool.JPT_CONTAIN_SESSION).close()
        with self.assertRaises(JptError) as cm:
            Registry(containment=jptool.JPT_CONTAIN_SESSION + 1)
        self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)
        with self.assertRaises(TypeError):
            Registry(containment="cgroup")

    def test_cgroup_containment_kills_an_escaped_grandchild(self):
        try:
            r = Registry(containment=jptool.JPT_CONTAIN_CGROUP)
        except JptError as e:
            if e.status != jptool.JPT_ERR_UNSUPPORTED:
                raise
            self.skipTest("no cgroup v2 this process may make cgroups in")
        with r, tempfile.TemporaryDirectory() as d:
            r.load_tools({"tools": [{"name": "escape", "command": [tool("escape"), d]}]})
            self.assertEqual(r.call("escape"), ("ready\n", False))
            with open(os.path.join(d, "pid")) as f:
                pid = int(f.read())
            try:
                pidfd = os.pidfd_open(pid)
            except ProcessLookupError:
                return  # gone and reaped
            try:
                with selectors.DefaultSelector() as sel:
                    sel.register(pidfd, selectors.EVENT_READ)
                    exited = sel.select(WAIT_MS / 1000)
                if not exited:
                    os.kill(pid, 9)
                self.assertTrue(exited, "the escaped grandchild outlived the call")
            finally:
                os.close(pidfd)


@needs_tools
class BuiltinTest(unittest.TestCase):
    def setUp(self):
        self.r = Registry(kill_grace_ms=300, settle_ms=100)

    def tearDown(self):
        self.r.close()

    @staticmethod
    def state(kind, text=None, question=None):
        s = State.new(kind)
        if text is not None:
            s.add_text(text)
        if question is not None:
            s.add_question(*question)
        return s

    def test_one_shot_builtin(self):
        seen = []

        def start(h, args):
            self.assertIsInstance(h, Handle)
            seen.append((h.id, h.tool, h.stateful, args))
            with self.state("stopped", f"sum={args['a'] + args['b']}") as s:
                h.update(s)
            self.assertFalse(h.valid)
            with self.assertRaises(ValueError):
                h.update(self.state("stopped"))

        self.r.add_builtin({"name": "add", "parameters": {
            "type": "object", "properties": {"a": {"type": "integer"},
                                             "b": {"type": "integer"}},
            "required": ["a", "b"]}}, start)
        gc.collect()  # the callbacks live as long as the registry
        self.assertEqual(self.r.call("add", {"a": 2, "b": 3}, id="x"), ("sum=5", False))
        self.assertEqual(seen, [("x", "add", False, {"a": 2, "b": 3})])
        self.assertEqual(self.r.call("add", {"a": "2", "b": 1}),
                         ("Invalid arguments for `add`: at /a: expected integer, "
                          "got string", True))
        # A dict is read as an RFD 058 envelope.
        self.r.add_builtin('{"name": "env"}', lambda h, a: h.update(
            {"content": [{"type": "text", "text": "boom"}], "isError": True}))
        self.assertEqual(self.r.call("env"), ("Error: boom", True))

    def test_stateful_builtin_spawn_apply_fetch_abort(self):
        held, log = {}, []

        def start(h, args):
            held["h"] = h
            h.update(self.state("running", "hello " + args["who"]))

        def apply(h, value):
            log.append(("apply", h is held["h"], value))
            h.update(self.state("running", f"got {json.dumps(value)}"))

        def abort(h):
            log.append(("abort", h.id, h.valid))

        self.r.add_builtin({"name": "agent", "stateful": True,
                            "parameters": {"type": "object",
                                           "properties": {"who": {"type": "string"}}}},
                           start, apply, abort)
        content, _ = self.r.call("agent", {"action": "spawn", "id": "a1", "who": "Ada"})
        self.assertEqual(response(content),
                         {"id": "a1", "state": "running", "content": "hello Ada"})
        h = held["h"]
        self.assertEqual((h.id, h.tool, h.stateful, h.valid), ("a1", "agent", True, True))
        content, _ = self.r.call("agent", {"action": "apply", "id": "a1",
                                           "input": {"k": [1]}})
        self.assertEqual(response(content)["content"], 'got {"k": [1]}')
        # Progress reported outside any callback, read by a fetch.
        h.update(self.state("running", "later"))
        content, _ = self.r.call("agent", {"action": "fetch", "id": "a1"})
        self.assertEqual(response(content)["content"], "later")
        content, is_error = self.r.call("agent", {"action": "abort", "id": "a1"})
        self.assertEqual(response(content)["state"], "stopped")
        self.assertFalse(is_error)
        self.assertEqual(log, [("apply", True, {"k": [1]}), ("abort", "a1", True)])
        self.assertFalse(h.valid)
        with self.assertRaises(ValueError):
            h.update(self.state("running", "too late"))

    def test_stateful_builtin_stops_by_itself(self):
        held = {}

        def start(h, args):
            held["h"] = h

        self.r.add_builtin({"name": "job", "stateful": True, "actions": ["fetch"]},
                           start)
        content, _ = self.r.call("job", {"action": "spawn", "id": "j"})
        self.assertEqual(response(content),
                         {"id": "j", "state": "running", "content": ""})
        held["h"].update(self.state("stopped", "all done"))
        self.assertFalse(held["h"].valid)
        self.assertEqual(list(e["state"] for e in self.r.events()
                              if e["type"] == "state"), ["stopped"])
        content, _ = self.r.call("job", {"action": "fetch", "id": "j"})
        self.assertEqual(response(content),
                         {"id": "j", "state": "stopped", "result": "all done"})
        self.assertEqual(self.r.call("job", {"action": "fetch", "id": "j"}),
                         ("Handle `j` has stopped, and an earlier answer gave its result", True))

    def test_one_shot_builtin_question_goes_to_the_inquiry_handler(self):
        handles = []

        def start(h, args):
            handles.append(h)
            h.update(self.state("waiting", "About to deploy.",
                                ("go", "Deploy now?", {"type": "boolean"})))
            self.assertFalse(h.valid)  # handed to the inquiry

        def apply(h, answer):
            handles.append(h)
            self.assertTrue(h.valid)
            h.update(self.state("stopped", f"deployed={answer}"))

        questions = []

        def handler(q):
            with q.context as ctx:
                questions.append((q.question, [b["text"] for b in ctx.blocks]))
            q.answer(True)

        self.r.add_builtin({"name": "deploy"}, start, apply)
        self.r.set_inquiry_handler(handler)
        self.assertEqual(self.r.call("deploy"), ("deployed=True", False))
        self.assertEqual(questions, [({"id": "go", "text": "Deploy now?",
                                       "schema": {"type": "boolean"}},
                                      ["About to deploy."])])
        self.assertEqual(len(handles), 2)
        self.assertIsNot(handles[0], handles[1])
        self.assertFalse(handles[1].valid)
        # Without apply, the answer is refused.
        self.r.add_builtin({"name": "deploy2"}, start)
        self.assertEqual(self.r.call("deploy2"),
                         ("`deploy2` refused the answer: not supported", True))

    def test_callback_failures(self):
        def boom(h, args):
            raise KeyError("boom")

        self.r.add_builtin({"name": "bad"}, boom)
        with self.r.submit([{"id": "x", "name": "bad", "arguments": {}}]) as b:
            with self.assertRaises(KeyError):
                self.r.wait(b, WAIT_MS)
            self.assertTrue(b.done)
            self.assertEqual(b.results(), [{
                "id": "x", "is_error": True,
                "content": "`bad` could not run: the tool failed to start: "
                           "invalid argument or malformed input"}])

        def denied(h, args):
            raise JptError(jptool.JPT_ERR_DENIED)

        self.r.add_builtin({"name": "denied"}, denied)
        self.r.add_builtin({"name": "status"}, lambda h, a: jptool.JPT_ERR_LIMIT)
        self.assertEqual(self.r.call("denied"),
                         ("`denied` could not run: the tool failed to start: "
                          "denied by the access policy", True))
        self.assertEqual(self.r.call("status"),
                         ("`status` could not run: the tool failed to start: "
                          "size or count limit exceeded", True))

        def closer(h, args):
            self.r.close()

        self.r.add_builtin({"name": "closer"}, closer)
        with self.assertRaises(RuntimeError):
            self.r.call("closer")
        self.assertFalse(self.r.closed)

    def test_add_builtin_errors(self):
        with self.assertRaises(JptError) as cm:
            self.r.add_builtin({"name": "s", "stateful": True}, lambda h, a: None)
        self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)
        self.assertIn("apply callback", cm.exception.message)
        with self.assertRaises(JptError) as cm:
            self.r.add_builtin({"name": "c", "command": ["true"]}, lambda h, a: None)
        self.assertIn("'command' does not apply to a builtin tool", cm.exception.message)
        with self.assertRaises(TypeError):
            self.r.add_builtin({"name": "t"}, None)
        self.r.add_builtin({"name": "ok", "stateful": True, "actions": ["abort"]},
                           lambda h, a: None)

    def test_close_aborts_live_builtin_handles(self):
        held, aborted = [], []

        def abort(h):
            # Inside close(): the handle is usable, the registry is not.
            aborted.append((h.id, h is held[0] if h.stateful else None, h.valid))
            h.update(self.state("stopped", "stopped by close"))
            with self.assertRaises(ValueError):
                self.r.fileno()

        self.r.add_builtin({"name": "keep", "stateful": True, "actions": ["abort"]},
                           lambda h, a: held.append(h), abort=abort)
        self.r.add_builtin({"name": "slow"}, lambda h, a: held.append(h), abort=abort)
        self.r.call("keep", {"action": "spawn", "id": "k"})
        b = self.r.submit([{"id": "s1", "name": "slow", "arguments": {}}])
        self.assertFalse(self.r.wait(b, 100))
        self.assertEqual([h.valid for h in held], [True, True])
        self.r.close()
        self.assertEqual(sorted(aborted, key=str), [("k", True, True),
                                                    ("s1", None, True)])
        self.assertFalse(held[0].valid)
        self.assertFalse(held[1].valid)
        self.assertTrue(b.closed)
        with self.assertRaises(ValueError):
            held[0].update(self.state("running", "x"))

    def test_exception_in_an_abort_callback_at_close_is_raised_by_close(self):
        def abort(h):
            raise OSError("could not stop the sub-agent")

        self.r.add_builtin({"name": "keep", "stateful": True, "actions": ["abort"]},
                           lambda h, a: None, abort=abort)
        self.r.call("keep", {"action": "spawn", "id": "k"})
        with self.assertRaises(OSError):
            self.r.close()
        self.assertTrue(self.r.closed)
        self.r.close()


# ---- Batches, await, notifications and the turn end (RFD 037) ----------------


def slept(ms):
    """A sleeper's result: the output the model has not seen yet (sleep-ms
    prints "slept MS" last), then how the process ended."""
    return f"slept {ms}\n\n[process ended: exit status 0]"


def sleeper(name, **extra):
    """A stateful stand-in for a long-running tool (cargo check, a code
    search): sleep-ms prints TEXT, sleeps MS, prints "slept MS" and exits."""
    definition = {
        "name": name, "stateful": True,
        "command": [tool("sleep-ms"), "{{arguments.ms}}", "{{arguments.text}}"],
        "parameters": {"type": "object",
                       "properties": {"ms": {"type": "integer"},
                                      "text": {"type": "string"}},
                       "required": ["ms", "text"]},
    }
    definition.update(extra)
    return definition


def await_tools_config():
    return {"tools": [
        sleeper("cargo_check"),
        sleeper("cargo_test"),
        sleeper("crate_search"),
        sleeper("github_code_search"),
        sleeper("quiet", spawn={"notifications": {"on_success": False}}),
        sleeper("job_abort", spawn={"lifecycle": {"on_turn_end": "abort"}}),
        sleeper("job_await", spawn={"lifecycle": {"on_turn_end": "await"}}),
        sleeper("job_inquire", spawn={"lifecycle": {"on_turn_end": "inquire"}}),
        {"name": "counter", "stateful": True, "command": [tool("stateful-counter")]},
        {"name": "nap", "command": [tool("sleep-ms"), "{{arguments.ms}}", "x"],
         "parameters": {"type": "object",
                        "properties": {"ms": {"type": "integer"}},
                        "required": ["ms"]}},
        # A one-shot tool whose run leaves a trace: it creates a file.
        {"name": "mark", "command": ["touch", "{{arguments.path}}"],
         "parameters": {"type": "object",
                        "properties": {"path": {"type": "string"}},
                        "required": ["path"]}},
    ]}


def spawn_call(call_id, name, handle_id, ms, text):
    return {"id": call_id, "name": name,
            "arguments": {"action": "spawn", "id": handle_id, "ms": ms, "text": text}}


def await_call(call_id, **arguments):
    return {"id": call_id, "name": "await", "arguments": arguments}


class AwaitTestCase(unittest.TestCase):
    """A registry with the tools of await_tools_config(). Spawns answer
    once output is quiet for 100 ms, well before a sleeper of 400 ms or
    more stops; no test asserts a duration."""

    def setUp(self):
        self.r = self.registry()

    def tearDown(self):
        self.r.close()
        self.assertEqual(children_in_proc(), [])

    @staticmethod
    def registry(**kw):
        opts = {"kill_grace_ms": 300, "drain_ms": 100, "settle_ms": 100}
        opts.update(kw)
        r = Registry(**opts)
        r.load_tools(await_tools_config())
        return r

    def spawn(self, name, handle_id, ms, text):
        content, is_error = self.r.call(name, {"action": "spawn", "id": handle_id,
                                               "ms": ms, "text": text})
        self.assertFalse(is_error, content)
        self.assertEqual(response(content),
                         {"id": handle_id, "state": "running", "content": text})

    def fetch(self, name, handle_id):
        return self.r.call(name, {"action": "fetch", "id": handle_id})

    def submit_and_wait(self, calls):
        with self.r.submit(calls) as b:
            self.assertTrue(self.r.wait(b, WAIT_MS))
            return b.results()

    def drive_until(self, done):
        """Polls and dispatches from a selectors loop until done() is true
        (wait and run return at once when no call is in flight)."""
        deadline = time.monotonic() + WAIT_MS / 1000
        with selectors.DefaultSelector() as sel:
            sel.register(self.r, selectors.EVENT_READ)
            while True:
                while self.r.dispatch() > 0:
                    pass
                if done():
                    return
                left = deadline - time.monotonic()
                self.assertGreater(left, 0, "the condition never came true")
                ms = self.r.timeout()
                sel.select(left if ms < 0 else min(left, ms / 1000))

    def until_stopped(self, handle_id):
        """Drives the registry until the handle's stopped state event."""
        events = []

        def stopped():
            events.extend(self.r.events())
            return any(e["type"] == "state" and e["handle_id"] == handle_id
                       and e["state"] == "stopped" for e in events)

        self.drive_until(stopped)

    def take_notes(self):
        """take_notifications() with each elapsed_secs checked and dropped."""
        notes = self.r.take_notifications()
        self.assertIsInstance(notes, list)
        for note in notes:
            elapsed = note.pop("elapsed_secs")
            self.assertIsInstance(elapsed, (int, float))
            self.assertGreaterEqual(elapsed, 0)
        return notes


@needs_tools
class AwaitTest(AwaitTestCase):
    def test_two_spawns_and_await_all_in_one_submit(self):
        # RFD 037's concrete example: cargo check and cargo test spawned in
        # parallel and awaited together, all in a single batch.
        res = self.submit_and_wait([
            spawn_call("call_1", "cargo_check", "check", 400, "Compiling jp_cli\n"),
            spawn_call("call_2", "cargo_test", "test", 700, "running 42 tests\n"),
            await_call("call_3", all=["check", "test"]),
        ])
        self.assertEqual([(x["id"], x["is_error"]) for x in res],
                         [("call_1", False), ("call_2", False), ("call_3", False)])
        self.assertEqual(response(res[0]["content"]),
                         {"id": "check", "state": "running",
                          "content": "Compiling jp_cli\n"})
        self.assertEqual(response(res[1]["content"]),
                         {"id": "test", "state": "running",
                          "content": "running 42 tests\n"})
        self.assertEqual(response(res[2]["content"]), {
            "completed": [
                {"id": "check", "state": "stopped", "result": slept(400)},
                {"id": "test", "state": "stopped", "result": slept(700)},
            ],
            "pending": [],
        })
        # The model watched both (no notification) and saw them stop (gone).
        self.assertEqual(self.r.take_notifications(), [])
        self.assertEqual(self.fetch("cargo_check", "check"),
                         ("Handle `check` has stopped, and an earlier answer gave its "
                          "result", True))

    def test_any_race_leaves_the_slower_one_pending(self):
        res = self.submit_and_wait([
            spawn_call("c1", "crate_search", "crates", 400, "searching crates\n"),
            spawn_call("c2", "github_code_search", "github", 10000, "searching code\n"),
            await_call("c3", any=["crates", "github"]),
        ])
        self.assertEqual([x["is_error"] for x in res], [False, False, False])
        self.assertEqual(response(res[2]["content"]), {
            "completed": [{"id": "crates", "state": "stopped", "result": slept(400)}],
            "pending": [{"id": "github", "state": "running"}],
        })
        # No automatic abort of the others (RFD 037, Non-Goals).
        content, is_error = self.fetch("github_code_search", "github")
        self.assertEqual(response(content),
                         {"id": "github", "state": "running", "content": ""})

    def test_timeout_returns_the_current_states(self):
        res = self.submit_and_wait([
            spawn_call("c1", "cargo_check", "check", 400, "Compiling\n"),
            spawn_call("c2", "cargo_test", "test", 10000, "running 42 tests\n"),
            await_call("c3", all=["check", "test"], timeout_secs=1),
        ])
        self.assertFalse(res[2]["is_error"])
        self.assertEqual(response(res[2]["content"]), {
            "completed": [{"id": "check", "state": "stopped", "result": slept(400)}],
            "pending": [{"id": "test", "state": "running"}],
            "timed_out": True,
        })
        # Handles are not aborted on timeout: it can be awaited again.
        content, is_error = self.r.call("await", {"any": ["test"], "timeout_secs": 0})
        self.assertFalse(is_error)
        self.assertEqual(response(content), {
            "completed": [], "pending": [{"id": "test", "state": "running"}],
            "timed_out": True})
        content, _ = self.fetch("cargo_test", "test")
        self.assertEqual(response(content)["state"], "running")

    def test_await_errors(self):
        self.spawn("cargo_test", "test", 10000, "running\n")
        cases = [
            ({}, "At least one handle ID required"),
            ({"any": [], "all": []}, "At least one handle ID required"),
            ({"all": ["x"]}, "Handle `x` not found"),
            ({"any": ["test"], "all": ["test", "my_handle"]},
             "Handle `my_handle` not found"),
        ]
        for arguments, message in cases:
            with self.subTest(arguments=arguments):
                self.assertEqual(self.r.call("await", arguments), (message, True))
        # await is not a stateful tool: it cannot be spawned.
        content, is_error = self.r.call("await", {"action": "spawn", "id": "w",
                                                  "all": ["test"]})
        self.assertTrue(is_error, content)
        content, _ = self.fetch("cargo_test", "test")
        self.assertEqual(response(content)["state"], "running")

    def test_two_spawns_of_one_id_reject_the_whole_batch(self):
        with tempfile.TemporaryDirectory() as d:
            marker = os.path.join(d, "ran")
            with self.r.submit([
                spawn_call("c1", "cargo_check", "dup", 400, "a"),
                {"id": "c2", "name": "mark", "arguments": {"path": marker}},
                spawn_call("c3", "cargo_test", "dup", 400, "b"),
                await_call("c4", all=["dup"]),
            ]) as b:
                # Every call has its result at once: nothing is run.
                self.assertTrue(b.done)
                self.assertTrue(self.r.wait(b, WAIT_MS))
                res = b.results()
            self.assertEqual([x["id"] for x in res], ["c1", "c2", "c3", "c4"])
            for x in res:
                self.assertTrue(x["is_error"], x)
                self.assertIn("`dup`", x["content"])
            self.assertEqual(len({x["content"] for x in res}), 1, res)
            self.assertFalse(os.path.exists(marker))
        self.assertEqual(children_in_proc(), [])
        self.assertEqual([e for e in self.r.events() if e["type"] in ("output", "state")],
                         [])
        self.assertEqual(self.fetch("cargo_check", "dup"),
                         ("Handle `dup` not found", True))

    def test_a_spawn_id_an_active_handle_holds_rejects_the_batch(self):
        self.spawn("cargo_test", "test", 10000, "running\n")
        res = self.submit_and_wait([
            spawn_call("c1", "cargo_check", "check", 400, "x"),
            spawn_call("c2", "cargo_test", "test", 400, "again"),
            await_call("c3", all=["check", "test"]),
        ])
        for x in res:
            self.assertTrue(x["is_error"], x)
            self.assertIn("`test`", x["content"])
        self.assertEqual(self.fetch("cargo_check", "check"),
                         ("Handle `check` not found", True))
        self.assertEqual(len(children_in_proc()), 1)
        content, _ = self.fetch("cargo_test", "test")
        self.assertEqual(response(content),
                         {"id": "test", "state": "running", "content": ""})

    def test_await_on_a_handle_that_asks_goes_to_the_inquiry_handler(self):
        asked = []

        def handler(q):
            self.assertIsInstance(q, Inquiry)
            with q.context as ctx:
                asked.append((q.tool, q.call_id, q.handle_id, q.target, q.question,
                              ctx.blocks))
            q.answer(True)
            self.assertFalse(q.valid)

        self.r.set_inquiry_handler(handler)
        content, _ = self.r.call("counter", {"action": "spawn", "id": "c"})
        self.assertEqual(response(content),
                         {"id": "c", "state": "running", "content": "count=0"})
        content, _ = self.r.call("counter", {"action": "apply", "id": "c",
                                             "input": "inc\n"})
        self.assertEqual(response(content)["content"], "count=1")
        content, _ = self.r.call("counter", {"action": "apply", "id": "c",
                                             "input": "ask\n"})
        self.assertEqual(response(content)["state"], "waiting")
        self.assertEqual(asked, [])  # the model saw that question itself
        with self.r.submit([await_call("w", all=["c"])]) as b:
            # Waiting counts as pending while the handler answers.
            self.assertFalse(self.r.wait(b, 500))
            self.assertEqual(asked, [(
                "counter", "w", "c", jptool.JPT_TARGET_USER,
                {"id": "reset", "text": "Reset the counter?",
                 "schema": {"type": "boolean"}, "default": False},
                [])])
            self.assertEqual(b.results(), [{"id": "w", "content": None,
                                            "is_error": False, "pending": True}])
            # The answer went to the tool, which runs on.
            content, _ = self.fetch("counter", "c")
            self.assertEqual(response(content),
                             {"id": "c", "state": "running",
                              "content": "count=0 (reset)"})
            content, _ = self.r.call("counter", {"action": "apply", "id": "c",
                                                 "input": "stop\n"})
            self.assertEqual(response(content),
                             {"id": "c", "state": "stopped", "result": "final count=0"})
            self.assertTrue(self.r.wait(b, WAIT_MS))
            self.assertEqual(response(b.results()[0]["content"]), {
                "completed": [{"id": "c", "state": "stopped",
                               "result": "final count=0"}],
                "pending": []})


@needs_tools
class BatchCancelTest(AwaitTestCase):
    def test_cancel_a_running_one_shot_call(self):
        with self.r.submit([{"id": "long", "name": "nap", "arguments": {"ms": 10000}},
                            {"id": "short", "name": "nap", "arguments": {"ms": 0}}]) as b:
            self.drive_until(lambda: "pending" not in b.results()[1])
            self.assertFalse(b.done)
            self.assertEqual(len(children_in_proc()), 1)
            b.cancel()
            self.assertTrue(self.r.wait(b, WAIT_MS))
            # Finished calls keep their results.
            self.assertEqual(b.results(), [
                # What it printed so far comes with the error.
                {"id": "long",
                 "content": "Error: The call `nap` was cancelled\n\nstdout:\nx",
                 "is_error": True},
                {"id": "short", "content": "xslept 0\n", "is_error": False},
            ])
            b.cancel()  # nothing left in flight
            self.drive_until(lambda: children_in_proc() == [])  # killed, reaped
            self.assertEqual(b.results()[1]["content"], "xslept 0\n")
        with self.assertRaises(ValueError):
            b.cancel()

    def test_cancel_one_call_and_a_host_time_limit(self):
        with self.r.submit([{"id": "long", "name": "nap", "arguments": {"ms": 10000}},
                            {"id": "slow", "name": "nap", "arguments": {"ms": 10000}},
                            {"id": "short", "name": "nap", "arguments": {"ms": 0}}]) as b:
            with self.assertRaises(jptool.JptError) as e:
                b.cancel_call("nope")
            self.assertEqual(e.exception.status, jptool.JPT_ERR_NOT_FOUND)
            b.cancel_call("long")
            b.set_call_timeout("slow", 200)
            self.assertTrue(self.r.wait(b, WAIT_MS))
            results = b.results()
            self.assertIn("The call `nap` was cancelled", results[0]["content"])
            self.assertIn("reached the host's time limit of 200 ms", results[1]["content"])
            self.assertEqual(results[2], {"id": "short", "content": "xslept 0\n",
                                          "is_error": False})
            self.drive_until(lambda: children_in_proc() == [])

    def test_the_output_handler_streams_without_consuming(self):
        seen = []
        self.r.set_output_handler(
            lambda id, tool, stateful, stream, data: seen.append((id, tool, stateful, stream,
                                                                  data)))
        with self.r.submit([{"id": "n1", "name": "nap", "arguments": {"ms": 0}}]) as b:
            self.assertTrue(self.r.wait(b, WAIT_MS))
            self.assertEqual(b.results()[0]["content"], "xslept 0\n")
        self.assertEqual(b"".join(d for *_, d in seen), b"xslept 0\n")
        self.assertEqual({(i, t, s, st) for i, t, s, st, _ in seen},
                         {("n1", "nap", False, jptool.JPT_STREAM_STDOUT)})
        self.r.set_output_handler(None)

    def test_cancel_an_await_and_a_spawn_in_flight(self):
        self.r.close()
        # Spawns would wait 5 s for quiet output.
        self.r = self.registry(settle_ms=5000, yield_ms=8000)
        with self.r.submit([
            spawn_call("c1", "cargo_test", "test", 10000, "running 42 tests\n"),
            await_call("c2", all=["test"]),
        ]) as b:
            self.assertFalse(self.r.wait(b, 300))
            b.cancel()
            self.assertTrue(self.r.wait(b, WAIT_MS))
            res = b.results()
        self.assertEqual([x["is_error"] for x in res], [False, False])
        # The spawn answers with the output so far; the await with the
        # handles' states and "cancelled".
        self.assertEqual(response(res[0]["content"]),
                         {"id": "test", "state": "running",
                          "content": "running 42 tests\n"})
        self.assertEqual(response(res[1]["content"]), {
            "completed": [], "pending": [{"id": "test", "state": "running"}],
            "cancelled": True})
        # The handle keeps running.
        content, _ = self.fetch("cargo_test", "test")
        self.assertEqual(response(content)["state"], "running")

    def test_calls_cancelled_before_they_start_never_run(self):
        with tempfile.TemporaryDirectory() as d:
            marker = os.path.join(d, "ran")
            with self.r.submit([
                {"id": "m", "name": "mark", "arguments": {"path": marker}},
                spawn_call("s", "cargo_check", "check", 400, "x"),
            ]) as b:
                b.cancel()
                self.assertTrue(self.r.wait(b, WAIT_MS))
                res = b.results()
            self.assertFalse(os.path.exists(marker))
        self.assertEqual([(x["id"], x["is_error"]) for x in res],
                         [("m", True), ("s", True)])
        self.assertEqual(self.fetch("cargo_check", "check"),
                         ("Handle `check` does not exist: its spawn never ran (the answer to "
                          "the spawn said why)", True))


@needs_tools
class NotificationTest(AwaitTestCase):
    def test_a_handle_that_stops_unwatched_leaves_a_notification(self):
        self.spawn("cargo_check", "check", 400, "Compiling\n")
        self.assertEqual(self.r.take_notifications(), [])  # on_content: false
        self.until_stopped("check")
        self.assertEqual(self.take_notes(), [
            {"id": "check", "tool": "cargo_check", "state": "stopped",
             "result": slept(400), "is_error": False}])
        self.assertEqual(self.r.take_notifications(), [])
        # Its result reached the model that way: the handle is gone.
        self.assertEqual(self.fetch("cargo_check", "check"),
                         ("Handle `check` has stopped, and a notification gave its result", True))

    def test_a_notification_is_dropped_once_the_model_sees_the_state(self):
        self.spawn("cargo_check", "check", 400, "x")
        self.until_stopped("check")
        content, _ = self.fetch("cargo_check", "check")
        self.assertEqual(response(content),
                         {"id": "check", "state": "stopped", "result": slept(400)})
        self.assertEqual(self.r.take_notifications(), [])
        # An await on a handle stopped already returns at once.
        self.spawn("cargo_test", "test", 400, "y")
        self.until_stopped("test")
        content, is_error = self.r.call("await", {"all": ["test"]})
        self.assertEqual(response(content), {
            "completed": [{"id": "test", "state": "stopped", "result": slept(400)}],
            "pending": []})
        self.assertEqual(self.r.take_notifications(), [])

    def test_on_success_false_leaves_the_handle_for_the_model(self):
        self.spawn("quiet", "q", 400, "x")
        self.until_stopped("q")
        self.assertEqual(self.r.take_notifications(), [])
        content, _ = self.fetch("quiet", "q")
        self.assertEqual(response(content),
                         {"id": "q", "state": "stopped", "result": slept(400)})


@needs_tools
class TurnEndTest(AwaitTestCase):
    def end_turn(self, keep=False):
        """end_turn() driven to the end: the batch's results."""
        b = self.r.end_turn(keep=keep)
        self.assertIsInstance(b, Batch)
        with b:
            self.assertTrue(self.r.wait(b, WAIT_MS))
            self.assertTrue(b.done)
            return b.results()

    def test_abort_policy_kills_and_discards(self):
        self.spawn("job_abort", "a", 10000, "A")
        self.assertEqual(len(children_in_proc()), 1)
        with self.r.end_turn() as b:
            self.assertTrue(self.r.wait(b, WAIT_MS))
            self.assertEqual(b.results(), [])
            done = [e for e in self.r.events() if e["type"] == "batch_done"]
            self.assertIs(done[-1]["batch"], b)
        self.assertEqual(children_in_proc(), [])
        # Its output is lost; the model learns that it was aborted.
        self.assertEqual(self.take_notes(), [
            {"id": "a", "tool": "job_abort", "state": "stopped",
             "result": "The turn ended: the handle was aborted (on_turn_end \"abort\"), "
                       "and its output discarded", "is_error": False}])
        self.assertEqual(self.fetch("job_abort", "a"),
                         ("Handle `a` has stopped, and a notification gave its result", True))

    def test_await_policy_queues_the_result_as_a_notification(self):
        # A handle stopped unseen before the turn end goes; its notification
        # stays.
        self.spawn("cargo_check", "check", 400, "x")
        self.until_stopped("check")
        self.spawn("job_await", "w", 500, "W")
        b = self.r.end_turn()
        with self.assertRaises(JptError) as cm:
            self.r.end_turn()  # the first is still settling
        self.assertEqual(cm.exception.status, jptool.JPT_ERR_STATE)
        self.assertEqual(self.r.errmsg, cm.exception.message)
        with b:
            self.assertTrue(self.r.wait(b, WAIT_MS))
            self.assertEqual(b.results(), [])
        self.assertEqual(children_in_proc(), [])
        self.assertEqual(self.take_notes(), [
            {"id": "check", "tool": "cargo_check", "state": "stopped",
             "result": slept(400), "is_error": False},
            {"id": "w", "tool": "job_await", "state": "stopped",
             "result": slept(500), "is_error": False}])
        self.assertEqual(self.fetch("job_await", "w"),
                         ("Handle `w` has stopped, and a notification gave its result", True))
        self.assertEqual(self.fetch("cargo_check", "check"),
                         ("Handle `check` has stopped, and a notification gave its result", True))

    def test_keep_leaves_handles_and_the_timeout_kills(self):
        self.r.close()
        self.r = self.registry(turn_end_timeout_ms=300)
        self.spawn("job_await", "k", 10000, "K")
        # JPT_TURN_KEEP: past the wait, nothing is killed.
        self.assertEqual(self.end_turn(keep=True), [])
        self.assertEqual(len(children_in_proc()), 1)
        content, _ = self.fetch("job_await", "k")
        self.assertEqual(response(content),
                         {"id": "k", "state": "running", "content": ""})
        # Without it, the handle is killed past turn_end_timeout_ms.
        self.assertEqual(self.end_turn(), [])
        self.assertEqual(children_in_proc(), [])
        self.assertEqual(self.fetch("job_await", "k"),
                         ("Handle `k` has stopped, and a notification gave its result", True))

    def test_inquire_policy_asks_the_python_handler(self):
        asked = []

        def handler(q):
            with q.context as ctx:
                # The handles the question lists, as JSON text.
                listing = json.loads(ctx.blocks[0]["text"])
            asked.append((q.tool, q.call_id, q.handle_id, q.target, q.question,
                          listing))
            # One choice per handle, in the order the question lists them.
            q.answer({"handles": [{"id": h["id"],
                                   "action": "wait" if h["id"] == "w" else "abort"}
                                  for h in listing]})
            self.assertFalse(q.valid)

        self.r.set_inquiry_handler(handler)
        self.spawn("job_inquire", "w", 800, "wait for me\n")
        self.spawn("cargo_test", "a", 10000, "abort me\n")  # inquire: the default
        res = self.end_turn()
        self.assertEqual(len(asked), 1, asked)
        tool_name, call_id, handle_id, target, question, listing = asked[0]
        self.assertEqual((tool_name, call_id, handle_id, target),
                         (None, None, None, jptool.JPT_TARGET_ASSISTANT))
        self.assertEqual(question["id"], "turn_end")
        self.assertIn("schema", question)
        for h in listing:
            self.assertIsInstance(h.pop("elapsed_secs"), (int, float))
        self.assertEqual(sorted(listing, key=lambda h: h["id"]), [
            {"id": "a", "tool": "cargo_test", "state": "running",
             "output_preview": "abort me\n"},
            {"id": "w", "tool": "job_inquire", "state": "running",
             "output_preview": "wait for me\n"}])
        # The waited handle's result is a result of the turn's batch.
        self.assertEqual(len(res), 1, res)
        self.assertEqual((res[0]["id"], res[0]["is_error"]), ("w", False))
        self.assertEqual(response(res[0]["content"]),
                         {"id": "w", "state": "stopped", "result": slept(800)})
        self.assertEqual(children_in_proc(), [])
        self.assertEqual(self.take_notes(), [
            {"id": "a", "tool": "cargo_test", "state": "stopped",
             "result": "The turn ended: the handle was aborted, as the answer to the "
                       "turn-end question chose, and its output discarded",
             "is_error": False}])
        self.assertEqual(self.fetch("job_inquire", "w"),
                         ("Handle `w` has stopped, and its result was given as the turn "
                          "ended", True))
        self.assertEqual(self.fetch("cargo_test", "a"),
                         ("Handle `a` has stopped, and a notification gave its result", True))

    def test_inquire_without_a_handler_stops_and_cancelled_is_await(self):
        # Nobody to ask: stopped at once, its last output kept.
        self.spawn("job_inquire", "n", 10000, "x")
        self.assertEqual(self.end_turn(), [])
        self.assertEqual(self.take_notes(), [
            {"id": "n", "tool": "job_inquire", "state": "stopped",
             "result": "Error: The turn ended with nobody to ask whether to wait for the "
                       "handle (no inquiry handler): it was stopped", "is_error": True}])
        self.r.set_inquiry_handler(lambda q: q.cancel("no time"))
        self.spawn("job_inquire", "c", 400, "y")
        self.assertEqual(self.end_turn(), [])
        self.assertEqual(self.take_notes(), [
            {"id": "c", "tool": "job_inquire", "state": "stopped",
             "result": slept(400), "is_error": False}])
        self.assertEqual(children_in_proc(), [])

    def test_take_turn_text_gives_the_turn_end_and_notifications_as_text(self):
        # The host trial: a turn end's results, in a provider's shape, were
        # tool results for handle ids no provider accepts; they go to the
        # model as text before its next message (jpt_registry_take_turn_text).
        self.r.set_inquiry_handler(lambda q: q.answer({"handles": [
            {"id": "w", "action": "wait"}, {"id": "a", "action": "abort"}]}))
        self.spawn("job_inquire", "w", 500, "W")
        self.spawn("cargo_test", "a", 10000, "A")
        with self.r.submit([{"id": "f", "name": "cargo_test",
                             "arguments": {"action": "fetch", "id": "a"}}]) as model:
            self.assertTrue(self.r.wait(model, WAIT_MS))
            with self.r.end_turn() as b:
                with self.assertRaises(JptError) as cm:
                    self.r.take_turn_text(b)
                self.assertEqual(cm.exception.status, jptool.JPT_ERR_STATE)
                self.assertIn("still settling", cm.exception.message)
                self.assertTrue(self.r.wait(b, WAIT_MS))
                for dialect in ("openai", "openai_responses", "anthropic", "gemini"):
                    with self.assertRaises(JptError) as cm:
                        b.results(dialect)
                    self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)
                    self.assertIn("this batch is the turn end's", cm.exception.message)
                    self.assertIn("jpt_registry_take_turn_text()", cm.exception.message)
                self.assertEqual([x["id"] for x in b.results("as_called")], ["w"])
                with self.assertRaises(JptError) as cm:
                    self.r.take_turn_text(model)
                self.assertEqual(cm.exception.status, jptool.JPT_ERR_INVALID)
                self.assertIn("not a turn end's", cm.exception.message)
                with self.assertRaises(TypeError):
                    self.r.take_turn_text("b")
                text = self.r.take_turn_text(b)
            with self.assertRaises(ValueError):
                self.r.take_turn_text(b)  # closed
        self.assertEqual(re.sub(r"\b[0-9]+\.[0-9] s\b", "N s", text),
                         "[Notification: handle `a` (tool `cargo_test`) stopped after N s]\n"
                         "The turn ended: the handle was aborted, as the answer to the "
                         "turn-end question chose, and its output discarded\n"
                         "\n"
                         "[Handle `w` (tool `job_inquire`) stopped after your last turn]\n"
                         f"{slept(500)}\n"
                         "\n")
        # Taken once: the notifications are gone too.
        self.assertEqual(self.r.take_notifications(), [])
        self.assertEqual(self.r.take_turn_text(), "")
        self.assertEqual(children_in_proc(), [])

    def answer_turn_end(self, make_answer):
        """Spawns "w" (stops after 800 ms) and "x" (10 s), both inquire,
        and ends the turn with an inquiry handler answering
        make_answer(listing); returns the answers refused and the results."""
        self.r.close()
        self.r = self.registry(turn_end_timeout_ms=2000)
        refused = []

        def handler(q):
            with q.context as ctx:
                listing = json.loads(ctx.blocks[0]["text"])
            try:
                q.answer(make_answer(listing))
            except JptError as e:
                refused.append(e.message)
                q.cancel("refused")

        self.r.set_inquiry_handler(handler)
        self.spawn("job_inquire", "w", 800, "w")
        self.spawn("job_inquire", "x", 10000, "x")
        return refused, self.end_turn()

    # registry.h (jpt_registry_end_turn): the answer is {"handles": [{"id",
    # "action"}, …]}, each handle named by its id, in any order.
    def test_turn_end_answer_names_handles_by_id_in_any_order(self):
        refused, res = self.answer_turn_end(lambda listing: {"handles": [
            {"id": h["id"], "action": "wait" if h["id"] == "w" else "abort"}
            for h in reversed(listing)]})
        self.assertEqual(refused, [])
        self.assertEqual([(x["id"], response(x["content"])) for x in res],
                         [("w", {"id": "w", "state": "stopped", "result": slept(800)})])

    # registry.h: 'A handle answered "wait" (or not mentioned) is waited
    # for'.
    def test_turn_end_handle_not_mentioned_is_waited_for(self):
        refused, res = self.answer_turn_end(
            lambda listing: {"handles": [{"id": "x", "action": "abort"}]})
        self.assertEqual(refused, [])
        self.assertEqual([(x["id"], response(x["content"])) for x in res],
                         [("w", {"id": "w", "state": "stopped", "result": slept(800)})])


class RegistryBindingTest(unittest.TestCase):
    """The binding against registry.h itself."""

    def test_every_function_of_the_header_has_a_prototype(self):
        with open(REGISTRY_H) as f:
            header = f.read()
        names = re.findall(r"JPT_EXPORT\s[^;(]*?\b(jpt_\w+)\s*\(", header)
        self.assertEqual(len(names), 52, names)
        for name in names:
            self.assertIn(name, jptool._lib._PROTOTYPES, name)
            fn = getattr(jptool._lib.lib, name)
            self.assertEqual(tuple(fn.argtypes), tuple(jptool._lib._PROTOTYPES[name][1]), name)
            self.assertEqual(fn.restype, jptool._lib._PROTOTYPES[name][0], name)

    def test_constants_match_the_header(self):
        with open(REGISTRY_H) as f:
            defines = re.findall(r"#define (JPT_\w+) (0x[0-9a-f]+|\d+)u?", f.read())
        self.assertEqual(len(defines), 26, defines)
        for name, value in defines:
            self.assertEqual(getattr(jptool, name), int(value, 0), name)
            self.assertIn(name, jptool.__all__)

    def test_options_struct_matches_the_header_layout(self):
        fields = [f[0] for f in jptool._lib._RegistryOptions._fields_]
        self.assertEqual(fields, ["size", "root", "kill_grace_ms", "capture_bytes",
                                  "output_limit", "settle_ms", "yield_ms", "drain_ms",
                                  "max_inquiry_rounds", "spool_dir", "state_file",
                                  "turn_end_timeout_ms", "max_processes", "max_events",
                                  "flags", "containment", "sandbox_mode"])
        # Smaller than the first version's struct (0.1.0 ended before
        # max_processes).
        small = jptool._lib._RegistryOptions(jptool._lib._RegistryOptions.max_processes.offset - 1)
        out = jptool._lib._RegistryPtr()
        self.assertEqual(jptool._lib.lib.jpt_registry_new(ctypes.byref(small),
                                                      ctypes.byref(out)),
                         jptool.JPT_ERR_INVALID)
        self.assertEqual(jptool._lib.lib.jpt_registry_new(None, None),
                         jptool.JPT_ERR_INVALID)
        jptool._lib.lib.jpt_registry_free(None)
        jptool._lib.lib.jpt_batch_free(None)

    def test_turn_end_and_notification_arguments(self):
        lib, invalid = jptool._lib.lib, jptool.JPT_ERR_INVALID
        out, batch = ctypes.c_void_p(), jptool._lib._BatchPtr()
        self.assertEqual(lib.jpt_registry_take_notifications(None, ctypes.byref(out)),
                         invalid)
        self.assertEqual(lib.jpt_registry_end_turn(None, 0, ctypes.byref(batch)), invalid)
        self.assertEqual(lib.jpt_registry_take_turn_text(None, batch, ctypes.byref(out)),
                         invalid)
        lib.jpt_batch_cancel(None)
        with Registry() as r:
            self.assertEqual(lib.jpt_registry_take_notifications(r._ptr, None), invalid)
            self.assertEqual(lib.jpt_registry_take_turn_text(r._ptr, batch, None), invalid)
            self.assertEqual(lib.jpt_registry_end_turn(r._ptr, 0x4, ctypes.byref(batch)),
                             invalid)
            self.assertFalse(batch)
            both = jptool.JPT_TURN_KEEP | jptool.JPT_TURN_ABORT
            self.assertEqual(lib.jpt_registry_end_turn(r._ptr, both, ctypes.byref(batch)),
                             invalid)
            self.assertFalse(batch)
            self.assertEqual(
                lib.jpt_registry_end_turn(r._ptr, jptool.JPT_TURN_KEEP, None), invalid)
            self.assertEqual(r.take_notifications(), [])
            with r.end_turn() as b:  # no handle: done at the next dispatch
                self.assertTrue(r.wait(b, WAIT_MS))
                self.assertEqual(b.results(), [])


class FilesBindingTest(unittest.TestCase):
    """ProjectFiles (vfs.h) through the binding: the three backends."""

    def test_directory_backend(self):
        with tempfile.TemporaryDirectory() as root:
            with jptool.Files.open_dir(root) as f:
                f.write("src/main.rs", "fn main() {}\n")
                self.assertEqual(f.read("src/main.rs"), b"fn main() {}\n")
                self.assertTrue(f.exists("src"))
                self.assertEqual(f.metadata("src/main.rs"), {"kind": "file", "size": 13})
                self.assertEqual(f.list_dir("src"), [{"path": "main.rs", "kind": "file"}])
                found = f.grep("fn main", paths=["src"], context=1)
                self.assertEqual(found["matches"][0]["lines"][0],
                                 {"line_number": 1, "content": "fn main() {}", "is_match": True})
                self.assertFalse(found["truncated"])
                f.rename("src/main.rs", "lib/main.rs")
                f.delete("lib/main.rs")
                self.assertEqual(f.call("fs.exists", {"path": "lib/main.rs"}), {"exists": False})
                with self.assertRaises(JptError) as e:
                    f.read("../etc/passwd")
                self.assertEqual(e.exception.status, jptool.JPT_ERR_INVALID)
                self.assertIn("'..' is not allowed", str(e.exception))
                self.assertNotIn(root, str(e.exception))

    def test_memory_backend(self):
        with jptool.Files.memory() as f:
            f.write("a.bin", b"\x00\xff")
            self.assertEqual(f.read("a.bin"), b"\x00\xff")
            self.assertEqual(f.call("fs.read", {"path": "a.bin"}),
                             {"content": "AP8=", "encoding": "base64", "size": 2})
            with self.assertRaises(JptError) as e:
                f.read("missing")
            self.assertEqual(e.exception.status, jptool.JPT_ERR_NOT_FOUND)

    def test_host_backend_answering_now_and_later(self):
        kept = []

        def handler(request):
            if request.method == "fs.read" and request.params["path"] == "later":
                kept.append(request)
            elif request.method == "fs.read":
                request.reply({"content": "from the host"})
            else:
                request.fail(jptool.JPT_ERR_DENIED, "read-only store")

        with jptool.Files.host(handler) as f:
            self.assertEqual(f.read("./now"), b"from the host")
            with self.assertRaises(JptError) as e:
                f.write("x", "y")
            self.assertEqual(e.exception.status, jptool.JPT_ERR_DENIED)
            self.assertIn("fs.write 'x': read-only store", str(e.exception))
            with self.assertRaises(JptError) as e:
                f.read("later")
            self.assertEqual(e.exception.status, jptool.JPT_ERR_AGAIN)
            kept[0].reply({"content": "too late"})  # releases the request


if __name__ == "__main__":
    unittest.main()
