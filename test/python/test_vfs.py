"""Tests of the VFS part of the Python package: jptool.VfsHost,
jptool.PolicyRequest, jptool.Files as a VFS host's backend,
Registry.add_files and Registry.set_policy_handler with "runtime": "vfs"
tools, the asyncio policy coroutines and AsyncVfsHost of jptool.aio, and
jptool.vfs_tool, the tool side in pure Python (through real processes:
vfs_probe.py beside this file, and test/tools/vfs-probe built on the C SDK).

Run by `meson test` (suite "python") with the environment of
test_jptool.py, whose helpers it shares. Standard library only; every wait
is bounded by WAIT_MS, and every test checks that no child is left.

Every tool runs in the OS sandbox (vfs.h), in the default mode, required,
wherever this system can enforce it; elsewhere in best-effort mode, with
the tests of the sandbox itself skipped.
"""

import asyncio
import base64
import ctypes
import gc
import http.server
import json
import os
import queue
import re
import select
import selectors
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import jptool
from jptool import Files, JptError, PolicyRequest, Registry, VfsHost, vfs_tool
from jptool.aio import AsyncRegistry, AsyncVfsHost

from test_jptool import VFS_H, WAIT_MS, children_in_proc, needs_tools, response, tool

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "vfs_probe.py")
# Where this test imported jptool from: the probe imports the same.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(jptool.__file__)))
VFS_TOOL_H = os.path.join(os.path.dirname(VFS_H), "vfs_tool.h")
WAIT = WAIT_MS / 1000

# In the OS sandbox a tool reads the system (/usr, /lib, …) and what its
# host lists, and its environment is PATH alone. vfs_probe.py needs this
# interpreter, the jptool package and its library
# (python_tool_read_paths) and this directory, where it lives; and
# PYTHONPATH and JPTOOL_LIBRARY to find the package and the library.
READ_PATHS = jptool.python_tool_read_paths() + [HERE]
PROBE_ENV = {"PYTHONPATH": PACKAGE_DIR, "JPTOOL_LIBRARY": jptool.library_path}


def os_sandbox_lacking():
    """None where this system enforces the VFS tools' OS sandbox, else
    what it lacks (the registry's answer for a "vfs" tool in the default
    mode)."""
    with Registry() as r:
        r.load_tools({"tools": [{"name": "t", "runtime": "vfs", "command": ["true"]}]})
        try:
            r.tool_sandbox("t")
        except JptError as e:
            if e.status != jptool.JPT_ERR_SANDBOX:
                raise
            return e.message
    return None


SANDBOX_LACKING = os_sandbox_lacking()
# None: the library's default, JPT_SANDBOX_REQUIRED.
SANDBOX_MODE = None if SANDBOX_LACKING is None else jptool.JPT_SANDBOX_BEST_EFFORT
needs_sandbox = unittest.skipIf(SANDBOX_LACKING is not None,
                                f"this system cannot enforce the OS sandbox: {SANDBOX_LACKING}")
# A VfsHost's options for the probe.
HOST_SANDBOX = {"sandbox_read": READ_PATHS, "sandbox_mode": SANDBOX_MODE}

WRITABLE = {"filesystem": {"allow": ["."], "writable": True}}

DENIED, NOT_FOUND, EXISTS = jptool.JPT_ERR_DENIED, jptool.JPT_ERR_NOT_FOUND, jptool.JPT_ERR_EXISTS
INVALID, UNSUPPORTED, CANCELLED = (jptool.JPT_ERR_INVALID, jptool.JPT_ERR_UNSUPPORTED,
                                   jptool.JPT_ERR_CANCELLED)


def probe_argv(**env):
    """vfs_probe.py's command for a VfsHost, which gives a tool PATH alone:
    env(1) sets PROBE_ENV and ``env`` on the way."""
    variables = {**PROBE_ENV, **env}
    return ["env", *(f"{k}={v}" for k, v in variables.items()), sys.executable, PROBE]


def probe_definition(name, **keys):
    """A registry definition of vfs_probe.py: what it reads in os_sandbox,
    the variables it needs in env.set (a "vfs" tool's environment is PATH
    and what env names)."""
    os_sandbox = {"read": READ_PATHS}
    if SANDBOX_MODE is not None:
        os_sandbox["mode"] = "best-effort"
    return {"name": name, "runtime": "vfs", "command": [sys.executable, PROBE],
            "env": {"set": PROBE_ENV}, "os_sandbox": os_sandbox, **keys}


def b64(data):
    return base64.b64encode(data).decode()


def make_tree(root):
    """The workspace every test starts with."""
    os.makedirs(os.path.join(root, "src"))
    for rel, text in (("a.txt", "hello\n"), ("src/main.rs", "fn main() {}\n"),
                      (".env", "SECRET=1\n")):
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)


