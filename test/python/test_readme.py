"""Tests that README.md's examples do what it says, so that the first
thing a user reads cannot drift from what jptool does.

- "Defining a tool": examples/stdio-tools.json is in the README verbatim;
  each call of the README's calls block runs the argv, and gives the
  result, that the block shows (the argv seen by a probe put in front of
  each command); and the section's other statements (placeholders,
  missing arguments, stdin, stateful tools, the shell advice).
- "VFS tools in Python": the README's tool (upcase.py) and host, run as
  they are but for the tools' directory, from a build tree (PYTHONPATH
  and JPTOOL_LIBRARY set by hand), under `meson devenv`, and installed
  (the package in a virtual environment's site-packages; see
  InstalledTest for the one stand-in).

Run by `meson test` (suite "python") with the environment of
test_jptool.py. Standard library only; every wait is bounded.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

import jptool
from jptool import JptError, Registry

from test_jptool import WAIT_MS, children_in_proc

SOURCE_ROOT = os.environ["JPT_SOURCE_ROOT"]
BUILD_ROOT = os.environ["JPT_BUILD_ROOT"]
MESON = os.environ["MESON"]
LIBRARY = os.environ["JPTOOL_LIBRARY"]
PACKAGE_DIR = os.path.join(SOURCE_ROOT, "bindings", "python")
README = os.path.join(SOURCE_ROOT, "README.md")
STDIO_TOOLS = os.path.join(SOURCE_ROOT, "examples", "stdio-tools.json")

# notes.txt as the README's calls block describes it: three lines, the
# second "TODO: fix the tests".
NOTES = "Buy milk\nTODO: fix the tests\nCall Ada\n"


def readme():
    with open(README) as f:
        return f.read()


def block_after(marker):
    """The text of the fenced block that follows the HTML comment
    beginning with `marker`."""
    text = readme()
    at = text.find("<!-- " + marker)
    if at < 0:
        raise AssertionError(f"README.md has no comment <!-- {marker}")
    m = re.compile(r"-->\n```[a-z]*\n(.*?)^```\n", re.S | re.M).match(text, text.index("-->", at))
    if m is None:
        raise AssertionError(f"no fenced block right after <!-- {marker}")
    return m.group(1)


def load_stdio_tools():
    with open(STDIO_TOOLS) as f:
        return json.load(f)


class Call:
    """One call of the README's calls block: the tool and its arguments,
    the argv shown after `$`, the stdin shown after `<` (or None), and the
    result's lines."""

    def __init__(self, entry):
        head, *rest = entry.splitlines()
        self.name, arguments = head.split(" ", 1)
        self.arguments = json.loads(arguments)
        self.argv = self.stdin = None
        result = []
        for line in rest:
            if not line.startswith("  "):
                raise AssertionError(f"a line of {self.name}'s entry is not indented: {line!r}")
            line = line[2:]
            if line.startswith("$ "):
                self.argv = line[2:]
            elif line.startswith("< "):
                self.stdin = line[2:]
            else:
                result.append(line)
        self.result = "".join(line + "\n" for line in result)

    def __repr__(self):
        return f"{self.name} {json.dumps(self.arguments)}"


def readme_calls():
    block = block_after("calls:")
    return [Call(entry) for entry in block.strip("\n").split("\n\n")]


# What the probe put in front of a command prints: the argv after it and
# its stdin.
PROBE = ("import json, sys; "
         "print(json.dumps({'argv': sys.argv[1:], 'stdin': sys.stdin.read()}))")


def probed(config):
    """The tools of `config`, each command behind the probe."""
    tools = json.loads(json.dumps(config))
    for t in tools["tools"]:
        t["command"] = [sys.executable, "-c", PROBE] + t["command"]
        t.pop("stateful", None)
    return tools


def shown(argv):
    """An argv as the README shows it: shell-quoted, a python3 -c script as
    SCRIPT."""
    argv = list(argv)
    if argv[:2] == ["python3", "-c"] and len(argv) > 2:
        argv[2] = "SCRIPT"
    return shlex.join(argv)


class WorkspaceTestCase(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="jpt-readme-")
        self.addCleanup(tmp.cleanup)
        self.root = tmp.name
        with open(os.path.join(self.root, "notes.txt"), "w") as f:
            f.write(NOTES)
        self.r = Registry(root=self.root, kill_grace_ms=500)
        self.addCleanup(self.check_children)
        self.addCleanup(self.r.close)

    def check_children(self):
        self.assertEqual(children_in_proc(), [])

    def call(self, name, arguments):
        return self.r.call(name, arguments, timeout_ms=WAIT_MS)


class StdioToolsTest(WorkspaceTestCase):
    """README.md, "Defining a tool: how a stdio tool gets its arguments"."""

    def test_the_readme_shows_examples_stdio_tools_json_verbatim(self):
        with open(STDIO_TOOLS) as f:
            self.assertEqual(block_after("examples/stdio-tools.json"), f.read())

    def test_every_tool_of_the_file_is_in_the_calls_block(self):
        names = [t["name"] for t in load_stdio_tools()["tools"]]
        self.assertEqual(sorted({c.name for c in readme_calls()}), sorted(names))

    def test_each_call_gives_the_result_the_readme_shows(self):
        self.r.load_tools(load_stdio_tools())
        for c in readme_calls():
            with self.subTest(call=c):
                self.assertEqual(self.call(c.name, c.arguments), (c.result, False))

    def test_each_call_runs_the_argv_and_stdin_the_readme_shows(self):
        self.r.load_tools(probed(load_stdio_tools()))
        for c in readme_calls():
            with self.subTest(call=c):
                content, is_error = self.call(c.name, c.arguments)
                self.assertFalse(is_error, content)
                seen = json.loads(content)
                self.assertEqual(shown(seen["argv"]), c.argv)
                self.assertEqual(seen["stdin"], "" if c.stdin is None else c.stdin + "\n")

    def probe(self, definition, arguments, **call):
        """Loads `definition` behind the probe and calls it: what its
        command became, and its stdin."""
        self.r.load_tools(probed({"tools": [definition]}), replace=True)
        content, is_error = self.call(definition["name"], arguments)
        self.assertFalse(is_error, content)
        return json.loads(content)

    def test_scalars_as_they_are_composites_as_json(self):
        got = self.probe(
            {"name": "show", "command": [
                "{{arguments.s}}", "{{arguments.i}}", "{{arguments.r}}", "{{arguments.big}}",
                "{{arguments.whole}}", "{{arguments.yes}}", "{{arguments.no}}",
                "{{arguments.o}}", "{{arguments.o.k}}", "{{arguments.a}}",
                "--n={{ arguments.i }}!"]},
            {"s": "a b\n'q' \"$HOME\"", "i": 42, "r": 0.2, "big": 1e22, "whole": 100.0,
             "yes": True, "no": False, "o": {"k": [1, 2.5, 3]}, "a": []})
        self.assertEqual(got["argv"], ["a b\n'q' \"$HOME\"", "42", "0.2", "1e+22", "100.0",
                                       "true", "false", '{"k":[1,2.5,3]}', "[1,2.5,3]", "[]",
                                       "--n=42!"])

    def test_tool_and_context(self):
        got = self.probe({"name": "t", "options": {"verbose": True},
                          "command": ["{{tool}}", "{{context}}"]}, {"x": 1})
        self.assertEqual([json.loads(a) for a in got["argv"]], [
            {"name": "t", "arguments": {"x": 1}, "answers": {}, "options": {"verbose": True}},
            {"action": "run", "root": self.root}])

    def test_a_missing_argument_fails_the_call_as_the_readme_says(self):
        text = " ".join(readme().split())
        said = re.search(r"with an error result: `` (.*?) ``", text).group(1)
        self.r.load_tools({"tools": [
            {"name": "greet", "command": ["echo", "{{arguments.greeting}}", "{{arguments.name}}"],
             "parameters": {"type": "object",
                            "properties": {"name": {"type": "string"},
                                           "greeting": {"type": "string",
                                                        "default": "Hello"}},
                            "required": ["name"]}}]})
        # Left out, or null (absent); the schema's default is not filled in.
        for arguments in ({"name": "Ada"}, {"name": "Ada", "greeting": None}):
            with self.subTest(arguments=arguments):
                self.assertEqual(self.call("greet", arguments), (said, True))
        self.assertEqual(self.call("greet", {"name": "Ada", "greeting": "Hi"}),
                         ("Hi Ada\n", False))

    def test_arguments_that_do_not_fit_the_schema_run_nothing(self):
        self.r.load_tools(load_stdio_tools())
        content, is_error = self.call("count_lines", {"path": 3})
        self.assertTrue(is_error)
        self.assertTrue(content.startswith("Invalid arguments for `count_lines`"), content)

    def test_an_unknown_or_unclosed_placeholder_is_refused_at_load(self):
        for command, why in ((["echo", "{{args.x}}"], "unknown placeholder '{{args.x}}'"),
                             (["awk", "{{print}"], "unterminated '{{'")):
            with self.subTest(command=command):
                with self.assertRaises(JptError) as cm:
                    self.r.load_tools({"tools": [{"name": "bad", "command": command}]})
                self.assertIn(why, cm.exception.message)

    def test_a_stateful_tool_is_expanded_by_spawn_and_reads_stdin_after_the_line(self):
        self.r.load_tools({"tools": [
            {"name": "job", "stateful": True, "stdin": True,
             "parameters": {"type": "object", "properties": {"what": {"type": "string"}}},
             "command": ["sh", "-c", 'read call; echo "$1 $2 $call"; read more; echo "$more"',
                         "sh", "{{arguments.what}}", "{{context}}"]}]})
        content, is_error = self.call("job", {"action": "spawn", "id": "j", "what": "build",
                                              "wait_secs": 5})
        self.assertFalse(is_error, content)
        context = json.dumps({"action": "spawn", "root": self.root}, separators=(",", ":"))
        tool = json.dumps({"name": "job", "arguments": {"what": "build"}, "answers": {},
                           "options": {}}, separators=(",", ":"))
        self.assertEqual(json.loads(content), {"id": "j", "state": "running",
                                               "content": f"build {context} {tool}\n"})
        content, _ = self.call("job", {"action": "apply", "id": "j", "input": "more\n",
                                       "wait_secs": 5})
        # Stopped, or not yet seen to stop: what it printed either way.
        answer = json.loads(content)
        self.assertTrue(answer.get("result", answer.get("content", "")).startswith("more\n"),
                        content)

    def test_the_shell_advice_keeps_the_models_text_out_of_the_script(self):
        text = " ".join(readme().split())
        command = json.loads(re.search(r"instead: `(\[\"sh\", \"-c\", .*?\])`", text)
                             .group(1))
        self.r.load_tools({"tools": [{"name": "note", "command": command}]})
        hostile = "$(touch pwned) `touch pwned` \\n; touch pwned"
        self.assertEqual(self.call("note", {"text": hostile}), ("", False))
        with open(os.path.join(self.root, "notes.txt")) as f:
            self.assertEqual(f.read(), NOTES + hostile + "\n")
        self.assertFalse(os.path.exists(os.path.join(self.root, "pwned")))