def open_fds():
    """This process's open fds, by number and what they are."""
    out = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            out[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            pass  # the directory's own fd, closed meanwhile
    return out


def drive_until(host, ready, timeout_ms=WAIT_MS):
    """Drives a VfsHost from a selectors loop, as a host's own loop would,
    until ready() (or fails the test when it takes past timeout_ms)."""
    deadline = time.monotonic() + timeout_ms / 1000
    with selectors.DefaultSelector() as sel:
        sel.register(host.fileno(), selectors.EVENT_READ)
        while not ready():
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("the host did not get there in time")
            ms = host.timeout()
            sel.select(left if ms < 0 else min(left, ms / 1000))
            while host.dispatch() > 0 and not ready():
                pass


class WorkspaceTestCase(unittest.TestCase):
    """A workspace in a temporary directory; at the end no child is left."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = os.path.realpath(self.tmp.name)
        make_tree(self.root)
        # The first cleanup runs last: after every host and registry closed.
        self.addCleanup(self.nothing_left, open_fds())

    def nothing_left(self, fds_before):
        gc.collect()
        self.tmp.cleanup()
        self.assertEqual(children_in_proc(), [])
        self.assertEqual(open_fds(), fds_before)

    def path(self, rel):
        return os.path.join(self.root, rel)

    def content(self, rel):
        with open(self.path(rel), "rb") as f:
            return f.read()


# ---- VfsHost with the Python tool ------------------------------------------------


class HostTestCase(WorkspaceTestCase):
    def host(self, **kw):
        opts = {"root": self.root, "kill_grace_ms": 300, **HOST_SANDBOX}
        opts.update(kw)
        h = VfsHost(**opts)
        self.addCleanup(h.close)
        return h

    def run_probe(self, arguments, host=None, **kw):
        """Runs vfs_probe.py to its end on a host; its report."""
        h = host or self.host(**kw)
        h.spawn(probe_argv(), {"name": "probe", "arguments": arguments})
        self.assertTrue(h.run(WAIT_MS))
        self.assertTrue(h.done)
        with h.state() as s:
            self.assertEqual(s.kind, jptool.JPT_STATE_STOPPED)
            self.assertFalse(s.is_error, s.blocks)
            return json.loads(s.blocks[0]["text"])

    def steps(self, *steps, **kw):
        return self.run_probe({"steps": list(steps)}, **kw)["steps"]


class VfsHostTest(HostTestCase):
    def test_a_python_tool_reads_writes_and_lists_through_the_host(self):
        binary = b"\x00\x01\xfe\xff"
        got = self.steps(
            ["read_text", "a.txt"],
            ["write", "notes/new.txt", "written\n"],
            ["exists", "notes/new.txt"],
            ["exists", "nothing"],
            ["list_dir", "."],
            ["metadata", "a.txt"],
            ["metadata", "src"],
            ["write_b64", "bin/blob", b64(binary)],
            ["read", "bin/blob"],
            ["call", "fs.read", {"path": "bin/blob"}],
            ["grep", "fn (main)", {"paths": ["src"], "extensions": ["rs"]}],
            ["rename", "notes/new.txt", "notes/moved.txt"],
            ["delete", "a.txt"],
            ["pipeline", "src/main.rs", 50],
            sandbox=WRITABLE)
        self.assertEqual(got, [
            {"ok": "hello\n"},
            {"ok": None},
            {"ok": True},
            {"ok": False},
            {"ok": [{"path": ".env", "kind": "file"}, {"path": "a.txt", "kind": "file"},
                    {"path": "notes", "kind": "dir"}, {"path": "src", "kind": "dir"}]},
            {"ok": {"kind": "file", "size": 6}},
            {"ok": {"kind": "dir", "size": 0}},
            {"ok": None},
            {"ok": b64(binary)},
            {"ok": {"content": b64(binary), "encoding": "base64", "size": 4}},
            {"ok": {"matches": [{"path": "src/main.rs", "lines": [
                {"line_number": 1, "content": "fn main() {}", "is_match": True}]}],
                "truncated": False}},
            {"ok": None},
            {"ok": None},
            {"ok": 50},
        ])
        self.assertEqual(self.content("notes/moved.txt"), b"written\n")
        self.assertEqual(self.content("bin/blob"), binary)
        self.assertFalse(os.path.exists(self.path("notes/new.txt")))
        self.assertFalse(os.path.exists(self.path("a.txt")))

    def test_the_tool_gets_its_initial_context(self):
        h = self.host()
        h.spawn(probe_argv(), {"name": "ctx", "arguments": {"steps": [], "n": 1},
                               "answers": {"q": True}, "options": {"mode": "fast"}})
        self.assertTrue(h.run(WAIT_MS))
        with h.state() as s:
            init = json.loads(s.blocks[0]["text"])["init"]
        self.assertEqual(init, {"name": "ctx", "arguments": {"steps": [], "n": 1},
                                "answers": {"q": True}, "options": {"mode": "fast"},
                                "protocol_version": jptool.JPT_VFS_PROTOCOL_VERSION})

    def test_env_is_denied_with_the_hosts_code_and_a_message_without_the_root(self):
        [got] = self.steps(["read", ".env"], sandbox=WRITABLE)
        status, code, message = got["error"]
        self.assertEqual((status, code), (DENIED, jptool.JPT_VFS_E_ACCESS_DENIED))
        self.assertIn("'.env'", message)
        self.assertIn("sensitive paths", message)
        self.assertNotIn(self.root, message)

    def test_errors_carry_the_hosts_codes_and_messages(self):
        got = self.steps(
            ["read", "missing.txt"],
            ["rename", "src/main.rs", "a.txt"],
            ["read", "../outside"],
            ["call", "fs.nope", {}],
            ["call", "http.get", {"url": "https://example.com/"}],
            ["call", "fs.read", {}],
            ["collect", 999],
            sandbox=WRITABLE)
        codes = [(g["error"][0], g["error"][1]) for g in got]
        self.assertEqual(codes, [
            (NOT_FOUND, jptool.JPT_VFS_E_NOT_FOUND),
            (EXISTS, jptool.JPT_VFS_E_EXISTS),
            (INVALID, jptool.JPT_VFS_E_INVALID_PARAMS),
            (UNSUPPORTED, jptool.JPT_VFS_E_METHOD_NOT_FOUND),
            (DENIED, jptool.JPT_VFS_E_ACCESS_DENIED),
            (INVALID, jptool.JPT_VFS_E_INVALID_PARAMS),
            (NOT_FOUND, 0),
        ])
        messages = [g["error"][2] for g in got]
        self.assertIn("missing.txt", messages[0])
        self.assertIn("fs.nope", messages[3])
        # No network.allow: the URL is not covered, and no handler is there
        # to ask.
        self.assertIn("network.allow lists no URL", messages[4])
        self.assertIn("no one could be asked", messages[4])
        self.assertIn("path", messages[5])
        self.assertEqual(messages[6], "request 999 is not outstanding")
        for m in messages:
            self.assertNotIn(self.root, m)

    def test_a_tool_that_raises_ends_in_an_error_with_its_stderr(self):
        h = self.host()
        h.spawn(probe_argv(), {"name": "probe", "arguments": {"crash": "boom at step 3"}})
        self.assertTrue(h.run(WAIT_MS))
        with h.state() as s:
            self.assertTrue(s.is_error)
            self.assertIn("boom at step 3", s.error_message)

    def test_the_tools_error_notification_is_its_error_state(self):
        h = self.host()
        h.spawn(probe_argv(), {"name": "probe", "arguments": {
            "fail": "could not parse", "trace": ["outer", "inner"], "transient": True}})
        self.assertTrue(h.run(WAIT_MS))
        with h.state() as s:
            self.assertTrue(s.is_error)
            self.assertEqual(s.error_message, "could not parse")
            self.assertEqual(s.error_trace, ["outer", "inner"])
            self.assertTrue(s.error_transient)

    def test_a_stateful_tool_takes_apply_and_stops(self):
        h = self.host()
        h.spawn(probe_argv(), {"name": "keeper", "arguments": {"stateful": True}})
        drive_until(h, lambda: h.state() is not None)
        with h.state() as s:
            self.assertEqual((s.kind, s.blocks), (jptool.JPT_STATE_RUNNING,
                                                  [{"type": "text", "text": "ready"}]))
        h.apply({"read": "a.txt"})
        drive_until(h, lambda: "hello" in h.state().blocks[0]["text"])
        with h.state() as s:
            self.assertEqual(json.loads(s.blocks[0]["text"]), {"ok": "hello\n"})
        h.apply({"ask": "go"})
        drive_until(h, lambda: h.state().kind == jptool.JPT_STATE_WAITING)
        with h.state() as s:
            self.assertEqual(s.blocks[-1]["id"], "go")
        h.apply("stop")
        self.assertTrue(h.run(WAIT_MS))
        with h.state() as s:
            self.assertEqual(s.kind, jptool.JPT_STATE_STOPPED)
            self.assertFalse(s.is_error)
            self.assertEqual(s.blocks, [{"type": "text", "text": "stopped on request"}])
        with self.assertRaises(JptError) as e:
            h.apply("more")
        self.assertEqual(e.exception.status, jptool.JPT_ERR_STATE)
        self.assertIn("no tool is running", str(e.exception))

    def test_cancel_ends_a_tool_waiting_for_input(self):
        h = self.host(kill_grace_ms=WAIT_MS)  # it ends by itself, not by a signal
        h.spawn(probe_argv(), {"name": "keeper", "arguments": {"stateful": True}})
        drive_until(h, lambda: h.state() is not None)
        h.cancel()
        self.assertTrue(h.run(WAIT_MS))
        with h.state() as s:
            self.assertTrue(s.is_error)
            self.assertIn("cancelled", s.error_message)
        with self.assertRaises(JptError) as e:
            h.cancel()
        self.assertEqual(e.exception.status, jptool.JPT_ERR_STATE)

    def test_a_python_tool_runs_a_process_through_the_host(self):
        got = self.steps(["process_run", "echo", ["from", "echo"]],
                         ["process_run", "sh", ["-c", "pwd; echo oops >&2; exit 3"]],
                         ["process_run", "rm", ["a.txt"]],
                         sandbox={"commands": {"echo": {}, "sh": {}}})
        self.assertEqual(got[:2], [{"ok": [0, "from echo\n", ""]},
                                   {"ok": [3, self.root + "\n", "oops\n"]}])
        self.assertEqual(got[2]["error"][:2], [DENIED, jptool.JPT_VFS_E_ACCESS_DENIED])
        self.assertIn("commands has no rule for this program", got[2]["error"][2])
        self.assertTrue(os.path.exists(self.path("a.txt")))

    def test_a_python_tool_fetches_urls_through_the_host(self):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.answer(200, f"GET {self.path} {self.headers['X-Probe']}".encode())

            def do_POST(self):
                length = int(self.headers["Content-Length"])
                self.answer(201, b"\x00got " + self.rfile.read(length))

            def answer(self, status, body):
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler) as server:
            thread = threading.Thread(target=server.serve_forever)
            thread.start()
            try:
                base = f"http://127.0.0.1:{server.server_address[1]}"
                got = self.steps(["http_get", base + "/page", {"X-Probe": "yes"}],
                                 ["http_post", base + "/form", "a=1"],
                                 ["http_get", "http://127.0.0.2:1/elsewhere"],
                                 sandbox={"network": {"allow": [base]}})
            finally:
                server.shutdown()
                thread.join(WAIT)
        status, headers, body = got[0]["ok"]
        self.assertEqual((status, base64.b64decode(body)), (200, b"GET /page yes"))
        self.assertIn({"name": "Content-Length", "value": "13"}, headers)
        status, _, body = got[1]["ok"]
        self.assertEqual((status, base64.b64decode(body)), (201, b"\x00got a=1"))
        self.assertEqual(got[2]["error"][:2], [DENIED, jptool.JPT_VFS_E_ACCESS_DENIED])

    def test_the_tools_environment_is_path_and_what_its_command_line_sets(self):
        os.environ["JPT_PROBE_HOSTS_OWN"] = "not for tools"
        self.addCleanup(os.environ.pop, "JPT_PROBE_HOSTS_OWN")
        [got] = self.steps(["environ"])
        # PEP 538: Python sets LC_CTYPE when it finds itself in the C locale.
        self.assertEqual(set(got["ok"]) - {"LC_CTYPE"}, {"PATH", *PROBE_ENV})

    def test_the_host_driven_from_a_selectors_loop(self):
        h = self.host(sandbox=WRITABLE)
        self.assertIsInstance(h.fileno(), int)
        h.spawn(probe_argv(), {"name": "probe", "arguments": {
            "steps": [["write", "x.txt", "x"]]}})
        drive_until(h, lambda: h.done)
        self.assertEqual(self.content("x.txt"), b"x")

    def test_a_tool_the_application_started_is_served_on_its_fds(self):
        to_tool_r, to_tool_w = os.pipe()
        from_tool_r, from_tool_w = os.pipe()
        child = subprocess.Popen(probe_argv(), stdin=to_tool_r, stdout=from_tool_w,
                                 stderr=subprocess.DEVNULL)
        os.close(to_tool_r)
        os.close(from_tool_w)
        h = self.host()
        h.attach(from_tool_r, to_tool_w, {"name": "attached", "arguments": {
            "steps": [["read_text", "src/main.rs"]]}})
        self.assertTrue(h.run(WAIT_MS))
        self.assertEqual(child.wait(WAIT), 0)
        with h.state() as s:
            report = json.loads(s.blocks[0]["text"])
        self.assertEqual(report["init"]["name"], "attached")
        self.assertEqual(report["steps"], [{"ok": "fn main() {}\n"}])
        # The application started it: its confinement is the application's.
        with self.assertRaises(JptError) as e:
            h.sandbox()
        self.assertEqual(e.exception.status, jptool.JPT_ERR_STATE)
        self.assertIn("attached", e.exception.message)
        # The host closed both fds when the tool ended.
        for fd in (from_tool_r, to_tool_w):
            with self.assertRaises(OSError):
                os.fstat(fd)

    def test_a_silent_tool_is_stopped_by_the_request_timeout(self):
        h = self.host(request_timeout_ms=200)
        h.spawn(probe_argv(), {"name": "quiet", "arguments": {"silent": True}})
        self.assertTrue(h.run(WAIT_MS))
        with h.state() as s:
            self.assertTrue(s.is_error)
            self.assertIn("200", s.error_message)

    def test_run_times_out_while_the_tool_runs(self):
        h = self.host(request_timeout_ms=-1)
        h.spawn(probe_argv(), {"name": "quiet", "arguments": {"silent": True}})
        self.assertFalse(h.run(50))
        self.assertFalse(h.done)
        # close() kills and reaps it (tearDown checks).

    def test_a_files_backend_of_the_host(self):
        with Files.memory() as mem:
            mem.write("memo.txt", "in memory")
            h = self.host(root=None, files=mem, sandbox=WRITABLE)
        got = self.steps(["read_text", "memo.txt"], ["write", "out.txt", "from the tool"],
                         ["read_text", "a.txt"], host=h)
        self.assertEqual(got[:2], [{"ok": "in memory"}, {"ok": None}])
        self.assertEqual(got[2]["error"][0], NOT_FOUND)
        self.assertFalse(os.path.exists(self.path("out.txt")))


class VfsHostApiTest(HostTestCase):
    def test_misuse_is_refused_with_a_message(self):
        h = self.host()
        for call in (h.state, lambda: h.apply(1), h.cancel, lambda: h.run(0)):
            with self.assertRaises(JptError) as e:
                call()
            self.assertEqual(e.exception.status, jptool.JPT_ERR_STATE)
            self.assertTrue(e.exception.message)
        with self.assertRaises(JptError) as e:
            h.spawn(probe_argv(), {"arguments": {}})
        self.assertEqual(e.exception.status, INVALID)
        self.assertIn('"name"', e.exception.message)
        with self.assertRaises(JptError) as e:
            h.spawn(probe_argv(), {"name": "x", "colour": 1})
        self.assertIn("unknown key 'colour'", e.exception.message)
        with self.assertRaises(JptError) as e:
            h.spawn(["/nonexistent/tool"], {"name": "x"})
        self.assertEqual(e.exception.status, NOT_FOUND)
        with self.assertRaises(TypeError):
            h.spawn("python3", {"name": "x"})
        with self.assertRaises(JptError) as e:
            h.attach(-1, 1, {"name": "x"})
        self.assertEqual(e.exception.status, INVALID)
        h.spawn(probe_argv(), {"name": "x", "arguments": {"steps": []}})
        with self.assertRaises(JptError) as e:
            h.spawn(probe_argv(), {"name": "x"})
        self.assertEqual(e.exception.status, jptool.JPT_ERR_STATE)
        self.assertEqual(h.errmsg, "a tool was started on this host already")
        with self.assertRaises(JptError) as e:
            h.apply("not json", raw=True)
        self.assertEqual(e.exception.status, INVALID)
        self.assertTrue(h.run(WAIT_MS))

    def test_options_are_checked(self):
        with self.assertRaises(JptError) as e:
            VfsHost(sandbox={"filesystem": {"allow": ["/etc"]}})
        self.assertEqual(e.exception.status, INVALID)
        self.assertIn("filesystem.allow[0]", e.exception.message)
        self.assertIn("sandbox", e.exception.message)
        with self.assertRaises(JptError) as e:
            VfsHost(root=self.path("missing"))
        self.assertIn(self.path("missing"), e.exception.message)
        with Files.memory() as mem, self.assertRaises(JptError) as e:
            VfsHost(files=mem, root=self.root)
        self.assertEqual(e.exception.status, INVALID)
        for bad in ({"request_timeout_ms": -2}, {"kill_grace_ms": -1}):
            with self.assertRaises(JptError) as e:
                VfsHost(**bad)
            self.assertEqual(e.exception.status, INVALID)
        with self.assertRaises(TypeError):
            VfsHost(files="memory")
        with self.assertRaises(ValueError):
            VfsHost(max_message=-1)
        with self.assertRaises(JptError) as e:
            VfsHost(sandbox_mode=4)
        self.assertEqual(e.exception.status, INVALID)
        self.assertEqual(e.exception.message, "VfsHost: unknown sandbox_mode 4 (JPT_SANDBOX_*)")
        with self.assertRaises(JptError) as e:
            VfsHost(sandbox_read=["/usr", "relative/lib"])
        self.assertEqual(e.exception.status, INVALID)
        self.assertEqual(e.exception.message,
                         "VfsHost: sandbox_read[1]: 'relative/lib' is not an absolute path")
        with self.assertRaises(TypeError):
            VfsHost(sandbox_read="/opt/python")
        VfsHost(sandbox=json.dumps(WRITABLE)).close()  # JSON text works too

    def test_close_is_final_and_refused_from_the_policy_handler(self):
        h = self.host()
        refused = []

        def handler(request):
            try:
                h.close()
            except RuntimeError as e:
                refused.append(str(e))
            request.deny()

        h.set_policy_handler(handler)
        report = self.run_probe({"steps": [["write", "x", "y"]]}, host=h)
        self.assertEqual(report["steps"][0]["error"][0], DENIED)
        self.assertEqual(len(refused), 1)
        h.close()
        h.close()
        self.assertTrue(h.closed)
        self.assertEqual(repr(h), "<jptool.VfsHost closed>")
        for call in (h.fileno, h.state, lambda: h.errmsg, lambda: h.done):
            with self.assertRaises(ValueError):
                call()

    def test_close_kills_a_running_tool(self):
        h = self.host(request_timeout_ms=-1)
        h.spawn(probe_argv(), {"name": "quiet", "arguments": {"silent": True}})
        drive_until(h, lambda: len(children_in_proc()) == 1)
        h.close()
        self.assertEqual(children_in_proc(), [])


# ---- The OS sandbox ---------------------------------------------------------------------

DENIED_BY_LANDLOCK = {"oserror": ["PermissionError", "EACCES"]}
DENIED_BY_SECCOMP = {"oserror": ["PermissionError", "EPERM"]}


@needs_sandbox
class SandboxTest(HostTestCase):
    """What the OS sandbox does to a tool written in Python: the protocol
    is its only way to the workspace."""

    def test_a_python_tool_cannot_open_workspace_files_but_reads_them_through_the_host(self):
        opens = [["open", self.path("a.txt"), "r"], ["open", self.path("new.txt"), "w"]]
        got = self.steps(*opens, ["read_text", "a.txt"], ["write", "new.txt", "through the host"],
                         sandbox=WRITABLE)
        self.assertEqual(got, [DENIED_BY_LANDLOCK, DENIED_BY_LANDLOCK, {"ok": "hello\n"},
                               {"ok": None}])
        self.assertEqual(self.content("new.txt"), b"through the host")
        # The sandbox is what refused them: without it the same opens work.
        got = self.steps(*opens, sandbox_mode=jptool.JPT_SANDBOX_OFF)
        self.assertEqual(got, [{"ok": "hello\n"}, {"ok": len("written directly")}])
        self.assertEqual(self.content("new.txt"), b"written directly")

    def test_nor_the_hosts_secrets_nor_a_socket(self):
        got = self.steps(["open", "/etc/passwd", "r"],
                         ["open", f"/proc/{os.getpid()}/environ", "r"],
                         ["socket"])
        self.assertEqual(got, [DENIED_BY_LANDLOCK, DENIED_BY_LANDLOCK, DENIED_BY_SECCOMP])

    def test_sandbox_says_what_was_enforced(self):
        h = self.host()
        with self.assertRaises(JptError) as e:
            h.sandbox()
        self.assertEqual(e.exception.status, jptool.JPT_ERR_STATE)
        self.assertIn("no tool was started", e.exception.message)
        self.run_probe({"steps": []}, host=h)
        enforced, report = h.sandbox()  # also once the tool has ended
        needed = (jptool.JPT_SANDBOX_ENFORCED_NO_NEW_PRIVS | jptool.JPT_SANDBOX_ENFORCED_SECCOMP
                  | jptool.JPT_SANDBOX_ENFORCED_FILES)
        self.assertEqual(enforced & needed, needed)
        self.assertTrue(report.startswith("vfs profile, Landlock ABI "), report)
        off = self.host(sandbox_mode=jptool.JPT_SANDBOX_OFF)
        self.run_probe({"steps": []}, host=off)
        self.assertEqual(off.sandbox(), (0, 'off: the sandbox mode is "off"'))

    @unittest.skipIf(os.path.realpath(sys.base_prefix).startswith("/usr/")
                     or os.path.realpath(sys.base_prefix) == "/usr",
                     "this interpreter is under /usr, which the sandbox lets every tool read")
    def test_a_python_outside_usr_needs_its_prefix_to_start(self):
        prefixes = {os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix,
                                                  sys.prefix, sys.exec_prefix)}
        h = self.host(sandbox_read=[p for p in READ_PATHS if p not in prefixes])
        # Its own program file it may run; not the rest of its installation.
        h.spawn([sys.executable, PROBE], {"name": "probe", "arguments": {"steps": []}})
        self.assertTrue(h.run(WAIT_MS))
        with h.state() as s:
            self.assertTrue(s.is_error)
            # The loader is refused its libpython (unless it finds another
            # one under /usr), or Python its standard library.
            self.assertRegex(s.error_message,
                             r"libpython.*Permission denied|No module named 'encodings'")


# ---- The policy prompt -----------------------------------------------------------------


class PolicyHandlerTest(HostTestCase):
    """The default policy (the workspace read-only) asks about writes."""

    def test_an_allowed_ask_lets_the_request_through_and_the_tool_is_told_pending(self):
        asked = []

        def handler(request):
            self.assertIsInstance(request, PolicyRequest)
            asked.append((request.tool, request.method, request.path, request.access,
                          request.id, request.valid))
            self.assertIsInstance(request.reason, str)
            self.assertTrue(request.reason)
            request.allow()
            self.assertFalse(request.valid)

        h = self.host()
        h.set_policy_handler(handler)
        report = self.run_probe({"steps": [["write", "n.txt", "new"],
                                           ["write", "n.txt", "again"]]}, host=h)
        self.assertEqual(report["steps"], [{"ok": None}, {"ok": None}])
        # Allowed once: the second write asks again.
        self.assertEqual(asked, [("probe", "fs.write", "n.txt", jptool.JPT_ACCESS_WRITE,
                                  None, True)] * 2)
        self.assertEqual([p[0] for p in report["pending"]], [1, 2])
        for _, reason in report["pending"]:
            self.assertTrue(reason)
        self.assertEqual(self.content("n.txt"), b"again")

    def test_the_prompt_names_the_path_a_write_touches_through_a_symlink(self):
        # issue 15 §2: the tool writes scratch/ci.yml, a symlink to the CI
        # workflow; the person asked sees what the write would replace.
        os.makedirs(self.path(".github/workflows"))
        with open(self.path(".github/workflows/ci.yml"), "w") as f:
            f.write("on: push\n")
        os.makedirs(self.path("scratch"))
        os.symlink("../.github/workflows/ci.yml", self.path("scratch/ci.yml"))
        asked = []

        def handler(request):
            asked.append((request.path, request.requested_path, repr(request)))
            request.deny()

        h = self.host()
        h.set_policy_handler(handler)
        report = self.run_probe({"steps": [["write", "scratch/ci.yml", "run: evil"]]}, host=h)
        self.assertEqual(asked, [(".github/workflows/ci.yml", "scratch/ci.yml",
                                  "<jptool.PolicyRequest probe: fs.write "
                                  "'.github/workflows/ci.yml' (written 'scratch/ci.yml')>")])
        # The tool is told of the path it wrote, never where the link leads.
        message = report["steps"][0]["error"][2]
        self.assertIn("fs.write 'scratch/ci.yml': denied by the host", message)
        self.assertNotIn(".github", message)
        self.assertNotIn(".github", json.dumps(report["pending"]))
        self.assertEqual(self.content(".github/workflows/ci.yml"), b"on: push\n")

    def test_a_denied_ask_tells_the_tool_why(self):
        h = self.host()
        h.set_policy_handler(lambda request: request.deny("not today"))
        [got] = self.steps(["write", "n.txt", "new"], host=h)
        status, code, message = got["error"]
        self.assertEqual((status, code), (DENIED, jptool.JPT_VFS_E_ACCESS_DENIED))
        self.assertIn("fs.write 'n.txt': denied by the host: not today", message)
        self.assertFalse(os.path.exists(self.path("n.txt")))

    def test_allow_always_asks_once_per_path_and_access(self):
        asked = []

        def handler(request):
            asked.append(request.path)
            request.allow_always()

        h = self.host()
        h.set_policy_handler(handler)
        got = self.steps(["write", "n.txt", "1"], ["write", "n.txt", "2"],
                         ["write", "m.txt", "3"], ["delete", "n.txt"], host=h)
        self.assertEqual(got, [{"ok": None}] * 4)
        self.assertEqual(asked, ["n.txt", "m.txt"])

    def test_an_ask_answered_later_goes_on(self):
        kept = []
        h = self.host()
        h.set_policy_handler(kept.append)
        h.spawn(probe_argv(), {"name": "probe", "arguments": {
            "steps": [["write", "later.txt", "decided later"]]}})
        drive_until(h, lambda: kept)
        # The tool waits; the host goes on serving its loop meanwhile.
        with selectors.DefaultSelector() as sel:
            sel.register(h.fileno(), selectors.EVENT_READ)
            sel.select(0.1)
            h.dispatch()
        self.assertFalse(h.done)
        self.assertFalse(os.path.exists(self.path("later.txt")))
        request = kept.pop()
        self.assertEqual(repr(request), "<jptool.PolicyRequest probe: fs.write 'later.txt'>")
        request.answer(jptool.JPT_DECISION_ALLOW)
        self.assertTrue(h.run(WAIT_MS))
        with h.state() as s:
            report = json.loads(s.blocks[0]["text"])
        self.assertEqual(report["steps"], [{"ok": None}])
        self.assertEqual(report["pending"][0][0], 1)
        self.assertEqual(self.content("later.txt"), b"decided later")

    def test_without_a_handler_an_ask_is_denied_saying_no_one_could_be_asked(self):
        h = self.host()
        h.set_policy_handler(lambda request: request.allow())
        h.set_policy_handler(None)
        [got] = self.steps(["write", "n.txt", "new"], host=h)
        self.assertEqual(got["error"][0], DENIED)
        self.assertIn("no one could be asked", got["error"][2])

    def test_a_request_dropped_unanswered_is_denied(self):
        h = self.host()
        h.set_policy_handler(lambda request: None)
        [got] = self.steps(["write", "n.txt", "new"], host=h)
        self.assertEqual(got["error"][0], DENIED)
        self.assertIn("dropped the request unanswered", got["error"][2])

    def test_a_handler_that_raises_denies_and_run_raises(self):
        h = self.host()

        def handler(request):
            raise KeyError("no ui")

        h.set_policy_handler(handler)
        h.spawn(probe_argv(), {"name": "probe", "arguments": {
            "steps": [["write", "n.txt", "new"]]}})
        with self.assertRaises(KeyError):
            h.run(WAIT_MS)
        self.assertTrue(h.run(WAIT_MS))
        with h.state() as s:
            [got] = json.loads(s.blocks[0]["text"])["steps"]
        self.assertEqual(got["error"][0], DENIED)
        self.assertIn("the policy handler failed: KeyError", got["error"][2])

    def test_answers_are_checked(self):
        kept = []
        h = self.host()
        h.set_policy_handler(kept.append)
        h.spawn(probe_argv(), {"name": "probe", "arguments": {
            "steps": [["write", "n.txt", "new"]]}})
        drive_until(h, lambda: kept)
        request = kept.pop()
        for bad in (3, -1, True, "allow"):
            with self.assertRaises(JptError) as e:
                request.answer(bad)
            self.assertEqual(e.exception.status, INVALID)
            self.assertTrue(request.valid)
        request.deny()
        with self.assertRaises(ValueError):
            request.allow()
        with self.assertRaises(TypeError):
            h.set_policy_handler(42)
        self.assertTrue(h.run(WAIT_MS))

    def test_a_request_outliving_its_tool_is_cancelled(self):
        kept = []
        h = self.host()
        h.set_policy_handler(kept.append)
        h.spawn(probe_argv(), {"name": "probe", "arguments": {
            "steps": [["write", "n.txt", "new"]]}})
        drive_until(h, lambda: kept)
        h.close()
        with self.assertRaises(JptError) as e:
            kept[0].allow()
        self.assertEqual(e.exception.status, CANCELLED)
        self.assertIn("n.txt", e.exception.message)
        self.assertFalse(kept[0].valid)

    # A rename allowed once used to ask again for the same path without end;
    # the handler gives up after 4 asks so that the test ends either way.
    def test_a_rename_allowed_once_asks_for_each_path_once(self):
        asked = []

        def handler(request):
            asked.append(request.path)
            request.allow() if len(asked) <= 4 else request.deny("asked too often")

        h = self.host()
        h.set_policy_handler(handler)
        [got] = self.steps(["rename", "a.txt", "b.txt"], host=h)
        self.assertEqual(got, {"ok": None})
        self.assertEqual(sorted(asked), ["a.txt", "b.txt"])


# ---- The C tool (test/tools/vfs-probe, on the C SDK) -------------------------------------


@needs_tools
class CToolTest(HostTestCase):
    def test_the_c_sdk_probe_through_the_python_host(self):
        asked = []

        def handler(request):
            asked.append((request.method, request.path))
            request.allow()

        h = self.host()
        h.set_policy_handler(handler)
        h.spawn([tool("vfs-probe")], {"name": "c-probe", "arguments": {"ops": [
            {"method": "fs.read", "params": {"path": "a.txt"}},
            {"method": "fs.write", "params": {"path": "c.txt", "content": "from C"}},
            {"method": "fs.read", "params": {"path": ".env"}},
        ]}})
        self.assertTrue(h.run(WAIT_MS))
        with h.state() as s:
            lines = s.blocks[0]["text"].split("\n")
        self.assertEqual(lines[0], 'fs.read ok {"content":"hello\\n","size":6}')
        self.assertEqual(lines[1], "fs.write ok {}")
        self.assertTrue(lines[2].startswith("fs.read err -32001 fs.read '.env': denied"),
                        lines[2])
        self.assertEqual(asked, [("fs.write", "c.txt")])
        self.assertEqual(self.content("c.txt"), b"from C")

    def test_a_c_tool_exiting_without_a_result(self):
        h = self.host()
        h.spawn([tool("vfs-probe")], {"name": "c-probe", "arguments": {
            "exit": 3, "stderr": "giving up early\n"}})
        self.assertTrue(h.run(WAIT_MS))
        with h.state() as s:
            self.assertTrue(s.is_error)
            self.assertIn("giving up early", s.error_message)


# ---- Files as a VFS backend ---------------------------------------------------------------


class FilesBackendTest(HostTestCase):
    def test_a_host_backend_answers_later_and_outlives_its_object(self):
        kept = []
        served = {"notes/today.md": "remember the milk"}

        def handler(request):
            kept.append(request)

        files = Files.host(handler)
        h = self.host(root=None, files=files, sandbox=WRITABLE)
        # The host holds the backend: its handler must outlive the object.
        files.close()
        del files
        gc.collect()
        h.spawn(probe_argv(), {"name": "probe", "arguments": {
            "steps": [["read_text", "notes/today.md"], ["read_text", "missing"]]}})
        for _ in range(2):
            drive_until(h, lambda: kept)
            request = kept.pop()
            self.assertEqual(request.method, "fs.read")
            path = request.params["path"]
            if path in served:
                request.reply({"content": served[path]})
            else:
                request.fail(NOT_FOUND, "no such note")
            self.assertFalse(request.valid)
        self.assertTrue(h.run(WAIT_MS))
        with h.state() as s:
            got = json.loads(s.blocks[0]["text"])["steps"]
        self.assertEqual(got[0], {"ok": "remember the milk"})
        self.assertEqual(got[1]["error"][:2], [NOT_FOUND, jptool.JPT_VFS_E_NOT_FOUND])
        self.assertIn("fs.read 'missing': no such note", got[1]["error"][2])

    def test_a_host_backend_request_dropped_or_failing_fails_the_tools_request(self):
        def handler(request):
            if request.params["path"] == "drop":
                return  # dropped: failed with JPT_ERR_CANCELLED
            if request.params["path"] == "bug":
                raise ZeroDivisionError("oops")
            raise JptError(DENIED, "read-only store")

        with Files.host(handler) as files:
            h = self.host(root=None, files=files)
        stderr = sys.stderr
        sys.stderr = open(os.devnull, "w")  # the bug's traceback
        try:
            got = self.steps(["read", "drop"], ["read", "bug"], ["read", "other"], host=h)
        finally:
            sys.stderr.close()
            sys.stderr = stderr
        self.assertEqual(got[0]["error"][:2], [CANCELLED, jptool.JPT_VFS_E_CANCELLED])
        self.assertIn("dropped the request unanswered", got[0]["error"][2])
        self.assertIn("the host's files handler failed: ZeroDivisionError: oops",
                      got[1]["error"][2])
        self.assertEqual(got[2]["error"][:2], [DENIED, jptool.JPT_VFS_E_ACCESS_DENIED])
        self.assertIn("read-only store", got[2]["error"][2])

    def test_a_reply_of_the_wrong_shape(self):
        def handler(request):
            with self.assertRaises(JptError) as e:
                request.reply({"exists": "maybe"})
            self.assertEqual(e.exception.status, INVALID)
            self.assertFalse(request.valid)
            with self.assertRaises(ValueError):
                request.fail(DENIED)

        with Files.host(handler) as files:
            with self.assertRaises(JptError) as e:
                files.exists("x")
            self.assertEqual(e.exception.status, jptool.JPT_ERR_PROTOCOL)

    def test_files_methods_and_errors(self):
        with Files.open_dir(self.root) as f:
            self.assertEqual(f.read("a.txt", limit=6), b"hello\n")
            with self.assertRaises(JptError) as e:
                f.read("a.txt", limit=5)
            self.assertEqual(e.exception.status, jptool.JPT_ERR_LIMIT)
            self.assertEqual(f.grep("HELLO", case_insensitive=True, paths=["a.txt"]),
                             {"matches": [{"path": "a.txt", "lines": [
                                 {"line_number": 1, "content": "hello", "is_match": True}]}],
                              "truncated": False})
            self.assertEqual(f.call("fs.metadata", '{"path": "src"}'),
                             {"kind": "dir", "size": 0})
            with self.assertRaises(JptError) as e:
                f.rename("a.txt", "src/main.rs")
            self.assertEqual(e.exception.status, EXISTS)
            with self.assertRaises(JptError) as e:
                f.call("fs.chmod", {})
            self.assertEqual(e.exception.status, UNSUPPORTED)
        with self.assertRaises(JptError) as e:
            Files.open_dir(self.path("missing"))
        self.assertEqual(e.exception.status, NOT_FOUND)
        self.assertIn("missing", e.exception.message)
        with self.assertRaises(TypeError):
            Files(None)
        f = Files.memory()
        f.close()
        f.close()
        self.assertTrue(f.closed)
        with self.assertRaises(ValueError):
            f.read("x")


# ---- Registry "vfs" tools ---------------------------------------------------------------


def registry_tools(extra=()):
    return {"tools": [
        probe_definition("probe"),
        probe_definition("probe_rw", sandbox=WRITABLE),
        probe_definition("keeper", stateful=True),
        probe_definition("asker"),
        *extra,
    ]}


class RegistryVfsTest(WorkspaceTestCase):
    def setUp(self):
        super().setUp()
        self.r = Registry(root=self.root, kill_grace_ms=300, settle_ms=100)
        self.addCleanup(self.r.close)
        self.asked = []

    def load(self, extra=()):
        self.r.load_tools(registry_tools(extra))

    def record_and(self, decide):
        def handler(request):
            self.asked.append((request.tool, request.id, request.method, request.path))
            decide(request)
        return handler

    def report(self, name, arguments, call_id="c1"):
        content, is_error = self.r.call(name, arguments, id=call_id, timeout_ms=WAIT_MS)
        self.assertFalse(is_error, content)
        return json.loads(content)

    def test_a_one_shot_python_tool_and_the_registrys_policy_handler(self):
        self.load()
        self.r.set_policy_handler(self.record_and(lambda q: q.allow()))
        report = self.report("probe", {"steps": [["read_text", "a.txt"],
                                                 ["write", "out.txt", "ok"],
                                                 ["read", ".env"]]}, call_id="call-7")
        self.assertEqual(report["init"]["name"], "probe")
        self.assertEqual(report["steps"][:2], [{"ok": "hello\n"}, {"ok": None}])
        self.assertEqual(report["steps"][2]["error"][0], DENIED)
        self.assertEqual(self.asked, [("probe", "call-7", "fs.write", "out.txt")])
        self.assertEqual(self.content("out.txt"), b"ok")

    def test_the_definitions_sandbox_is_the_tools_policy(self):
        self.load()
        self.assertEqual(self.report("probe_rw", {"steps": [["write", "w.txt", "w"]]})["steps"],
                         [{"ok": None}])
        [got] = self.report("probe", {"steps": [["write", "w.txt", "x"]]})["steps"]
        self.assertEqual(got["error"][0], DENIED)
        self.assertIn("no one could be asked", got["error"][2])
        self.assertEqual(self.content("w.txt"), b"w")

    def test_a_stateful_python_tool_spawn_apply_fetch_abort(self):
        self.load()
        self.r.set_policy_handler(self.record_and(lambda q: q.deny("no")))
        content, _ = self.r.call("keeper", {"action": "spawn", "id": "k", "stateful": True,
                                            "wait_secs": WAIT}, timeout_ms=WAIT_MS)
        self.assertEqual(response(content), {"id": "k", "state": "running",
                                             "content": "ready"})
        content, _ = self.r.call("keeper", {"action": "apply", "id": "k",
                                            "input": {"read": "src/main.rs"},
                                            "wait_secs": WAIT},
                                 timeout_ms=WAIT_MS)
        self.assertEqual(json.loads(response(content)["content"]), {"ok": "fn main() {}\n"})
        content, _ = self.r.call("keeper", {"action": "apply", "id": "k", "input": "stop",
                                            "wait_secs": WAIT}, timeout_ms=WAIT_MS)
        self.assertEqual(response(content), {"id": "k", "state": "stopped",
                                             "result": "stopped on request"})

    def test_a_stateful_tool_is_aborted(self):
        self.load()
        self.r.call("keeper", {"action": "spawn", "id": "k", "stateful": True},
                    timeout_ms=WAIT_MS)
        content, _ = self.r.call("keeper", {"action": "abort", "id": "k"},
                                 timeout_ms=WAIT_MS)
        self.assertEqual(response(content)["state"], "stopped")

    def test_the_policy_request_of_a_handle_names_the_handle(self):
        self.load()
        self.r.set_policy_handler(self.record_and(lambda q: q.allow()))
        self.r.call("keeper", {"action": "spawn", "id": "w1", "stateful": True,
                               "wait_secs": WAIT}, timeout_ms=WAIT_MS)
        content, _ = self.r.call("keeper", {"action": "apply", "id": "w1",
                                            "input": {"write": ["x.txt", "y"]},
                                            "wait_secs": WAIT}, timeout_ms=WAIT_MS)
        self.assertEqual(json.loads(response(content)["content"]), {"ok": None})
        self.assertEqual(self.asked, [("keeper", "w1", "fs.write", "x.txt")])
        self.assertEqual(self.content("x.txt"), b"y")

    def test_a_one_shot_question_goes_to_the_inquiry_handler_and_reruns(self):
        self.load()
        questions = []

        def inquire(q):
            questions.append(q.question["id"])
            q.answer(True)

        self.r.set_inquiry_handler(inquire)
        content, is_error = self.r.call("asker", {"ask": "go"}, timeout_ms=WAIT_MS)
        self.assertEqual((content, is_error), ("answered true", False))
        self.assertEqual(questions, ["go"])

    def test_add_files_chooses_the_backend(self):
        with Files.memory() as mem:
            mem.write("memo.txt", "in memory")
            self.r.add_files("mem", mem)
            with self.assertRaises(JptError) as e:
                self.r.add_files("mem", mem)
            self.assertEqual(e.exception.status, EXISTS)
            with self.assertRaises(JptError) as e:
                self.r.add_files("no spaces", mem)
            self.assertEqual(e.exception.status, INVALID)
        with self.assertRaises(TypeError):
            self.r.add_files("x", "memory")
        self.load([probe_definition("memo", files="mem", sandbox=WRITABLE)])
        got = self.report("memo", {"steps": [["read_text", "memo.txt"],
                                             ["write", "new.txt", "n"],
                                             ["read_text", "a.txt"]]})["steps"]
        self.assertEqual(got[:2], [{"ok": "in memory"}, {"ok": None}])
        self.assertEqual(got[2]["error"][0], NOT_FOUND)
        self.assertFalse(os.path.exists(self.path("new.txt")))

    def test_a_vfs_tools_environment_is_path_and_what_env_names(self):
        for name in ("JPT_PROBE_ALLOWED", "JPT_PROBE_NOT_ALLOWED"):
            os.environ[name] = "set in the host"
            self.addCleanup(os.environ.pop, name)
        self.load([probe_definition("envy", env={"allow": ["JPT_PROBE_ALLOWED"],
                                                  "set": PROBE_ENV})])
        [got] = self.report("envy", {"steps": [["environ"]]})["steps"]
        # PEP 538: Python sets LC_CTYPE when it finds itself in the C locale.
        self.assertEqual(set(got["ok"]) - {"LC_CTYPE"},
                         {"PATH", "JPT_PROBE_ALLOWED", *PROBE_ENV})

    @needs_sandbox
    def test_a_sandboxed_registry_tool_reads_only_through_the_registry(self):
        self.load()
        self.assertEqual(self.r.tool_sandbox("probe")[1][:12], "vfs profile,")
        got = self.report("probe", {"steps": [["open", self.path("a.txt"), "r"],
                                              ["read_text", "a.txt"]]})["steps"]
        self.assertEqual(got, [DENIED_BY_LANDLOCK, {"ok": "hello\n"}])

    def test_definitions_are_checked(self):
        for bad, words in (
                ({"files": "nowhere"}, "nowhere"),
                ({"sandbox": {"filesystem": {"allow": ["/etc"]}}}, "sandbox"),
                ({"request_timeout_ms": -5}, "request_timeout_ms"),
                ({"pty": True}, "pty"),
                ({"os_sandbox": {"read": ["relative/lib"]}}, "os_sandbox.read"),
                ({"os_sandbox": {"mode": "strict"}}, "os_sandbox.mode"),
                ({"env": {"inherit": True}}, "env.inherit")):
            definition = probe_definition("bad", **bad)
            with self.assertRaises(JptError) as e:
                self.r.load_tools({"tools": [definition]})
            self.assertEqual(e.exception.status, INVALID)
            self.assertIn(words, e.exception.message)

    def test_a_policy_handler_that_raises_is_raised_by_the_call(self):
        self.load()

        def handler(request):
            raise LookupError("prompt is gone")

        self.r.set_policy_handler(handler)
        with self.assertRaises(LookupError):
            self.r.call("probe", {"steps": [["write", "x", "y"]]}, timeout_ms=WAIT_MS)
        self.r.set_policy_handler(None)
        self.assertTrue(self.r.run(WAIT_MS))

    @needs_tools
    def test_the_c_probe_as_a_registry_tool(self):
        self.load([{"name": "cprobe", "runtime": "vfs", "command": [tool("vfs-probe")],
                    "os_sandbox": probe_definition("x")["os_sandbox"]}])
        content, is_error = self.r.call("cprobe", {"ops": [
            {"method": "fs.exists", "params": {"path": "src"}}]}, timeout_ms=WAIT_MS)
        self.assertEqual((content, is_error), ('fs.exists ok {"exists":true}', False))


# ---- asyncio ---------------------------------------------------------------------------


class AsyncVfsTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = os.path.realpath(self.tmp.name)
        make_tree(self.root)
        self.fds = open_fds()

    async def asyncTearDown(self):
        gc.collect()
        self.tmp.cleanup()
        self.assertEqual(children_in_proc(), [])
        # The loop's own fds (its selector, its self-pipe) were open already.
        self.assertEqual(open_fds(), self.fds)

    def registry(self):
        r = AsyncRegistry(root=self.root, kill_grace_ms=300, settle_ms=100)
        r.load_tools(registry_tools())
        return r

    async def call(self, r, name, arguments):
        return await asyncio.wait_for(r.call(name, arguments), WAIT)

    async def test_a_coroutine_policy_handler_decides_later(self):
        decided = []

        async def ask_user(request):
            await asyncio.sleep(0.05)  # the user thinks
            decided.append(request.path)
            return request.path == "yes.txt"

        async with self.registry() as r:
            self.assertEqual(r.tool_sandbox("probe"), r.registry.tool_sandbox("probe"))
            r.set_policy_handler(ask_user)
            content, is_error = await self.call(r, "probe", {"steps": [
                ["write", "yes.txt", "y"], ["write", "no.txt", "n"]]})
        self.assertFalse(is_error)
        got = json.loads(content)["steps"]
        self.assertEqual(got[0], {"ok": None})
        self.assertEqual(got[1]["error"][0], DENIED)
        self.assertEqual(decided, ["yes.txt", "no.txt"])
        with open(os.path.join(self.root, "yes.txt")) as f:
            self.assertEqual(f.read(), "y")

    async def test_decisions_a_coroutine_may_give(self):
        decisions = iter([jptool.JPT_DECISION_ALLOW_ALWAYS, None, "maybe"])

        async def decide(request):
            return next(decisions)

        async with self.registry() as r:
            r.set_policy_handler(decide)
            content, _ = await self.call(r, "probe", {"steps": [
                ["write", "a1", "1"], ["write", "a1", "2"], ["write", "b1", "3"]]})
            got = json.loads(content)["steps"]
            self.assertEqual(got[:2], [{"ok": None}, {"ok": None}])
            self.assertIn("the policy handler gave no decision", got[2]["error"][2])
            # A decision the request refuses denies it, and the await under
            # way raises why.
            with self.assertRaises(JptError) as e:
                await self.call(r, "probe", {"steps": [["write", "c1", "3"]]})
            self.assertIn("unknown policy decision 'maybe'", e.exception.message)
            content, is_error = await self.call(r, "probe", {"steps": []})
            self.assertFalse(is_error)
        self.assertFalse(os.path.exists(os.path.join(self.root, "c1")))

    async def test_a_failing_coroutine_denies_and_an_await_raises(self):
        async def broken(request):
            raise ValueError("no screen")

        async with self.registry() as r:
            r.set_policy_handler(broken)
            with self.assertRaises(ValueError):
                await self.call(r, "probe", {"steps": [["write", "x", "y"]]})

    async def test_an_async_vfs_host_with_a_coroutine_handler(self):
        async def approve(request):
            await asyncio.sleep(0.01)
            return jptool.JPT_DECISION_ALLOW

        async with AsyncVfsHost(root=self.root, kill_grace_ms=300, **HOST_SANDBOX) as h:
            h.set_policy_handler(approve)
            with self.assertRaises(JptError) as e:
                await h.wait()
            self.assertEqual(e.exception.status, jptool.JPT_ERR_STATE)
            h.spawn(probe_argv(), {"name": "probe", "arguments": {
                "steps": [["write", "z.txt", "zz"]]}})
            with await asyncio.wait_for(h.wait(), WAIT) as s:
                report = json.loads(s.blocks[0]["text"])
            self.assertTrue(h.done)
            self.assertEqual(h.sandbox(), h.host.sandbox())
        self.assertTrue(h.closed)
        self.assertEqual(report["steps"], [{"ok": None}])
        self.assertEqual(len(report["pending"]), 1)

    async def test_aclose_cancels_a_running_tool_without_blocking(self):
        h = AsyncVfsHost(root=self.root, kill_grace_ms=300, **HOST_SANDBOX)
        h.spawn(probe_argv(), {"name": "keeper", "arguments": {"stateful": True}})
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        t = asyncio.get_running_loop().create_task(ticker())
        await asyncio.sleep(0.3)  # the tool starts
        await asyncio.wait_for(h.aclose(), WAIT)
        t.cancel()
        self.assertTrue(h.closed)
        self.assertGreater(ticks, 0)

    async def test_async_vfs_host_arguments(self):
        with self.assertRaises(TypeError):
            AsyncVfsHost("host")
        host = VfsHost(root=self.root)
        with self.assertRaises(TypeError):
            AsyncVfsHost(host, root=self.root)
        driver = AsyncVfsHost(host)
        with self.assertRaises(RuntimeError):
            AsyncVfsHost(host)
        self.assertIs(driver.host, host)
        self.assertIn("fd=", repr(driver))
        await driver.aclose()  # no tool: frees at once
        self.assertEqual(repr(driver), "<jptool.aio.AsyncVfsHost closed>")
        self.assertTrue(host.closed)
        with self.assertRaises(ValueError):
            AsyncVfsHost(host)
        with self.assertRaises(ValueError):
            driver.spawn(probe_argv(), {"name": "x"})

    async def test_an_async_vfs_host_stateful_apply(self):
        async with AsyncVfsHost(root=self.root, **HOST_SANDBOX) as h:
            h.spawn(probe_argv(), {"name": "keeper", "arguments": {"stateful": True}})
            h.apply({"read": "a.txt"})
            h.apply("stop")
            with await asyncio.wait_for(h.wait(), WAIT) as s:
                self.assertEqual(s.blocks, [{"type": "text", "text": "stopped on request"}])


# ---- jptool.vfs_tool against a scripted host -------------------------------------------


def line(message):
    return json.dumps(message).encode() + b"\n"


INIT = {"jsonrpc": "2.0", "method": "init", "params": {
    "tool": {"name": "t", "arguments": {"a": 1}}, "protocol_version": "0.1.0"}}


def result(rid, value):
    return {"jsonrpc": "2.0", "id": rid, "result": value}


def error(rid, code, message):
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def after(rid, message):
    """A scripted message the host sends once the tool sent request `rid`
    (None: at once, a response to no request included)."""
    return ("after", rid, message)


class ScriptedHostTest(unittest.TestCase):
    """The tool side over two pipes, the host's messages scripted: the
    tool's ids are 1, 2, … in order. A host answers what it was asked, so a
    response (and a message given with after()) goes once the tool has sent
    its request, from a thread; the rest at once, in the script's order.
    The tool takes each message as soon as it reads it, as the C SDK does
    (the conformance cases, test/vfs-tool-conformance, pin that down)."""

    def setUp(self):
        self.addCleanup(lambda before: self.assertEqual(open_fds(), before), open_fds())
        self.to_tool_r, self.to_tool_w = os.pipe()
        self.from_tool_r, self.from_tool_w = os.pipe()
        os.set_blocking(self.from_tool_r, False)
        for fd in (self.to_tool_r, self.to_tool_w, self.from_tool_r, self.from_tool_w):
            self.addCleanup(self.close_fd, fd)
        self.script = None  # the responder's queue, once connected
        self.seen = []      # what the tool sent, as the responder read it
        self.partial = b""

    @staticmethod
    def close_fd(fd):
        try:
            os.close(fd)
        except OSError:
            pass

    def write_now(self, *messages):
        os.write(self.to_tool_w, b"".join(m if isinstance(m, bytes) else line(m)
                                          for m in messages))

    def send(self, *messages):
        """Scripts messages (before connecting: writes them at once)."""
        if self.script is None:
            self.write_now(*messages)
            return
        for m in messages:
            self.script.put(m)

    def read_tool(self, timeout):
        """Reads what the tool wrote within `timeout` seconds into seen."""
        poller = select.poll()  # (no fd of its own, unlike a selector)
        poller.register(self.from_tool_r, select.POLLIN)
        if not poller.poll(timeout * 1000):
            return
        try:
            data = os.read(self.from_tool_r, 1 << 20)
        except BlockingIOError:
            return
        *lines, self.partial = (self.partial + data).split(b"\n")
        self.seen += [json.loads(x) for x in lines]

    def respond(self):
        """The host: each scripted message in order, a response once its
        request came."""
        while True:
            m = self.script.get()
            if m is None:
                return
            wait_for = None
            if isinstance(m, tuple):
                _, wait_for, m = m
            elif isinstance(m, dict) and isinstance(m.get("id"), int) and "method" not in m:
                wait_for = m["id"]
            deadline = time.monotonic() + WAIT
            while wait_for is not None and not any(x.get("id") == wait_for for x in self.seen):
                if time.monotonic() > deadline or self.stopping.is_set():
                    return  # (the test fails waiting for the answer)
                self.read_tool(0.05)
            try:
                self.write_now(m)
            except OSError:
                return  # the test closed the pipe

    def stop_responding(self):
        if self.script is not None:
            self.stopping.set()
            self.script.put(None)
            self.responder.join()
            self.script = None

    def sent(self):
        """Everything the tool sent."""
        self.stop_responding()
        while True:
            before = len(self.seen)
            self.read_tool(0)
            if len(self.seen) == before:
                return self.seen

    def connect(self, *first, **kw):
        self.write_now(INIT)
        self.script = queue.Queue()
        self.stopping = threading.Event()
        self.responder = threading.Thread(target=self.respond)
        self.responder.start()
        self.addCleanup(self.stop_responding)
        self.send(*first)
        t = vfs_tool.connect_fds(self.to_tool_r, self.from_tool_w, **kw)
        self.addCleanup(t.close)
        return t

    def test_init_a_read_and_the_wire(self):
        t = self.connect(result(1, {"content": "hi", "size": 2}))
        self.assertEqual((t.name, t.arguments, t.answers, t.options, t.protocol_version),
                         ("t", {"a": 1}, {}, {}, "0.1.0"))
        self.assertEqual(t.read("src/a.txt"), b"hi")
        self.assertEqual(self.sent(), [{"jsonrpc": "2.0", "id": 1, "method": "fs.read",
                                        "params": {"path": "src/a.txt"}}])
        self.assertFalse(t.cancelled)
        self.assertIn("'t'", repr(t))

    def test_write_sends_text_or_base64(self):
        t = self.connect(*(result(i, {}) for i in (1, 2, 3, 4)))
        t.write("a", "tëxt\n")
        t.write("b", b"\x00\x01")
        t.write("c", b"\xff")
        t.write(b"d", bytearray(b"plain"))
        params = [m["params"] for m in self.sent()]
        self.assertEqual(params, [
            {"path": "a", "content": "tëxt\n"},
            {"path": "b", "content": "AAE=", "encoding": "base64"},
            {"path": "c", "content": "/w==", "encoding": "base64"},
            {"path": "d", "content": "plain"}])

    def test_read_decodes_base64(self):
        t = self.connect(result(1, {"content": "AAE=", "encoding": "base64", "size": 2}),
                         result(2, {"content": "x", "encoding": "rot13"}),
                         result(3, {"content": "!!", "encoding": "base64"}),
                         result(4, {"exists": True}))
        self.assertEqual(t.read("b"), b"\x00\x01")
        for _ in range(2):
            with self.assertRaises(vfs_tool.VfsToolError) as e:
                t.read("x")
            self.assertEqual((e.exception.status, e.exception.code),
                             (jptool.JPT_ERR_PROTOCOL, 0))
        # A result of the wrong shape fails only its call.
        self.assertTrue(t.exists("x"))

    def test_every_method_sends_d11s_params(self):
        t = self.connect(result(1, {"exists": False}),
                         result(2, {"entries": [{"path": "m", "kind": "file"}]}),
                         result(3, {"kind": "fifo"}),
                         result(4, {}), result(5, {}),
                         result(6, {"matches": [], "truncated": False}),
                         result(7, {"status": 200}))
        self.assertFalse(t.exists("e"))
        self.assertEqual(t.list_dir("d"), [{"path": "m", "kind": "file"}])
        self.assertEqual(t.metadata("p"), {"kind": "other", "size": 0})
        t.delete("gone")
        t.rename("old", "new")
        self.assertEqual(t.grep("fn", paths=["src"], extensions=["rs"], context=2,
                                case_insensitive=True, fixed_strings=True, max_matches=5),
                         {"matches": [], "truncated": False})
        self.assertEqual(t.call("http.get", {"url": "u"}), {"status": 200})
        self.assertEqual([(m["method"], m.get("params")) for m in self.sent()], [
            ("fs.exists", {"path": "e"}),
            ("fs.list_dir", {"path": "d"}),
            ("fs.metadata", {"path": "p"}),
            ("fs.delete", {"path": "gone"}),
            ("fs.rename", {"from": "old", "to": "new"}),
            ("fs.grep", {"pattern": "fn", "paths": ["src"], "extensions": ["rs"],
                         "context": 2, "case_insensitive": True, "fixed_strings": True,
                         "max_matches": 5}),
            ("http.get", {"url": "u"})])

    def test_http_and_process_run_send_d11s_params_and_read_its_results(self):
        t = self.connect(
            result(1, {"status": 200, "headers": [{"name": "A", "value": "b"}], "body": "hi"}),
            result(2, {"status": 404, "headers": [], "body": "AAE=", "encoding": "base64"}),
            result(3, {"exit_code": 0, "stdout": "out", "stderr": ""}),
            result(4, {"exit_code": None, "signal": 9, "stdout": "", "stderr": "killed"}),
            result(5, {"exit_code": None, "stdout": "", "stderr": ""}),
            {"jsonrpc": "2.0", "id": 6, "error": {
                "code": -32004, "message": "timed out",
                "data": {"exit_code": None, "signal": 15, "stdout": "half", "stderr": ""}}})
        self.assertEqual(t.http_get("https://a.example/x", {"Authorization": "Bearer ${TOKEN}"}),
                         (200, [{"name": "A", "value": "b"}], b"hi"))
        self.assertEqual(t.http_post("https://a.example/y", b"\x00\x01", [("X", "1")]),
                         (404, [], b"\x00\x01"))
        self.assertEqual(t.process_run("cargo", ["check"], ["CARGO_HOME"]), (0, "out", ""))
        self.assertEqual(t.process_run("sleep", ["9"]), (-9, "", "killed"))
        self.assertEqual(t.process_run("/bin/true"),
                         (vfs_tool.JPT_VFS_TOOL_EXIT_UNKNOWN, "", ""))
        with self.assertRaises(vfs_tool.VfsToolError) as e:
            t.process_run("sleep", ["99"])
        self.assertEqual((e.exception.status, e.exception.code, e.exception.data),
                         (jptool.JPT_ERR_TIMEOUT, -32004,
                          {"exit_code": None, "signal": 15, "stdout": "half", "stderr": ""}))
        self.assertEqual([(m["method"], m["params"]) for m in self.sent()], [
            ("http.get", {"url": "https://a.example/x", "headers": [
                {"name": "Authorization", "value": "Bearer ${TOKEN}"}]}),
            ("http.post", {"url": "https://a.example/y", "headers": [{"name": "X", "value": "1"}],
                           "body": "AAE=", "encoding": "base64"}),
            ("process.run", {"program": "cargo", "args": ["check"], "envs": ["CARGO_HOME"]}),
            ("process.run", {"program": "sleep", "args": ["9"]}),
            ("process.run", {"program": "/bin/true"}),
            ("process.run", {"program": "sleep", "args": ["99"]})])

    def test_http_headers_as_json_gives_them(self):
        # A tool passing on headers from its JSON arguments, or a response's.
        ok = result(1, {"status": 200, "headers": [], "body": ""})
        t = self.connect(ok, dict(ok, id=2))
        t.http_get("https://a.example/x", [["Authorization", "Bearer ${TOKEN}"]])
        t.http_get("https://a.example/x", [{"name": "Accept", "value": "text/plain"}])
        self.assertEqual([m["params"]["headers"] for m in self.sent()], [
            [{"name": "Authorization", "value": "Bearer ${TOKEN}"}],
            [{"name": "Accept", "value": "text/plain"}]])
        for bad in ([["a", "b", "c"]], [{"name": "A"}], [{"name": "A", "value": 1}]):
            with self.assertRaises(TypeError) as e:
                t.http_get("u", bad)
            self.assertEqual(str(e.exception), "http.get: header 0 is not a (name, value) pair "
                                               'of str nor a {"name", "value"} object')

    def test_http_and_process_run_results_of_the_wrong_shape(self):
        t = self.connect(result(1, {"status": "200", "headers": [], "body": ""}),
                         result(2, {"status": 200, "headers": [], "body": "!",
                                    "encoding": "base64"}),
                         result(3, {"exit_code": 256, "stdout": "", "stderr": ""}),
                         result(4, {"exit_code": 0, "stdout": "", "stderr": None}),
                         result(5, {"exists": True}))
        for call in (lambda: t.http_get("u"), lambda: t.http_post("u", "x"),
                     lambda: t.process_run("p"), lambda: t.process_run("p")):
            with self.assertRaises(vfs_tool.VfsToolError) as e:
                call()
            self.assertEqual((e.exception.status, e.exception.code), (jptool.JPT_ERR_PROTOCOL, 0))
        self.assertTrue(t.exists("x"))  # each failed only its own call
        for bad in (lambda: t.http_get("u", [("only a name",)]), lambda: t.http_get(b"u"),
                    lambda: t.process_run("p", "args"), lambda: t.process_run("p", envs=[1])):
            with self.assertRaises(TypeError):
                bad()

    def test_error_codes_map_to_statuses(self):
        table = [(-32001, jptool.JPT_ERR_DENIED), (-32002, jptool.JPT_ERR_NOT_FOUND),
                 (-32003, jptool.JPT_ERR_EXISTS), (-32004, jptool.JPT_ERR_TIMEOUT),
                 (-32005, jptool.JPT_ERR_CANCELLED), (-32601, jptool.JPT_ERR_UNSUPPORTED),
                 (-32600, INVALID), (-32602, INVALID), (-32700, INVALID),
                 (-32603, jptool.JPT_ERR_IO), (-31999, jptool.JPT_ERR_IO)]
        t = self.connect(*(error(i + 1, code, f"says {code}")
                           for i, (code, _) in enumerate(table)))
        for code, status in table:
            with self.assertRaises(vfs_tool.VfsToolError) as e:
                t.exists("x")
            self.assertIsInstance(e.exception, JptError)
            self.assertEqual((e.exception.status, e.exception.code, e.exception.message),
                             (status, code, f"says {code}"))

    def test_pending_calls_on_pending_with_the_request_id(self):
        told = []
        t = self.connect(after(1, {"jsonrpc": "2.0", "method": "pending",
                                   "params": {"request_id": 1, "reason": "asking the user"}}),
                         {"jsonrpc": "2.0", "method": "pending",
                          "params": {"request_id": 77, "reason": "not ours"}},
                         result(1, {}),
                         on_pending=lambda rid, reason: told.append((rid, reason)))
        t.write("w", "x")
        self.assertEqual(told, [(1, "asking the user"), (0, "not ours")])

    def test_crlf_blank_lines_and_unknown_notifications_are_taken(self):
        t = self.connect(b"\r\n", b"  \n", after(1, line(result(1, {"exists": True}))[:-1] + b"\r\n"),
                         {"jsonrpc": "2.0", "method": "news", "params": {}},
                         after(None, result(42, {"late": True})))
        self.assertTrue(t.exists("x"))

    def test_pipelined_requests_are_collected_in_any_order(self):
        t = self.connect(result(3, {"content": "three"}), result(1, {"content": "one"}),
                         result(2, {}))
        ids = [t.submit_read("one"), t.submit_write("two", "2"), t.submit_read("three")]
        self.assertEqual(ids, [1, 2, 3])
        self.assertEqual(t.collect_read(3), b"three")
        self.assertEqual(t.collect(2), {})
        self.assertEqual(t.collect_read(1), b"one")
        with self.assertRaises(vfs_tool.VfsToolError) as e:
            t.collect(1)
        self.assertEqual((e.exception.status, e.exception.code), (NOT_FOUND, 0))

    def test_cancel_ends_waiting_requests_and_then_next_input(self):
        t = self.connect({"jsonrpc": "2.0", "method": "apply", "params": {"input": "x"}},
                         after(1, {"jsonrpc": "2.0", "method": "cancel"}),
                         result(1, {"content": "too late"}))
        rid = t.submit_read("a")
        with self.assertRaises(vfs_tool.VfsToolError) as e:
            t.collect(rid)
        self.assertEqual((e.exception.status, e.exception.code),
                         (CANCELLED, jptool.JPT_VFS_E_CANCELLED))
        self.assertTrue(t.cancelled)
        self.assertEqual(t.next_input(), "x")
        with self.assertRaises(vfs_tool.VfsToolError) as e:
            t.next_input()
        self.assertEqual((e.exception.status, e.exception.code),
                         (CANCELLED, jptool.JPT_VFS_E_CANCELLED))

    def test_stateful_notifications_and_the_end_on_the_wire(self):
        t = self.connect({"jsonrpc": "2.0", "method": "apply", "params": {"input": {"k": 1}}})
        t.state({"type": "running", "content": "working"})
        t.state('{"type": "waiting", "content": "Confirm?", "question": {"id": "q"}}')
        self.assertEqual(t.next_input(), {"k": 1})
        t.result([{"type": "text", "text": "done"}])
        t.result_text("plain")
        t.error("failed", ["a", "b"], transient=True)
        self.assertEqual([(m["method"], m["params"]) for m in self.sent()], [
            ("state", {"type": "running", "content": "working"}),
            ("state", {"type": "waiting", "content": "Confirm?", "question": {"id": "q"}}),
            ("result", {"content": [{"type": "text", "text": "done"}]}),
            ("result", {"content": "plain"}),
            ("error", {"message": "failed", "trace": ["a", "b"], "transient": True})])
        for bad in ({"type": "paused"}, "[1]", "{"):
            with self.assertRaises(ValueError):
                t.state(bad)
        with self.assertRaises(TypeError):
            t.result({"text": "a dict"})

    def test_the_host_closing_stdin_ends_next_input_and_calls(self):
        t = self.connect()
        os.close(self.to_tool_w)
        with self.assertRaises(vfs_tool.VfsToolError) as e:
            t.next_input()
        self.assertEqual(e.exception.status, jptool.JPT_ERR_IO)
        self.assertIn("before the next input", e.exception.message)

    def test_id_null_ends_the_session(self):
        t = self.connect(after(1, error(None, -32600, "line too long")))
        for _ in range(2):
            with self.assertRaises(vfs_tool.VfsToolError) as e:
                t.exists("x")
            self.assertEqual(e.exception.status, jptool.JPT_ERR_PROTOCOL)
            self.assertIn("line too long", e.exception.message)

    def test_a_line_that_is_not_json_ends_the_session(self):
        t = self.connect(after(1, b"this is not JSON\n"))
        with self.assertRaises(vfs_tool.VfsToolError) as e:
            t.exists("x")
        self.assertEqual(e.exception.status, jptool.JPT_ERR_PROTOCOL)
        self.assertIn("line 2 from the host is not JSON", e.exception.message)

    def test_connecting_fails_with_why(self):
        os.close(self.to_tool_w)
        with self.assertRaises(vfs_tool.VfsToolError) as e:
            vfs_tool.connect_fds(self.to_tool_r, self.from_tool_w)
        self.assertEqual(e.exception.status, jptool.JPT_ERR_IO)
        self.assertIn("before sending init", e.exception.message)

    def test_the_first_message_must_be_init(self):
        self.send(result(1, {}))
        with self.assertRaises(vfs_tool.VfsToolError) as e:
            vfs_tool.connect_fds(self.to_tool_r, self.from_tool_w)
        self.assertEqual(e.exception.status, jptool.JPT_ERR_PROTOCOL)
        self.assertIn("first message is not init", e.exception.message)
        self.send({"jsonrpc": "2.0", "method": "init", "params": {"tool": {}}})
        with self.assertRaises(vfs_tool.VfsToolError) as e:
            vfs_tool.connect_fds(self.to_tool_r, self.from_tool_w)
        self.assertIn("params.tool.name", e.exception.message)

    def test_limits(self):
        t = self.connect(result(1, {"exists": True}), max_message=200, max_request=300)
        with self.assertRaises(vfs_tool.VfsToolError) as e:
            t.write("big", "x" * 400)
        self.assertEqual(e.exception.status, jptool.JPT_ERR_LIMIT)
        self.assertIn("more than the 300 a message to the host may have", e.exception.message)
        self.assertTrue(t.exists("x"))  # id 1: the refused request took none
        self.send(result(2, {"content": "y" * 300}))
        with self.assertRaises(vfs_tool.VfsToolError) as e:
            t.read("long")
        self.assertEqual(e.exception.status, jptool.JPT_ERR_LIMIT)
        self.assertIn("longer than the limit of 200 bytes", e.exception.message)

    def test_arguments_that_cannot_be_sent(self):
        t = self.connect()
        with self.assertRaises(ValueError):
            t.read("bad\udcffpath")
        with self.assertRaises(ValueError):
            t.read(b"\xff")
        with self.assertRaises(TypeError):
            t.call("fs.x", {"v": object()})
        with self.assertRaises(TypeError):
            t.write("p", 12)
        self.assertEqual(self.sent(), [])

    def test_close_restores_the_fds_flags(self):
        self.assertFalse(os.get_blocking(self.to_tool_r) is False)
        t = self.connect()
        self.assertFalse(os.get_blocking(self.to_tool_r))
        t.close()
        t.close()
        self.assertTrue(os.get_blocking(self.to_tool_r))
        self.assertTrue(os.get_blocking(self.from_tool_w))
        with self.assertRaises(ValueError):
            t.exists("x")

    def test_large_messages_both_ways_do_not_deadlock(self):
        big = "y" * (4 << 20)
        requests = []

        def host():
            # Answers the first request with 4 MiB before it reads the next,
            # a 4 MiB request: the tool must read the answer while it is
            # still writing.
            os.set_blocking(self.from_tool_r, True)
            with os.fdopen(os.dup(self.from_tool_r), "rb") as f:
                requests.append(json.loads(f.readline()))
                self.write_now(result(1, {"echo": big}))
                requests.append(json.loads(f.readline()))
                self.write_now(result(2, {}))

        t = self.connect()
        thread = threading.Thread(target=host)
        thread.start()
        try:
            first = t.submit("fs.small", {})
            second = t.submit("fs.big", {"data": big})
            self.assertEqual(t.collect(second), {})
            self.assertEqual(t.collect(first), {"echo": big})
        finally:
            thread.join(WAIT)
        self.assertEqual([r["method"] for r in requests], ["fs.small", "fs.big"])
        self.assertEqual(len(requests[1]["params"]["data"]), 4 << 20)


class StdioTest(unittest.TestCase):
    def test_connect_moves_stdout_to_stderr_and_stdin_to_dev_null(self):
        script = (
            "import os, sys\n"
            "from jptool import vfs_tool\n"
            "host = vfs_tool.connect()\n"
            "print('a stray print')\n"
            "os.system('echo from a child')\n"
            "host.result_text(repr(sys.stdin.read()))\n")
        child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = child.communicate(line(INIT) + line({"jsonrpc": "2.0", "method": "news"}),
                                     timeout=WAIT)
        self.assertEqual(child.returncode, 0, err)
        self.assertEqual([json.loads(x) for x in out.splitlines()], [
            {"jsonrpc": "2.0", "method": "result", "params": {"content": "''"}}])
        self.assertIn(b"a stray print\n", err)
        self.assertIn(b"from a child\n", err)


class StandaloneTest(HostTestCase):
    def test_vfs_tool_py_works_without_the_package_or_the_library(self):
        argv = probe_argv(VFS_PROBE_STANDALONE="1",
                          PYTHONPATH=os.path.join(PACKAGE_DIR, "jptool"),
                          JPTOOL_LIBRARY="/nonexistent/libjptool.so")
        h = self.host()
        h.spawn(argv, {"name": "alone", "arguments": {
            "steps": [["read_text", "a.txt"], ["read", "missing"]]}})
        self.assertTrue(h.run(WAIT_MS))
        with h.state() as s:
            self.assertFalse(s.is_error, s.blocks)
            report = json.loads(s.blocks[0]["text"])
        self.assertTrue(report["standalone"])
        self.assertEqual(report["steps"][0], {"ok": "hello\n"})
        self.assertEqual(report["steps"][1]["error"][:2], [NOT_FOUND, jptool.JPT_VFS_E_NOT_FOUND])


# ---- The binding against vfs.h and vfs_tool.h --------------------------------------------


def header(path):
    with open(path) as f:
        return f.read()


class VfsBindingTest(unittest.TestCase):
    def test_every_function_of_vfs_h_has_a_prototype(self):
        names = re.findall(r"JPT_EXPORT\s[^;(]*?\b(jpt_\w+)\s*\(", header(VFS_H))
        self.assertEqual(len(names), 45, names)
        for name in names:
            self.assertIn(name, jptool._lib._PROTOTYPES, name)
            fn = getattr(jptool._lib.lib, name)
            self.assertEqual(tuple(fn.argtypes), tuple(jptool._lib._PROTOTYPES[name][1]), name)
            self.assertEqual(fn.restype, jptool._lib._PROTOTYPES[name][0], name)

    def test_constants_match_the_headers(self):
        defines = re.findall(r"#define (JPT_\w+) (-?\d+|0x[0-9a-f]+)u?\b", header(VFS_H))
        # Every one but those that are expressions and
        # JPT_VFS_PROTOCOL_VERSION (a string), checked below.
        self.assertEqual(len(defines), 57, defines)
        for name, value in defines:
            self.assertEqual(getattr(jptool, name), int(value, 0), name)
            self.assertIn(name, jptool.__all__)
        self.assertEqual(jptool.JPT_FILES_READ_LIMIT, 10 * 1000 * 1000)
        shifts = re.findall(r"#define (JPT_VFS_\w+) \((\d+)u << (\d+)\)", header(VFS_H))
        self.assertEqual(len(shifts), 4, shifts)
        for name, value, shift in shifts:
            self.assertEqual(getattr(jptool, name), int(value) << int(shift), name)
            self.assertIn(name, jptool.__all__)
        self.assertIn("#define JPT_VFS_GREP_RESULT_LIMIT JPT_VFS_CONTENT_LIMIT", header(VFS_H))
        self.assertEqual(jptool.JPT_VFS_GREP_RESULT_LIMIT, jptool.JPT_VFS_CONTENT_LIMIT)
        self.assertIn('#define JPT_VFS_PROTOCOL_VERSION "%s"' % jptool.JPT_VFS_PROTOCOL_VERSION,
                      header(VFS_H))
        for name in vfs_tool.__all__:
            if name.startswith("JPT_"):
                self.assertEqual(getattr(vfs_tool, name),
                                 getattr(jptool, name, None) or int(re.search(
                                     r"#define %s \(?(-?\d+)\)?" % name,
                                     header(VFS_TOOL_H))[1]),
                                 name)

    def test_options_struct_matches_the_header(self):
        text = header(VFS_H)
        body = text[text.index("typedef struct jpt_vfs_host_options {"):]
        body = body[:body.index("} jpt_vfs_host_options;")]
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        fields = re.findall(r"\b(\w+);", body)
        self.assertEqual([f[0] for f in jptool._lib._VfsHostOptions._fields_], fields)
        # The library reads the sandbox fields where the binding writes them.
        size = ctypes.sizeof(jptool._lib._VfsHostOptions)
        relative = (ctypes.c_char_p * 2)(b"relative/lib", None)
        for opts in (jptool._lib._VfsHostOptions(size=size, sandbox_mode=4),
                     jptool._lib._VfsHostOptions(size=size, sandbox_read=relative)):
            out = jptool._lib._VfsHostPtr()
            self.assertEqual(jptool._lib.lib.jpt_vfs_host_new(ctypes.byref(opts), ctypes.byref(out)),
                             INVALID)
            self.assertFalse(out)

    def test_python_tool_read_paths(self):
        paths = jptool.python_tool_read_paths()
        self.assertEqual(len(set(paths)), len(paths), paths)
        for p in paths:
            self.assertEqual(p, os.path.realpath(p))
            self.assertFalse([q for q in paths if p.startswith(q.rstrip(os.sep) + os.sep)],
                             f"{p} is beneath another path of {paths}")

        def covered(path):
            path = os.path.realpath(path)
            return any(path == p or path.startswith(p.rstrip(os.sep) + os.sep) for p in paths)

        for needed in (sys.executable, sys.base_prefix, sys.prefix, jptool.__file__):
            self.assertTrue(covered(needed), f"{needed} is not in {paths}")
        if os.sep in jptool.library_path:
            self.assertTrue(covered(jptool.library_path), jptool.library_path)

    def test_python_tool_read_paths_never_grant_the_workspace_an_ancestor_or_home(self):
        # An agent that keeps jptool/ in its project (issue 15 §4): the
        # package's sys.path entry is the workspace itself.
        with tempfile.TemporaryDirectory() as tmp:
            ws = os.path.realpath(tmp)
            package = os.path.join(ws, "jptool")
            shutil.copytree(os.path.dirname(os.path.realpath(jptool.__file__)), package,
                            ignore=shutil.ignore_patterns("__pycache__"))
            with open(os.path.join(ws, ".env"), "w") as f:
                f.write("API_KEY=sk-workspace-secret\n")
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": ws,
                   "JPTOOL_LIBRARY": os.path.realpath(jptool.library_path)
                   if os.sep in jptool.library_path else jptool.library_path}

            def read_paths(args):
                out = subprocess.run(
                    [sys.executable, "-c",
                     f"import json, jptool; print(json.dumps(jptool.python_tool_read_paths({args})))"],
                    cwd=ws, env=env, capture_output=True, text=True, timeout=WAIT, check=True)
                return json.loads(out.stdout)

            home = os.path.realpath(os.path.expanduser("~"))

            def assert_keeps_out(paths, kept):
                for p in paths:
                    for k in (kept, home):
                        self.assertFalse(k == p or k.startswith(p.rstrip(os.sep) + os.sep),
                                         f"{p} is {k} or holds it: {paths}")

            # The workspace is the current directory, or named.
            by_cwd = read_paths("")
            assert_keeps_out(by_cwd, ws)
            self.assertIn(package, by_cwd)
            assert_keeps_out(read_paths(repr(os.path.dirname(ws))), os.path.dirname(ws))
            if SANDBOX_LACKING is not None:
                return
            # A tool granted them does not open the workspace's .env.
            with VfsHost(root=ws, sandbox_read=by_cwd) as h:
                h.spawn([sys.executable, "-c", f"print(open({os.path.join(ws, '.env')!r}).read())"],
                        {"name": "reader"})
                self.assertTrue(h.run(WAIT_MS))
                with h.state() as st:
                    self.assertTrue(st.is_error)
                    self.assertIn("PermissionError", st.error_message)
                    self.assertNotIn("sk-workspace-secret", st.error_message)

    def test_null_arguments_are_refused(self):
        lib = jptool._lib.lib
        self.assertEqual(lib.jpt_vfs_host_new(None, None), INVALID)
        self.assertEqual(lib.jpt_vfs_host_get_fd(None), INVALID)
        self.assertEqual(lib.jpt_vfs_host_done(None), 0)
        self.assertEqual(lib.jpt_vfs_host_errmsg(None), b"")
        self.assertEqual(lib.jpt_policy_request_answer(None, 0, None), INVALID)
        self.assertIsNone(lib.jpt_policy_request_tool(None))
        lib.jpt_vfs_host_free(None)
        self.assertEqual(lib.jpt_registry_add_files(None, b"x", None), INVALID)
        lib.jpt_registry_set_policy_handler(None, jptool._lib._PolicyFn(), None)


if __name__ == "__main__":
    unittest.main()