# ---- VFS tools in Python ---------------------------------------------------------------


def os_sandbox_lacking():
    """None where this system enforces a VFS tool's OS sandbox in the
    default mode (the README's host uses it), else what it lacks."""
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
needs_sandbox = unittest.skipIf(SANDBOX_LACKING is not None,
                                f"this system cannot enforce the OS sandbox, which the "
                                f"README's host requires: {SANDBOX_LACKING}")

# The variables that choose a package or a library.
CHOOSING = ("JPTOOL_LIBRARY", "JPTOOL_BUILD_LIBRARY", "LD_LIBRARY_PATH", "PYTHONPATH",
            "MESON_DEVENV", "PYTHONHOME")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in CHOOSING}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


@needs_sandbox
class PythonVfsToolTest(unittest.TestCase):
    """README.md, "VFS tools in Python": the tool and the host as the
    README gives them; the host's policy handler asks on stdin, which
    says y."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="jpt-readme-vfs-")
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name
        self.tools = os.path.join(self.tmp, "tools")
        self.workspace = os.path.join(self.tmp, "workspace")
        os.mkdir(self.tools)
        os.mkdir(self.workspace)
        with open(os.path.join(self.tools, "upcase.py"), "w") as f:
            f.write(block_after("upcase.py:"))
        host = block_after("the host:")
        line = 'TOOLS = "/opt/my-agent/tools"'
        self.assertEqual(host.count(line), 1, host)
        self.host = os.path.join(self.tmp, "host.py")
        with open(self.host, "w") as f:
            f.write(host.replace(line, f"TOOLS = {self.tools!r}"))
        with open(os.path.join(self.workspace, "notes.txt"), "w") as f:
            f.write("some notes\n")

    def run_host(self, argv, env):
        p = subprocess.run(argv, env=env, cwd=self.workspace, input="y\n", text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=WAIT_MS / 1000 * 3)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("upcase wants fs.write 'notes.txt'", p.stdout)
        # The last line: input()'s prompt, then what the host prints.
        self.assertEqual(p.stdout.splitlines()[-1].split("] ")[-1],
                         "('Upcased notes.txt.', False)", p.stdout + p.stderr)
        with open(os.path.join(self.workspace, "notes.txt")) as f:
            self.assertEqual(f.read(), "SOME NOTES\n")

    def test_from_a_build_tree(self):
        self.run_host([sys.executable, self.host],
                      clean_env(PYTHONPATH=PACKAGE_DIR, JPTOOL_LIBRARY=LIBRARY))

    def test_under_meson_devenv(self):
        self.run_host([MESON, "devenv", "-C", BUILD_ROOT, "-w", self.workspace,
                       sys.executable, self.host], clean_env())

    def test_installed(self):
        """The package copied into a virtual environment's site-packages,
        as pip installs it; the library found through the dynamic loader by
        its soname. The one stand-in: an installed libjptool is in a
        directory the loader searches by itself (under /usr, which the
        sandbox lets a tool read), while the build's is found through
        LD_LIBRARY_PATH, which the host has and the tool is given on top of
        what python_tool_env() gives (which must be nothing)."""
        venv = os.path.join(self.tmp, "venv")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True,
                       timeout=WAIT_MS / 1000)
        python = os.path.join(venv, "bin", "python")
        site = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True, stdout=subprocess.PIPE, text=True, env=clean_env()).stdout.strip()
        shutil.copytree(os.path.join(PACKAGE_DIR, "jptool"), os.path.join(site, "jptool"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        libdir = os.path.dirname(LIBRARY)
        launcher = os.path.join(self.tmp, "installed.py")
        with open(launcher, "w") as f:
            f.write(
                "import json, sys\n"
                "import jptool\n"
                "assert jptool.__file__.startswith(sys.prefix), jptool.__file__\n"
                "assert jptool.library_path == 'libjptool.so.0', jptool.library_path\n"
                "env = jptool.python_tool_env()\n"
                "assert env == {}, env\n"
                f"LIBDIR = {libdir!r}\n"
                "read = jptool.python_tool_read_paths\n"
                "jptool.python_tool_env = lambda: {'LD_LIBRARY_PATH': LIBDIR}\n"
                "jptool.python_tool_read_paths = lambda: read() + [LIBDIR]\n"
                f"sys.argv = [{self.host!r}]\n"
                f"exec(compile(open({self.host!r}).read(), {self.host!r}, 'exec'))\n")
        self.run_host([python, launcher], clean_env(LD_LIBRARY_PATH=libdir))


class PythonToolEnvTest(unittest.TestCase):
    def test_from_a_build_tree_it_names_the_package_and_the_library(self):
        self.assertEqual(jptool.python_tool_env(),
                         {"PYTHONPATH": PACKAGE_DIR, "JPTOOL_LIBRARY": LIBRARY})

    def test_under_meson_devenv_it_names_what_devenv_found(self):
        show = "import jptool, json; print(json.dumps(jptool.python_tool_env()))"
        p = subprocess.run([MESON, "devenv", "-C", BUILD_ROOT, sys.executable, "-c", show],
                           env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=WAIT_MS / 1000)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = json.loads(p.stdout)
        self.assertEqual(got["PYTHONPATH"], PACKAGE_DIR)
        self.assertEqual(os.path.realpath(got["JPTOOL_LIBRARY"]), os.path.realpath(LIBRARY))
        self.assertEqual(sorted(got), ["JPTOOL_LIBRARY", "PYTHONPATH"])

    def test_the_import_error_names_it(self):
        p = subprocess.run([sys.executable, "-c", "import jptool"],
                           env=clean_env(PYTHONPATH=PACKAGE_DIR,
                                         JPTOOL_LIBRARY="/nonexistent/libjptool.so.0"),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=WAIT_MS / 1000)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("A VFS tool gets only PATH and the variables its definition passes: "
                      "pass it jptool.python_tool_env().", p.stderr)


if __name__ == "__main__":
    unittest.main()
