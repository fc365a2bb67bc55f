"""jptool from Python: a ctypes binding of libjptool's state, registry and VFS API.

This package binds the C API of ``include/jptool/common.h``,
``include/jptool/state.h``, ``include/jptool/registry.h`` and
``include/jptool/vfs.h`` with nothing but the standard library (Python 3.9
or later); :mod:`jptool.aio` drives a registry or a VFS host from a running
asyncio loop, and :mod:`jptool.vfs_tool` is the tool side of the VFS
protocol in pure Python (what ``include/jptool/vfs_tool.h`` offers C). It
follows the library's own
rules: JSON crosses the boundary as text (this module serialises Python
objects with ``json.dumps`` and parses what comes back with ``json.loads``),
objects are opaque (a :class:`State` wraps a ``jpt_state *``, a
:class:`Registry` a ``jpt_registry *``), and every failure is a status code
(raised here as :class:`JptError`).

The registry (RFD 009): :class:`Registry` loads tool definitions, runs the
tool calls of a model message as a :class:`Batch` of real processes, and is
driven by :meth:`Registry.wait` / :meth:`Registry.run` or from the host's own
loop (:meth:`Registry.fileno`, :meth:`Registry.timeout`,
:meth:`Registry.dispatch`, e.g. with ``selectors``); :meth:`Registry.events`
pops its events as dicts. Questions of one-shot tools reach a Python handler
as :class:`Inquiry` objects. RFD 037: a batch may spawn stateful handles and
``await`` them (the tool the registry lists once a stateful tool exists) in
the same submit; :meth:`Batch.cancel` stops a batch's calls still in flight
(a host's Ctrl+C); :meth:`Registry.take_notifications` takes what handles
nobody watched did meanwhile; :meth:`Registry.end_turn` applies each
handle's turn-end policy and returns the results as a batch; a stateful
handle asking while awaited, and the turn end itself, ask through the same
inquiry handler (:attr:`Inquiry.handle_id`). Builtin tools
(``jpt_registry_add_builtin``) are bound too: :meth:`Registry.add_builtin`
takes Python callbacks, which the registry keeps alive until it is closed,
and hands them :class:`Handle` objects. The library frees a handle without
telling the host, so a Handle tracks each event after which the C handle may
be gone (a stopped state reported, the abort callback returned, a failed
start, a one-shot handle that reported a question, the registry closed) and
refuses use afterwards instead of touching freed memory; see :class:`Handle`.
``jpt_handle_set_userdata`` and ``jpt_handle_get_userdata`` are declared but
not wrapped (a Python host keeps per-handle data in a dict keyed by tool and
id).

Callbacks and exceptions: builtin callbacks and the inquiry handler run
inside the registry's own calls: :meth:`Registry.dispatch`,
:meth:`Registry.run`, :meth:`Registry.wait`, :meth:`Registry.call`,
:meth:`Registry.close` (abort callbacks of live builtin handles), and the
calls a callback itself makes. An exception cannot cross the C library: it
is kept and raised again when the outermost of those calls returns (a
builtin callback then returns JPT_ERR_INVALID to the library; an inquiry
left unanswered by a failing handler is cancelled). Closing a registry from
inside one of its callbacks raises RuntimeError.

Loading: the library is the first of these that names one: the file named by
the environment variable ``JPTOOL_LIBRARY``; the build tree's library when
run under ``meson devenv -C <build directory>`` (jptool's meson.build sets
``JPTOOL_BUILD_LIBRARY`` there, and ``PYTHONPATH`` to this package's source);
the installed ``libjptool.so.0``, through the dynamic loader's search path.
A library named but not loadable makes the import fail (it does not fall
back on another place, which could hold another version); the ImportError
lists each place, in order, with what it gave. :data:`library_path` says
which was loaded.

VFS tools (vfs.h, D11): a VFS tool is a process that touches files only
through JSON-RPC requests to its host, each checked against an access
policy. :class:`Files` is a ProjectFiles backend (a directory confined
beneath its root, memory, or methods a Python handler serves as
:class:`FilesRequest` objects). :class:`Policy` is a tool's policy built
from its ``sandbox`` section; :meth:`Policy.check` gives a request's verdict
(``JPT_VERDICT_ALLOW`` / ``_DENY`` / ``_ASK``) and the reason the tool is
told; :func:`normalize_path` gives a requested path the form a check takes.
:class:`VfsHost` serves one tool from the host's own loop, without a
registry; in a registry, ``"runtime": "vfs"`` definitions run the same
engine, choosing a backend added with :meth:`Registry.add_files`. A request
the policy asks about reaches the policy handler
(:meth:`VfsHost.set_policy_handler`, :meth:`Registry.set_policy_handler`)
as a :class:`PolicyRequest`, answered at once or later. A tool process
runs in the OS sandbox (vfs.h; :class:`VfsHost` says what it may do, and
the options that choose its mode and what else it may read):
:func:`python_tool_read_paths` names what a tool written in Python needs
to read. vfs_tool.h's functions are not bound: a Python tool uses
:mod:`jptool.vfs_tool`, which needs neither ctypes nor the library.

Strings: Python ``str`` arguments are encoded as UTF-8 (with
``surrogateescape``, so text decoded by this module round-trips to the same
bytes); ``bytes`` are passed as they are. A string holding a NUL character
cannot cross a C string argument and raises ``ValueError``. Text that the
library returns is decoded from UTF-8 with ``errors="surrogateescape"``: a tool
output holding invalid UTF-8 keeps its exact bytes, which
``s.encode("utf-8", "surrogateescape")`` gives back.

Memory: strings the library hands over through a ``char **out`` parameter are
read with ``ctypes.string_at`` and freed with ``jpt_free`` at once; strings a
state owns are copied before the state can go away. A :class:`State` drops its
reference on :meth:`State.close`, at the end of a ``with`` block, or when it
is garbage collected.

Not bound: ``jpt_set_allocator``. Its prototype is declared (so every function
of the headers has its argument and result types), but no wrapper is
offered: an allocator written in Python would be called, with the GIL, for
every allocation the library and jansson make, and it could only forward to
the C library's malloc anyway. Python hosts use the default allocator.

Constants (the C names and values): the status codes ``JPT_OK`` and
``JPT_ERR_*``; the log levels ``JPT_LOG_*``; the state kinds
``JPT_STATE_RUNNING``, ``JPT_STATE_WAITING``, ``JPT_STATE_STOPPED``; the block
types ``JPT_BLOCK_*``; the block field ids ``JPT_FIELD_*``; the JSON forms
``JPT_JSON_ENVELOPE``, ``JPT_JSON_TOOL_STATE``, ``JPT_JSON_OUTCOME``; the
flags ``JPT_PARSE_RAW`` and ``JPT_JSON_PRETTY``; the deepest JSON the
library reads, ``JPT_JSON_MAX_DEPTH``; ``JPT_LOAD_REPLACE``; the
tool list dialects ``JPT_DIALECT_OPENAI``, ``JPT_DIALECT_ANTHROPIC``,
``JPT_DIALECT_GEMINI``, ``JPT_DIALECT_MCP``, ``JPT_DIALECT_OPENAI_RESPONSES``,
the flags ``JPT_DIALECT_FLAT``, ``JPT_DIALECT_ONEOF`` and
``JPT_DIALECT_STRICT``, and ``JPT_DIALECT_AS_CALLED`` for results; the events
``JPT_EVENT_CALL_DONE``, ``JPT_EVENT_BATCH_DONE``, ``JPT_EVENT_OUTPUT``,
``JPT_EVENT_STATE``, ``JPT_EVENT_SHUTDOWN``; the question targets
``JPT_TARGET_USER`` and ``JPT_TARGET_ASSISTANT``; the turn-end flags
``JPT_TURN_KEEP`` and ``JPT_TURN_ABORT``; the registry flag
``JPT_REGISTRY_KEEP_SPOOL``; the containment modes ``JPT_CONTAIN_AUTO``,
``JPT_CONTAIN_CGROUP``, ``JPT_CONTAIN_SUBREAPER``, ``JPT_CONTAIN_SESSION``;
vfs.h's ``JPT_FILES_*`` (flags, kinds and limits), ``JPT_ACCESS_*``,
``JPT_VERDICT_*``, ``JPT_DECISION_DENY``, ``JPT_DECISION_ALLOW``,
``JPT_DECISION_ALLOW_ALWAYS``, ``JPT_VFS_PROTOCOL_VERSION``,
``JPT_VFS_CONTENT_LIMIT``, ``JPT_VFS_ENVELOPE_LIMIT``, the bounds on what
a tool makes the host hold (``JPT_VFS_MAX_REQUESTS``,
``JPT_VFS_MAX_REQUEST_BYTES``, ``JPT_VFS_ANSWER_BUDGET``,
``JPT_VFS_REQUEST_OVERHEAD``, ``JPT_VFS_GREP_RESULT_LIMIT``,
``JPT_VFS_GREP_LINE_LIMIT``, ``JPT_VFS_GREP_NEST_LIMIT``,
``JPT_VFS_HTTP_MAX_ACTIVE``), the protocol's
JSON-RPC error codes ``JPT_VFS_E_*``, process.run's limits
``JPT_VFS_PROCESS_*``, the OS sandbox's modes ``JPT_SANDBOX_DEFAULT``,
``JPT_SANDBOX_REQUIRED``, ``JPT_SANDBOX_BEST_EFFORT``, ``JPT_SANDBOX_OFF``
and what it enforced, ``JPT_SANDBOX_ENFORCED_*``.

Threading: as in C, a state is used from one thread at a time until it is
shared (:meth:`State.ref`); :func:`set_log` is meant to be called once, before
anything else. A registry and everything it hands out are used from one
thread at a time, which must outlive its handles (children die with the
thread that spawned them); :meth:`Registry.wakeup` is the one method another
thread may call. The blocking calls (:meth:`Registry.run`,
:meth:`Registry.wait`, :meth:`VfsHost.run`) release the GIL while they
poll. A VFS host, its files backend and the policy and files requests it
hands out are used from the host's thread (requests may be answered later,
from that thread).
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import json
import os
import sys
import traceback
import weakref
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union

__all__ = [
    "JptError",
    "State",
    "Registry",
    "Batch",
    "Inquiry",
    "Handle",
    "reap_stale",
    "version",
    "strerror",
    "status_name",
    "uri_canonicalize",
    "mime_fence_lang",
    "schema_check",
    "Policy",
    "normalize_path",
    "python_tool_read_paths",
    "set_log",
    "library_path",
    # constants
    "JPT_OK",
    "JPT_ERR_INVALID",
    "JPT_ERR_NOMEM",
    "JPT_ERR_NOT_FOUND",
    "JPT_ERR_EXISTS",
    "JPT_ERR_STATE",
    "JPT_ERR_UNSUPPORTED",
    "JPT_ERR_DENIED",
    "JPT_ERR_TIMEOUT",
    "JPT_ERR_CANCELLED",
    "JPT_ERR_IO",
    "JPT_ERR_PROTOCOL",
    "JPT_ERR_AGAIN",
    "JPT_ERR_SANDBOX",
    "JPT_ERR_LIMIT",
    "JPT_LOG_ERROR",
    "JPT_LOG_WARNING",
    "JPT_LOG_INFO",
    "JPT_LOG_DEBUG",
    "JPT_STATE_RUNNING",
    "JPT_STATE_WAITING",
    "JPT_STATE_STOPPED",
    "JPT_BLOCK_TEXT",
    "JPT_BLOCK_RESOURCE",
    "JPT_BLOCK_QUESTION",
    "JPT_BLOCK_IMAGE",
    "JPT_BLOCK_AUDIO",
    "JPT_BLOCK_RESOURCE_LINK",
    "JPT_FIELD_TEXT",
    "JPT_FIELD_URI",
    "JPT_FIELD_MIME_TYPE",
    "JPT_FIELD_BLOB",
    "JPT_FIELD_FORMATTED",
    "JPT_FIELD_NAME",
    "JPT_FIELD_TITLE",
    "JPT_FIELD_DESCRIPTION",
    "JPT_FIELD_ANNOTATIONS",
    "JPT_FIELD_ID",
    "JPT_FIELD_SCHEMA",
    "JPT_FIELD_DEFAULT",
    "JPT_FIELD_BLOB_SIZE",
    "JPT_PARSE_RAW",
    "JPT_JSON_MAX_DEPTH",
    "JPT_JSON_ENVELOPE",
    "JPT_JSON_TOOL_STATE",
    "JPT_JSON_OUTCOME",
    "JPT_JSON_PRETTY",
    "JPT_LOAD_REPLACE",
    "JPT_DIALECT_OPENAI",
    "JPT_DIALECT_ANTHROPIC",
    "JPT_DIALECT_GEMINI",
    "JPT_DIALECT_MCP",
    "JPT_DIALECT_OPENAI_RESPONSES",
    "JPT_DIALECT_FLAT",
    "JPT_DIALECT_ONEOF",
    "JPT_DIALECT_STRICT",
    "JPT_DIALECT_AS_CALLED",
    "JPT_EVENT_CALL_DONE",
    "JPT_EVENT_BATCH_DONE",
    "JPT_EVENT_OUTPUT",
    "JPT_EVENT_STATE",
    "JPT_EVENT_SHUTDOWN",
    "JPT_TARGET_USER",
    "JPT_TARGET_ASSISTANT",
    "JPT_TURN_KEEP",
    "JPT_TURN_ABORT",
    "JPT_REGISTRY_KEEP_SPOOL",
    "JPT_CONTAIN_AUTO",
    "JPT_CONTAIN_CGROUP",
    "JPT_CONTAIN_SUBREAPER",
    "JPT_CONTAIN_SESSION",
    "JPT_ACCESS_READ",
    "JPT_ACCESS_WRITE",
    "JPT_ACCESS_LIST",
    "JPT_ACCESS_HTTP",
    "JPT_ACCESS_PROCESS",
    "JPT_VERDICT_ALLOW",
    "JPT_VERDICT_DENY",
    "JPT_VERDICT_ASK",
    "Files",
    "FilesRequest",
    "PolicyRequest",
    "VfsHost",
    "JPT_FILES_ALLOW_HARDLINKS",
    "JPT_FILES_FSYNC",
    "JPT_FILES_KIND_FILE",
    "JPT_FILES_KIND_DIR",
    "JPT_FILES_KIND_SYMLINK",
    "JPT_FILES_KIND_OTHER",
    "JPT_FILES_READ_LIMIT",
    "JPT_FILES_GREP_MAX_MATCHES",
    "JPT_DECISION_DENY",
    "JPT_DECISION_ALLOW",
    "JPT_DECISION_ALLOW_ALWAYS",
    "JPT_VFS_PROTOCOL_VERSION",
    "JPT_VFS_CONTENT_LIMIT",
    "JPT_VFS_ENVELOPE_LIMIT",
    "JPT_VFS_MAX_REQUESTS",
    "JPT_VFS_MAX_REQUEST_BYTES",
    "JPT_VFS_ANSWER_BUDGET",
    "JPT_VFS_REQUEST_OVERHEAD",
    "JPT_VFS_GREP_RESULT_LIMIT",
    "JPT_VFS_GREP_LINE_LIMIT",
    "JPT_VFS_GREP_NEST_LIMIT",
    "JPT_VFS_HTTP_MAX_ACTIVE",
    "JPT_VFS_E_PARSE",
    "JPT_VFS_E_INVALID_REQUEST",
    "JPT_VFS_E_METHOD_NOT_FOUND",
    "JPT_VFS_E_INVALID_PARAMS",
    "JPT_VFS_E_INTERNAL",
    "JPT_VFS_E_ACCESS_DENIED",
    "JPT_VFS_E_NOT_FOUND",
    "JPT_VFS_E_EXISTS",
    "JPT_VFS_E_TIMEOUT",
    "JPT_VFS_E_CANCELLED",
    "JPT_STREAM_STDOUT", "JPT_STREAM_STDERR",
    "JPT_VFS_PROCESS_TIMEOUT_MS",
    "JPT_VFS_PROCESS_TIMEOUT_MAX_MS",
    "JPT_VFS_PROCESS_OUTPUT_LIMIT",
    "JPT_VFS_PROCESS_OUTPUT_MAX",
    "JPT_SANDBOX_DEFAULT",
    "JPT_SANDBOX_REQUIRED",
    "JPT_SANDBOX_BEST_EFFORT",
    "JPT_SANDBOX_OFF",
    "JPT_SANDBOX_ENFORCED_NO_NEW_PRIVS",
    "JPT_SANDBOX_ENFORCED_SECCOMP",
    "JPT_SANDBOX_ENFORCED_FILES",
    "JPT_SANDBOX_ENFORCED_TRUNCATE",
    "JPT_SANDBOX_ENFORCED_TCP",
    "JPT_SANDBOX_ENFORCED_DEVICE_IOCTL",
    "JPT_SANDBOX_ENFORCED_SCOPES",
]

# ---- Constants (common.h, state.h) ------------------------------------------

JPT_OK = 0
JPT_ERR_INVALID = -1
JPT_ERR_NOMEM = -2
JPT_ERR_NOT_FOUND = -3
JPT_ERR_EXISTS = -4
JPT_ERR_STATE = -5
JPT_ERR_UNSUPPORTED = -6
JPT_ERR_DENIED = -7
JPT_ERR_TIMEOUT = -8
JPT_ERR_CANCELLED = -9
JPT_ERR_IO = -10
JPT_ERR_PROTOCOL = -11
JPT_ERR_AGAIN = -12
JPT_ERR_SANDBOX = -13
JPT_ERR_LIMIT = -14

JPT_LOG_ERROR = 1
JPT_LOG_WARNING = 2
JPT_LOG_INFO = 3
JPT_LOG_DEBUG = 4

JPT_STATE_RUNNING = 1
JPT_STATE_WAITING = 2
JPT_STATE_STOPPED = 3

JPT_BLOCK_TEXT = 1
JPT_BLOCK_RESOURCE = 2
JPT_BLOCK_QUESTION = 3
JPT_BLOCK_IMAGE = 4
JPT_BLOCK_AUDIO = 5
JPT_BLOCK_RESOURCE_LINK = 6

JPT_FIELD_TEXT = 1
JPT_FIELD_URI = 2
JPT_FIELD_MIME_TYPE = 3
JPT_FIELD_BLOB = 4
JPT_FIELD_FORMATTED = 5
JPT_FIELD_NAME = 6
JPT_FIELD_TITLE = 7
JPT_FIELD_DESCRIPTION = 8
JPT_FIELD_ANNOTATIONS = 9
JPT_FIELD_ID = 10
JPT_FIELD_SCHEMA = 11
JPT_FIELD_DEFAULT = 12
JPT_FIELD_BLOB_SIZE = 13

JPT_PARSE_RAW = 0x1
JPT_JSON_MAX_DEPTH = 256

JPT_JSON_ENVELOPE = 1
JPT_JSON_TOOL_STATE = 2
JPT_JSON_OUTCOME = 3

JPT_JSON_PRETTY = 0x1

# registry.h
JPT_LOAD_REPLACE = 0x1

JPT_DIALECT_OPENAI = 1
JPT_DIALECT_ANTHROPIC = 2
JPT_DIALECT_GEMINI = 3
JPT_DIALECT_MCP = 4
JPT_DIALECT_OPENAI_RESPONSES = 5
JPT_DIALECT_FLAT = 0x100
JPT_DIALECT_ONEOF = 0x200
JPT_DIALECT_STRICT = 0x400
JPT_DIALECT_AS_CALLED = 0

JPT_EVENT_CALL_DONE = 1
JPT_EVENT_BATCH_DONE = 2
JPT_EVENT_OUTPUT = 3
JPT_EVENT_STATE = 4
JPT_EVENT_SHUTDOWN = 5

# Streams of jpt_output (jpt_registry_set_output_handler).
JPT_STREAM_STDOUT = 1
JPT_STREAM_STDERR = 2

JPT_TARGET_USER = 1
JPT_TARGET_ASSISTANT = 2

JPT_TURN_KEEP = 0x1
JPT_TURN_ABORT = 0x2

JPT_REGISTRY_KEEP_SPOOL = 0x1

JPT_CONTAIN_AUTO = 0
JPT_CONTAIN_CGROUP = 1
JPT_CONTAIN_SUBREAPER = 2
JPT_CONTAIN_SESSION = 3
# vfs.h: the access policy
JPT_ACCESS_READ = 1
JPT_ACCESS_WRITE = 2
JPT_ACCESS_LIST = 3
JPT_ACCESS_HTTP = 4
JPT_ACCESS_PROCESS = 5

JPT_VERDICT_ALLOW = 1
JPT_VERDICT_DENY = 2
JPT_VERDICT_ASK = 3

# vfs.h: ProjectFiles
JPT_FILES_ALLOW_HARDLINKS = 0x1
JPT_FILES_FSYNC = 0x2
JPT_FILES_KIND_FILE = 1
JPT_FILES_KIND_DIR = 2
JPT_FILES_KIND_SYMLINK = 3
JPT_FILES_KIND_OTHER = 4
JPT_FILES_READ_LIMIT = 10 * 1000 * 1000
JPT_FILES_GREP_MAX_MATCHES = 1000

# vfs.h: the VFS host and its policy prompt
JPT_VFS_PROTOCOL_VERSION = "0.1.0"
JPT_VFS_CONTENT_LIMIT = 10485760
JPT_VFS_ENVELOPE_LIMIT = 65536
JPT_VFS_MAX_REQUESTS = 16384
JPT_VFS_MAX_REQUEST_BYTES = 64 << 20
JPT_VFS_ANSWER_BUDGET = 64 << 20
JPT_VFS_REQUEST_OVERHEAD = 64 << 10
JPT_VFS_GREP_RESULT_LIMIT = JPT_VFS_CONTENT_LIMIT
JPT_VFS_GREP_LINE_LIMIT = 8 << 20
JPT_VFS_GREP_NEST_LIMIT = 64
JPT_VFS_HTTP_MAX_ACTIVE = 64

JPT_VFS_E_PARSE = -32700
JPT_VFS_E_INVALID_REQUEST = -32600
JPT_VFS_E_METHOD_NOT_FOUND = -32601
JPT_VFS_E_INVALID_PARAMS = -32602
JPT_VFS_E_INTERNAL = -32603
JPT_VFS_E_ACCESS_DENIED = -32001
JPT_VFS_E_NOT_FOUND = -32002
JPT_VFS_E_EXISTS = -32003
JPT_VFS_E_TIMEOUT = -32004
JPT_VFS_E_CANCELLED = -32005

JPT_DECISION_DENY = 0
JPT_DECISION_ALLOW = 1
JPT_DECISION_ALLOW_ALWAYS = 2
# process.run's limits (sandbox.commands.<program>.timeout_ms, .output_limit)
JPT_VFS_PROCESS_TIMEOUT_MS = 60000
JPT_VFS_PROCESS_TIMEOUT_MAX_MS = 86400000
JPT_VFS_PROCESS_OUTPUT_LIMIT = 1048576
JPT_VFS_PROCESS_OUTPUT_MAX = 4194304

# vfs.h: the OS sandbox's modes (VfsHost sandbox_mode, Registry sandbox_mode)
JPT_SANDBOX_DEFAULT = 0
JPT_SANDBOX_REQUIRED = 1
JPT_SANDBOX_BEST_EFFORT = 2
JPT_SANDBOX_OFF = 3
# ... and what it enforced (VfsHost.sandbox, Registry.tool_sandbox)
JPT_SANDBOX_ENFORCED_NO_NEW_PRIVS = 0x01
JPT_SANDBOX_ENFORCED_SECCOMP = 0x02
JPT_SANDBOX_ENFORCED_FILES = 0x04
JPT_SANDBOX_ENFORCED_TRUNCATE = 0x08
JPT_SANDBOX_ENFORCED_TCP = 0x10
JPT_SANDBOX_ENFORCED_DEVICE_IOCTL = 0x20
JPT_SANDBOX_ENFORCED_SCOPES = 0x40

_KIND_NAMES = {
    "running": JPT_STATE_RUNNING,
    "waiting": JPT_STATE_WAITING,
    "stopped": JPT_STATE_STOPPED,
}

_BLOCK_TYPE_NAMES = {
    JPT_BLOCK_TEXT: "text",
    JPT_BLOCK_RESOURCE: "resource",
    JPT_BLOCK_QUESTION: "question",
    JPT_BLOCK_IMAGE: "image",
    JPT_BLOCK_AUDIO: "audio",
    JPT_BLOCK_RESOURCE_LINK: "resource_link",
}

_DIALECTS = {
    "openai": JPT_DIALECT_OPENAI,
    "anthropic": JPT_DIALECT_ANTHROPIC,
    "gemini": JPT_DIALECT_GEMINI,
    "mcp": JPT_DIALECT_MCP,
    "openai_responses": JPT_DIALECT_OPENAI_RESPONSES,
}

# The shapes Batch.results() gives: jptool's own (None), or a provider's.
_RESULT_SHAPES = {
    "as_called": JPT_DIALECT_AS_CALLED,
    "openai": JPT_DIALECT_OPENAI,
    "openai_responses": JPT_DIALECT_OPENAI_RESPONSES,
    "anthropic": JPT_DIALECT_ANTHROPIC,
    "gemini": JPT_DIALECT_GEMINI,
}

_EVENT_NAMES = {
    JPT_EVENT_CALL_DONE: "call_done",
    JPT_EVENT_BATCH_DONE: "batch_done",
    JPT_EVENT_OUTPUT: "output",
    JPT_EVENT_STATE: "state",
    JPT_EVENT_SHUTDOWN: "shutdown",
}

_FORMS = {
    "envelope": JPT_JSON_ENVELOPE,
    "tool_state": JPT_JSON_TOOL_STATE,
    "outcome": JPT_JSON_OUTCOME,
}

# Block fields as the dict keys State.blocks uses, and how each is decoded.
_TEXT, _JSON, _INT = "text", "json", "int"
_FIELDS = (
    ("id", JPT_FIELD_ID, _TEXT),
    ("uri", JPT_FIELD_URI, _TEXT),
    ("mime_type", JPT_FIELD_MIME_TYPE, _TEXT),
    ("name", JPT_FIELD_NAME, _TEXT),
    ("title", JPT_FIELD_TITLE, _TEXT),
    ("description", JPT_FIELD_DESCRIPTION, _TEXT),
    ("text", JPT_FIELD_TEXT, _TEXT),
    ("blob", JPT_FIELD_BLOB, _TEXT),
    ("blob_size", JPT_FIELD_BLOB_SIZE, _INT),
    ("formatted", JPT_FIELD_FORMATTED, _TEXT),
    ("annotations", JPT_FIELD_ANNOTATIONS, _JSON),
    ("schema", JPT_FIELD_SCHEMA, _JSON),
    ("default", JPT_FIELD_DEFAULT, _JSON),
)

# ---- Loading and prototypes -------------------------------------------------


# The installed library's soname: the major version this binding speaks.
_SONAME = "libjptool.so.0"


def _load_library() -> Tuple[ctypes.CDLL, str]:
    """Loads libjptool from the first of these places that names one: the
    environment variable JPTOOL_LIBRARY, the build tree of a `meson devenv`
    (JPTOOL_BUILD_LIBRARY, which jptool's meson.build sets there), the
    installed soname through the dynamic loader. A library named but not
    loadable is an error, not a reason to look further: the next place
    could hold another version. Raises ImportError saying, for each place,
    what it gave."""
    places = (
        ("JPTOOL_LIBRARY", os.environ.get("JPTOOL_LIBRARY")),
        ("the build tree of `meson devenv` (JPTOOL_BUILD_LIBRARY)",
         os.environ.get("JPTOOL_BUILD_LIBRARY")),
        (f"the installed library ({_SONAME}, through the dynamic loader)", _SONAME),
    )
    tried = []
    for i, (place, name) in enumerate(places):
        if not name:
            tried.append(f"{place}: not set")
            continue
        try:
            return ctypes.CDLL(name), name
        except OSError as e:
            tried.append(f"{place}: {e}")
            tried.extend(f"{later}: not tried, as the library named above "
                         f"is the one to use" for later, _ in places[i + 1:])
            break
    raise ImportError(
        "jptool: cannot load libjptool; tried, in order:\n"
        + "".join(f"  - {line}\n" for line in tried)
        + "Set JPTOOL_LIBRARY to the library's path, run under "
          "`meson devenv -C <build directory>`, or install jptool "
          "(`meson install`, then `ldconfig`).")


_lib, library_path = _load_library()
"""``library_path``: what the library was loaded from, as given to
``ctypes.CDLL`` (a path, or the soname ``libjptool.so.0``)."""


class _jpt_state(ctypes.Structure):
    """The opaque ``struct jpt_state``; only pointers to it are used."""


_StatePtr = ctypes.POINTER(_jpt_state)


class _Allocator(ctypes.Structure):
    """``jpt_allocator``, declared for the prototype only (see the module
    docstring: jpt_set_allocator is deliberately not wrapped)."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("malloc", ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)),
        (
            "realloc",
            ctypes.CFUNCTYPE(
                ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p
            ),
        ),
        ("free", ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)),
        ("ud", ctypes.c_void_p),
    ]


class _Resource(ctypes.Structure):
    """``jpt_resource``: the fields of a resource block for the builder."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("uri", ctypes.c_char_p),
        ("mime_type", ctypes.c_char_p),
        ("text", ctypes.c_char_p),
        ("blob", ctypes.c_char_p),
        ("formatted", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("title", ctypes.c_char_p),
        ("description", ctypes.c_char_p),
        ("annotations_json", ctypes.c_char_p),
    ]


class _RenderOptions(ctypes.Structure):
    """``jpt_render_options``."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("root", ctypes.c_char_p),
    ]


_LogFn = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


class _jpt_registry(ctypes.Structure):
    """The opaque ``struct jpt_registry``."""


class _jpt_batch(ctypes.Structure):
    """The opaque ``struct jpt_batch``."""


class _jpt_event(ctypes.Structure):
    """The opaque ``struct jpt_event``."""


class _jpt_inquiry(ctypes.Structure):
    """The opaque ``struct jpt_inquiry``."""


class _jpt_handle(ctypes.Structure):
    """The opaque ``struct jpt_handle``."""


_RegistryPtr = ctypes.POINTER(_jpt_registry)
_BatchPtr = ctypes.POINTER(_jpt_batch)
_EventPtr = ctypes.POINTER(_jpt_event)
_InquiryPtr = ctypes.POINTER(_jpt_inquiry)
_HandlePtr = ctypes.POINTER(_jpt_handle)


class _jpt_policy(ctypes.Structure):
    """The opaque ``struct jpt_policy``."""


_PolicyPtr = ctypes.POINTER(_jpt_policy)


class _jpt_files(ctypes.Structure):
    """The opaque ``struct jpt_files``."""


class _jpt_files_request(ctypes.Structure):
    """The opaque ``struct jpt_files_request``."""


class _jpt_policy_request(ctypes.Structure):
    """The opaque ``struct jpt_policy_request``."""


class _jpt_vfs_host(ctypes.Structure):
    """The opaque ``struct jpt_vfs_host``."""


_FilesPtr = ctypes.POINTER(_jpt_files)
_FilesRequestPtr = ctypes.POINTER(_jpt_files_request)
_PolicyRequestPtr = ctypes.POINTER(_jpt_policy_request)
_VfsHostPtr = ctypes.POINTER(_jpt_vfs_host)

# jpt_files_ops callbacks. The method name and params arrive as bytes.
_FilesCallFn = ctypes.CFUNCTYPE(ctypes.c_int, _FilesRequestPtr, ctypes.c_char_p,
                                ctypes.c_char_p, ctypes.c_void_p)
_FilesCancelFn = ctypes.CFUNCTYPE(None, _FilesRequestPtr, ctypes.c_void_p)
_FilesReleaseFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _FilesOps(ctypes.Structure):
    """``jpt_files_ops``."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("call", _FilesCallFn),
        ("cancel", _FilesCancelFn),
        ("release", _FilesReleaseFn),
    ]


class _FilesEntry(ctypes.Structure):
    """``jpt_files_entry``."""

    _fields_ = [("name", ctypes.c_char_p), ("kind", ctypes.c_int)]


# jpt_policy_fn: the request's strings are read through its accessors.
_PolicyFn = ctypes.CFUNCTYPE(None, _PolicyRequestPtr, ctypes.c_void_p)


class _VfsHostOptions(ctypes.Structure):
    """``jpt_vfs_host_options``: zero fields mean the library's defaults."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("files", _FilesPtr),
        ("root", ctypes.c_char_p),
        ("sandbox_json", ctypes.c_char_p),
        ("request_timeout_ms", ctypes.c_int),
        ("kill_grace_ms", ctypes.c_int),
        ("max_message", ctypes.c_size_t),
        ("max_violations", ctypes.c_uint),
        ("sandbox_mode", ctypes.c_int),
        ("sandbox_read", ctypes.POINTER(ctypes.c_char_p)),
    ]


class _RegistryOptions(ctypes.Structure):
    """``jpt_registry_options``: zero fields mean the library's defaults."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("root", ctypes.c_char_p),
        ("kill_grace_ms", ctypes.c_int),
        ("capture_bytes", ctypes.c_size_t),
        ("output_limit", ctypes.c_size_t),
        ("settle_ms", ctypes.c_int),
        ("yield_ms", ctypes.c_int),
        ("drain_ms", ctypes.c_int),
        ("max_inquiry_rounds", ctypes.c_int),
        ("spool_dir", ctypes.c_char_p),
        ("state_file", ctypes.c_char_p),
        ("turn_end_timeout_ms", ctypes.c_int),
        ("max_processes", ctypes.c_size_t),
        ("max_events", ctypes.c_size_t),
        ("flags", ctypes.c_uint),
        ("containment", ctypes.c_int),
        ("sandbox_mode", ctypes.c_int),
    ]


# jpt_builtin_ops callbacks. The JSON text arguments arrive as bytes (ctypes
# copies them), so nothing of the library's memory outlives the callback.
_StartFn = ctypes.CFUNCTYPE(ctypes.c_int, _HandlePtr, ctypes.c_char_p, ctypes.c_void_p)
_ApplyFn = ctypes.CFUNCTYPE(ctypes.c_int, _HandlePtr, ctypes.c_char_p, ctypes.c_void_p)
_AbortFn = ctypes.CFUNCTYPE(None, _HandlePtr, ctypes.c_void_p)


class _BuiltinOps(ctypes.Structure):
    """``jpt_builtin_ops``."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("start", _StartFn),
        ("apply", _ApplyFn),
        ("abort", _AbortFn),
    ]


_InquiryFn = ctypes.CFUNCTYPE(None, _InquiryPtr, ctypes.c_void_p)


class _Output(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("id", ctypes.c_char_p),
        ("tool", ctypes.c_char_p),
        ("stateful", ctypes.c_int),
        ("stream", ctypes.c_int),
        ("data", ctypes.c_void_p),
        ("len", ctypes.c_size_t),
    ]


_OutputFn = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Output), ctypes.c_void_p)

_c_int, _c_uint, _c_size = ctypes.c_int, ctypes.c_uint, ctypes.c_size_t
_c_str, _c_void = ctypes.c_char_p, ctypes.c_void_p
_out_str = ctypes.POINTER(ctypes.c_void_p)  # char **out, freed with jpt_free

# name: (restype, argtypes). Static strings and strings a state owns come back
# as c_char_p (ctypes copies them into bytes); strings the caller must free
# come through `char **out` parameters declared as void ** so that the
# pointer itself can be handed back to jpt_free. jpt_state_block_field returns
# void * because its text may hold NUL bytes: it is read with its length.
_PROTOTYPES = {
    # common.h
    "jpt_version": (_c_str, []),
    "jpt_strerror": (_c_str, [_c_int]),
    "jpt_status_name": (_c_str, [_c_int]),
    "jpt_free": (None, [_c_void]),
    "jpt_set_allocator": (_c_int, [ctypes.POINTER(_Allocator)]),
    "jpt_set_log": (None, [_LogFn, _c_void, _c_int]),
    # state.h: parsing, references
    "jpt_state_parse": (_c_int, [_c_str, _c_size, _c_uint, ctypes.POINTER(_StatePtr)]),
    "jpt_state_ref": (_StatePtr, [_StatePtr]),
    "jpt_state_unref": (None, [_StatePtr]),
    # reading
    "jpt_state_kind": (_c_int, [_StatePtr]),
    "jpt_state_is_error": (_c_int, [_StatePtr]),
    "jpt_state_error_message": (_c_str, [_StatePtr]),
    "jpt_state_error_transient": (_c_int, [_StatePtr]),
    "jpt_state_error_trace_count": (_c_size, [_StatePtr]),
    "jpt_state_error_trace": (_c_str, [_StatePtr, _c_size]),
    "jpt_state_structured_content": (_c_str, [_StatePtr]),
    "jpt_state_block_count": (_c_size, [_StatePtr]),
    "jpt_state_block_type": (_c_int, [_StatePtr, _c_size]),
    "jpt_state_block_field": (
        _c_void,
        [_StatePtr, _c_size, _c_int, ctypes.POINTER(ctypes.c_size_t)],
    ),
    "jpt_state_warning_count": (_c_size, [_StatePtr]),
    "jpt_state_warning": (_c_str, [_StatePtr, _c_size]),
    "jpt_state_errmsg": (_c_str, [_StatePtr]),
    # building
    "jpt_state_new": (_c_int, [_c_int, ctypes.POINTER(_StatePtr)]),
    "jpt_state_add_text": (_c_int, [_StatePtr, _c_str]),
    "jpt_state_add_resource": (_c_int, [_StatePtr, ctypes.POINTER(_Resource)]),
    "jpt_state_add_question": (_c_int, [_StatePtr, _c_str, _c_str, _c_str, _c_str]),
    "jpt_state_add_block_json": (_c_int, [_StatePtr, _c_str]),
    "jpt_state_set_structured_content": (_c_int, [_StatePtr, _c_str]),
    "jpt_state_set_error": (_c_int, [_StatePtr, _c_str, _c_int]),
    "jpt_state_add_error_trace": (_c_int, [_StatePtr, _c_str]),
    # serialising
    "jpt_state_to_json": (_c_int, [_StatePtr, _c_int, _c_uint, _out_str]),
    "jpt_state_render": (
        _c_int,
        [_StatePtr, ctypes.POINTER(_RenderOptions), _out_str],
    ),
    # helpers
    "jpt_uri_canonicalize": (_c_int, [_c_str, _c_str, _out_str]),
    "jpt_mime_fence_lang": (_c_str, [_c_str]),
    "jpt_schema_check": (_c_int, [_c_str, _c_str, _out_str]),
    # registry.h: creating a registry
    "jpt_registry_new": (
        _c_int,
        [ctypes.POINTER(_RegistryOptions), ctypes.POINTER(_RegistryPtr)],
    ),
    "jpt_registry_free": (None, [_RegistryPtr]),
    "jpt_registry_shutdown": (_c_int, [_RegistryPtr]),
    "jpt_registry_errmsg": (_c_str, [_RegistryPtr]),
    # tools
    "jpt_registry_load_tools": (_c_int, [_RegistryPtr, _c_str, _c_uint]),
    "jpt_registry_add_builtin": (
        _c_int,
        [_RegistryPtr, _c_str, ctypes.POINTER(_BuiltinOps), _c_void],
    ),
    "jpt_handle_update": (_c_int, [_HandlePtr, _StatePtr]),
    "jpt_handle_id": (_c_str, [_HandlePtr]),
    "jpt_handle_tool": (_c_str, [_HandlePtr]),
    "jpt_handle_set_userdata": (None, [_HandlePtr, _c_void]),
    "jpt_handle_get_userdata": (_c_void, [_HandlePtr]),
    "jpt_registry_tools_json": (_c_int, [_RegistryPtr, _c_int, _out_str]),
    # calls
    "jpt_registry_submit": (_c_int, [_RegistryPtr, _c_str, ctypes.POINTER(_BatchPtr)]),
    "jpt_batch_done": (_c_int, [_BatchPtr]),
    "jpt_batch_results_json": (_c_int, [_BatchPtr, _out_str]),
    "jpt_batch_results_json_as": (_c_int, [_BatchPtr, _c_int, _out_str]),
    "jpt_batch_cancel": (None, [_BatchPtr]),
    "jpt_batch_cancel_call": (_c_int, [_BatchPtr, _c_str]),
    "jpt_batch_set_call_timeout": (_c_int, [_BatchPtr, _c_str, _c_int]),
    "jpt_registry_set_output_handler": (None, [_RegistryPtr, _OutputFn, _c_void]),
    "jpt_batch_free": (None, [_BatchPtr]),
    # driving the registry
    "jpt_registry_get_fd": (_c_int, [_RegistryPtr]),
    "jpt_registry_get_timeout": (_c_int, [_RegistryPtr]),
    "jpt_registry_dispatch": (_c_int, [_RegistryPtr]),
    "jpt_registry_run": (_c_int, [_RegistryPtr, _c_int]),
    "jpt_registry_wait": (_c_int, [_RegistryPtr, _BatchPtr, _c_int]),
    "jpt_registry_wakeup": (_c_int, [_RegistryPtr]),
    # events (jpt_event_batch is only compared, so it comes back as an address)
    "jpt_registry_next_event": (_c_int, [_RegistryPtr, ctypes.POINTER(_EventPtr)]),
    "jpt_event_type": (_c_int, [_EventPtr]),
    "jpt_event_call_id": (_c_str, [_EventPtr]),
    "jpt_event_handle_id": (_c_str, [_EventPtr]),
    "jpt_event_tool": (_c_str, [_EventPtr]),
    "jpt_event_state": (_c_int, [_EventPtr]),
    "jpt_event_batch": (_c_void, [_EventPtr]),
    "jpt_event_free": (None, [_EventPtr]),
    # questions
    "jpt_registry_set_inquiry_handler": (None, [_RegistryPtr, _InquiryFn, _c_void]),
    "jpt_inquiry_tool": (_c_str, [_InquiryPtr]),
    "jpt_inquiry_call_id": (_c_str, [_InquiryPtr]),
    "jpt_inquiry_handle_id": (_c_str, [_InquiryPtr]),
    "jpt_inquiry_question_json": (_c_str, [_InquiryPtr]),
    "jpt_inquiry_target": (_c_int, [_InquiryPtr]),
    "jpt_inquiry_context": (_StatePtr, [_InquiryPtr]),
    "jpt_inquiry_answer": (_c_int, [_InquiryPtr, _c_str]),
    "jpt_inquiry_cancel": (_c_int, [_InquiryPtr, _c_str]),
    "jpt_inquiry_errmsg": (_c_str, [_InquiryPtr]),
    # notifications and the end of a turn
    "jpt_registry_take_notifications": (_c_int, [_RegistryPtr, _out_str]),
    "jpt_registry_end_turn": (_c_int, [_RegistryPtr, _c_uint, ctypes.POINTER(_BatchPtr)]),
    # orphans
    "jpt_registry_reap_stale": (_c_int, [_c_str, ctypes.POINTER(ctypes.c_size_t)]),
    # VFS tools
    "jpt_registry_add_files": (_c_int, [_RegistryPtr, _c_str, _FilesPtr]),
    "jpt_registry_set_policy_handler": (None, [_RegistryPtr, _PolicyFn, _c_void]),
    # the OS sandbox
    "jpt_registry_tool_sandbox": (_c_int, [_RegistryPtr, _c_str, ctypes.POINTER(_c_uint),
                                           _out_str]),
    # vfs.h: the access policy
    "jpt_policy_new": (_c_int, [_c_str, ctypes.POINTER(_PolicyPtr)]),
    "jpt_policy_free": (None, [_PolicyPtr]),
    "jpt_policy_errmsg": (_c_str, [_PolicyPtr]),
    "jpt_policy_check": (_c_int, [_PolicyPtr, _c_int, _c_str, _out_str]),
    "jpt_policy_hardlinks_allowed": (_c_int, [_PolicyPtr]),
    "jpt_policy_normalize_path": (_c_int, [_c_str, _out_str]),
    # vfs.h: ProjectFiles
    "jpt_files_open_dir": (_c_int, [_c_str, _c_uint, ctypes.POINTER(_FilesPtr)]),
    "jpt_files_new_memory": (_c_int, [ctypes.POINTER(_FilesPtr)]),
    "jpt_files_new": (_c_int, [ctypes.POINTER(_FilesOps), _c_void, ctypes.POINTER(_FilesPtr)]),
    "jpt_files_request_reply": (_c_int, [_FilesRequestPtr, _c_str]),
    "jpt_files_request_fail": (_c_int, [_FilesRequestPtr, _c_int, _c_str]),
    "jpt_files_free": (None, [_FilesPtr]),
    "jpt_files_errmsg": (_c_str, [_FilesPtr]),
    "jpt_files_read": (
        _c_int,
        [_FilesPtr, _c_str, _c_size, _out_str, ctypes.POINTER(ctypes.c_size_t),
         ctypes.POINTER(ctypes.c_int)],
    ),
    "jpt_files_write": (_c_int, [_FilesPtr, _c_str, _c_str, _c_size]),
    "jpt_files_exists": (_c_int, [_FilesPtr, _c_str, ctypes.POINTER(ctypes.c_int)]),
    "jpt_files_metadata": (
        _c_int,
        [_FilesPtr, _c_str, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_uint64)],
    ),
    "jpt_files_list_dir": (_c_int, [_FilesPtr, _c_str, _out_str, ctypes.POINTER(ctypes.c_size_t)]),
    "jpt_files_delete": (_c_int, [_FilesPtr, _c_str]),
    "jpt_files_rename": (_c_int, [_FilesPtr, _c_str, _c_str]),
    "jpt_files_grep": (_c_int, [_FilesPtr, _c_str, _out_str]),
    "jpt_files_call": (_c_int, [_FilesPtr, _c_str, _c_str, _out_str]),
    # vfs.h: the policy prompt
    "jpt_policy_request_tool": (_c_str, [_PolicyRequestPtr]),
    "jpt_policy_request_method": (_c_str, [_PolicyRequestPtr]),
    "jpt_policy_request_path": (_c_str, [_PolicyRequestPtr]),
    "jpt_policy_request_access": (_c_int, [_PolicyRequestPtr]),
    "jpt_policy_request_reason": (_c_str, [_PolicyRequestPtr]),
    "jpt_policy_request_id": (_c_str, [_PolicyRequestPtr]),
    "jpt_policy_request_answer": (_c_int, [_PolicyRequestPtr, _c_int, _c_str]),
    # vfs.h: the standalone host
    "jpt_vfs_host_new": (
        _c_int,
        [ctypes.POINTER(_VfsHostOptions), ctypes.POINTER(_VfsHostPtr)],
    ),
    "jpt_vfs_host_spawn": (_c_int, [_VfsHostPtr, ctypes.POINTER(ctypes.c_char_p), _c_str]),
    "jpt_vfs_host_attach": (_c_int, [_VfsHostPtr, _c_int, _c_int, _c_str]),
    "jpt_vfs_host_get_fd": (_c_int, [_VfsHostPtr]),
    "jpt_vfs_host_get_timeout": (_c_int, [_VfsHostPtr]),
    "jpt_vfs_host_dispatch": (_c_int, [_VfsHostPtr]),
    "jpt_vfs_host_run": (_c_int, [_VfsHostPtr, _c_int]),
    "jpt_vfs_host_apply": (_c_int, [_VfsHostPtr, _c_str]),
    "jpt_vfs_host_cancel": (_c_int, [_VfsHostPtr]),
    "jpt_vfs_host_state": (_c_int, [_VfsHostPtr, ctypes.POINTER(_StatePtr)]),
    "jpt_vfs_host_sandbox": (_c_int, [_VfsHostPtr, ctypes.POINTER(_c_uint),
                                      ctypes.POINTER(_c_str)]),
    "jpt_vfs_host_done": (_c_int, [_VfsHostPtr]),
    "jpt_vfs_host_set_policy_handler": (None, [_VfsHostPtr, _PolicyFn, _c_void]),
    "jpt_vfs_host_errmsg": (_c_str, [_VfsHostPtr]),
    "jpt_vfs_host_free": (None, [_VfsHostPtr]),
}

for _name, (_restype, _argtypes) in _PROTOTYPES.items():
    _fn = getattr(_lib, _name)
    _fn.restype = _restype
    _fn.argtypes = _argtypes
del _name, _restype, _argtypes, _fn

# ---- Conversions ------------------------------------------------------------

_Text = Union[str, bytes]


def _to_c(value: Optional[Union[_Text, os.PathLike]], what: str) -> Optional[bytes]:
    """A str/bytes/path argument as NUL-free bytes for a C string; None stays."""
    if value is None:
        return None
    if isinstance(value, os.PathLike):
        value = os.fsencode(value)
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    elif isinstance(value, (bytearray, memoryview)):
        value = bytes(value)
    elif not isinstance(value, bytes):
        raise TypeError(f"{what} must be str or bytes, not {type(value).__name__}")
    if b"\0" in value:
        raise ValueError(f"{what}: embedded null byte")
    return value


def _from_c(data: Optional[bytes]) -> Optional[str]:
    """Library text as str, keeping invalid UTF-8 as surrogate escapes."""
    if data is None:
        return None
    return data.decode("utf-8", "surrogateescape")


def _json_arg(value: Any, raw: bool, what: str) -> bytes:
    """A Python value as JSON text, or JSON text given as it is (raw=True)."""
    if raw:
        return _to_c(value, what)
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{what}: cannot be written as JSON: {e}") from None
    return text.encode("ascii")


def _take_json(p: ctypes.c_void_p) -> Any:
    """Reads JSON text the caller owns, frees it, returns it parsed (None
    for a NULL pointer)."""
    text = _take_string(p)
    return None if text is None else json.loads(text)


def _take_string(p: ctypes.c_void_p) -> Optional[str]:
    """Reads a `char *` the caller owns, frees it, returns it as str."""
    if not p.value:
        return None
    try:
        return _from_c(ctypes.string_at(p.value))
    finally:
        _lib.jpt_free(p)


# ---- Errors -----------------------------------------------------------------


class JptError(Exception):
    """A jptool status code as an exception.

    ``status`` is the negative JPT_ERR_* code, ``name`` its symbolic name
    (``"JPT_ERR_INVALID"``; None for a code this library version does not
    know) and ``message`` what went wrong: the object's error text
    (``jpt_state_errmsg``) when the call was made on a state, else the status
    code's description (``jpt_strerror``). ``str(error)`` is the message
    followed by the name.
    """

    def __init__(self, status: int, message: Optional[str] = None):
        self.status = status
        self.name = status_name(status)
        self.message = message if message else strerror(status)
        super().__init__(self.message)

    def __str__(self) -> str:
        return f"{self.message} ({self.name or self.status})"

    def __repr__(self) -> str:
        return f"JptError({self.status!r}, {self.message!r})"


def _check(rc: int, message: Optional[str] = None) -> int:
    if rc < 0:
        raise JptError(rc, message)
    return rc


# ---- Common -----------------------------------------------------------------


def version() -> str:
    """The library version as "MAJOR.MINOR.PATCH" (``jpt_version``)."""
    return _lib.jpt_version().decode("ascii")


def strerror(status: int) -> str:
    """A short English description of a status code (``jpt_strerror``);
    "unknown status" for a code the library does not know."""
    return _lib.jpt_strerror(status).decode("utf-8")


def status_name(status: int) -> Optional[str]:
    """The symbolic name of a status code ("JPT_ERR_INVALID"), or None for a
    code this library version does not know (``jpt_status_name``)."""
    name = _lib.jpt_status_name(status)
    return None if name is None else name.decode("ascii")


_log_callback = None  # the ctypes function object the library calls


def set_log(fn: Optional[Callable[[int, str], None]],
            min_level: int = JPT_LOG_WARNING) -> None:
    """Installs ``fn(level, message)`` as the library's log function
    (``jpt_set_log``), for messages of ``min_level`` or more important (a
    lower number: JPT_LOG_WARNING delivers errors and warnings). ``None``
    removes it. The message is one line, decoded from UTF-8.

    The module keeps the ctypes callback alive until it is replaced. An
    exception raised by ``fn`` cannot cross the C library; ctypes reports it
    through ``sys.unraisablehook`` and the library carries on. Like the C
    function, call it before other calls; it is not thread-safe.
    """
    global _log_callback
    if fn is None:
        _lib.jpt_set_log(_LogFn(), None, min_level)
        _log_callback = None
        return
    if not callable(fn):
        raise TypeError("set_log: fn must be callable or None")

    def trampoline(level, msg, _ud):
        fn(level, _from_c(msg) if msg is not None else "")

    callback = _LogFn(trampoline)
    _lib.jpt_set_log(callback, None, min_level)
    _log_callback = callback  # the previous one is no longer referenced by C


# ---- Helpers ------------------------------------------------------------------


def uri_canonicalize(uri: _Text, root: Optional[Union[_Text, os.PathLike]] = None) -> str:
    """The canonical form of a URI or path for identity
    (``jpt_uri_canonicalize``): a file beneath ``root`` (a path or file://
    URI) relative to it ("src/main.rs", "." for the root), other files as
    file:///… URIs, other URIs with lowercase scheme and host, no default
    port, dot segments resolved and percent-encoding normalised.

    Raises JptError (JPT_ERR_INVALID) for a URI the library rejects.
    """
    out = ctypes.c_void_p()
    _check(_lib.jpt_uri_canonicalize(_to_c(uri, "uri"), _to_c(root, "root"),
                                     ctypes.byref(out)))
    return _take_string(out)


def mime_fence_lang(mime_type: Optional[_Text]) -> Optional[str]:
    """The code fence language for a mime type ("text/rust" -> "rs"), or
    None for an unknown type (``jpt_mime_fence_lang``). Parameters and case
    are ignored; "+json" / "+xml" suffixes give json / xml."""
    lang = _lib.jpt_mime_fence_lang(_to_c(mime_type, "mime_type"))
    return None if lang is None else lang.decode("utf-8")


def schema_check(schema: Any, value: Any, *, raw_schema: bool = False,
                 raw_value: bool = False) -> Tuple[bool, Optional[str]]:
    """Checks ``value`` against the JSON Schema ``schema`` in the subset
    questions use (``jpt_schema_check``).

    Both are Python values, written with ``json.dumps``; with
    ``raw_schema=True`` / ``raw_value=True`` the argument is JSON text (str or
    bytes) passed as it is. Returns ``(True, None)`` when the value matches,
    else ``(False, why)``, where ``why`` says what did not match and where
    ("at /files/2: expected string, got integer") or that a text is not JSON.
    Raises JptError for other failures (JPT_ERR_NOMEM).
    """
    why = ctypes.c_void_p()
    rc = _lib.jpt_schema_check(_json_arg(schema, raw_schema, "schema"),
                               _json_arg(value, raw_value, "value"),
                               ctypes.byref(why))
    reason = _take_string(why)
    if rc == JPT_OK:
        return True, None
    if rc == JPT_ERR_INVALID:
        return False, reason
    raise JptError(rc, reason)


# ---- States -------------------------------------------------------------------

_ABSENT = object()  # add_question(default=...) not given: no default


class _Closable:
    """``with`` support for the wrappers that own a C object: entering
    checks the object is still open, leaving closes it."""

    __slots__ = ()

    def __enter__(self):
        """Returns the object itself; the ``with`` block closes it."""
        self._p()
        return self

    def __exit__(self, *exc) -> None:
        """Closes the object (see ``close``)."""
        self.close()


class State(_Closable):
    """A tool's state: lifecycle kind, optional error and content blocks
    (``jpt_state *``).

    Make one with :meth:`State.parse` (from a tool's output) or
    :meth:`State.new` (to build one). Each State object holds one reference;
    :meth:`ref` returns another State sharing the same C state, after which
    both are immutable and the builders raise JptError(JPT_ERR_STATE).
    Release the reference with :meth:`close` or a ``with`` block; garbage
    collection releases it too.
    """

    __slots__ = ("_ptr", "__weakref__")

    def __init__(self, _ptr: _StatePtr):
        """Wraps a reference the caller owns; use parse() or new() instead."""
        if not isinstance(_ptr, _StatePtr) or not _ptr:
            raise TypeError("State() takes a jpt_state pointer; use "
                            "State.parse() or State.new()")
        self._ptr = _ptr

    # -- construction and lifetime --

    @classmethod
    def parse(cls, data: Union[bytes, str], raw: bool = False) -> "State":
        """Parses a tool's output (``jpt_state_parse``): an RFD 058 envelope
        or MCP CallToolResult, RFD 009 ToolState JSON, JP's legacy Outcome,
        or anything else as one text block holding the bytes exactly.
        ``raw=True`` (JPT_PARSE_RAW) reads JSON as plain text too. A str is
        encoded as UTF-8 (surrogateescape); bytes may hold anything,
        NUL bytes included. Malformed blocks are skipped with a warning
        (:attr:`warnings`), never an error."""
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        elif isinstance(data, (bytearray, memoryview)):
            data = bytes(data)
        elif not isinstance(data, bytes):
            raise TypeError(f"data must be bytes or str, not {type(data).__name__}")
        ptr = _StatePtr()
        _check(_lib.jpt_state_parse(data, len(data), JPT_PARSE_RAW if raw else 0,
                                    ctypes.byref(ptr)))
        return cls(ptr)

    @classmethod
    def new(cls, kind: Union[int, str] = JPT_STATE_STOPPED) -> "State":
        """A new empty state of ``kind`` (``jpt_state_new``): JPT_STATE_* or
        "running" / "waiting" / "stopped". Raises JptError
        (JPT_ERR_INVALID) for another kind."""
        if isinstance(kind, str):
            if kind not in _KIND_NAMES:
                raise JptError(JPT_ERR_INVALID, f"unknown state kind {kind!r}")
            kind = _KIND_NAMES[kind]
        ptr = _StatePtr()
        _check(_lib.jpt_state_new(kind, ctypes.byref(ptr)))
        return cls(ptr)

    def ref(self) -> "State":
        """A new State holding another reference to the same C state
        (``jpt_state_ref``). The state is shared from then on, so it is
        immutable: builders on either object raise JptError(JPT_ERR_STATE).
        Close each State separately."""
        return State(_lib.jpt_state_ref(self._p()))

    def close(self) -> None:
        """Drops this object's reference (``jpt_state_unref``); the last
        one frees the state. Closing twice is harmless; any other use after
        closing raises ValueError."""
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr:
            _lib.jpt_state_unref(ptr)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return not self._ptr

    def __del__(self, _unref=_lib.jpt_state_unref):
        ptr = getattr(self, "_ptr", None)
        if ptr:
            self._ptr = None
            _unref(ptr)

    def __repr__(self) -> str:
        if not self._ptr:
            return "<jptool.State closed>"
        names = {v: k for k, v in _KIND_NAMES.items()}
        return (f"<jptool.State {names.get(self.kind, self.kind)}"
                f"{' error' if self.is_error else ''}, "
                f"{_lib.jpt_state_block_count(self._ptr)} block(s)>")

    def _p(self) -> _StatePtr:
        if not self._ptr:
            raise ValueError("operation on a closed State")
        return self._ptr

    def _build(self, rc: int) -> None:
        """Raises JptError for a failed builder call, with the state's
        error text."""
        if rc < 0:
            raise JptError(rc, _from_c(_lib.jpt_state_errmsg(self._ptr)))

    # -- reading --

    @property
    def kind(self) -> int:
        """JPT_STATE_RUNNING, JPT_STATE_WAITING or JPT_STATE_STOPPED."""
        return _lib.jpt_state_kind(self._p())

    @property
    def is_error(self) -> bool:
        """True if the tool stopped with an error (an error state is
        stopped)."""
        return bool(_lib.jpt_state_is_error(self._p()))

    @property
    def error_message(self) -> str:
        """The error message: the text blocks of an error state joined by
        newlines, or the legacy message; "" when the state is not an error."""
        return _from_c(_lib.jpt_state_error_message(self._p()))

    @property
    def error_transient(self) -> bool:
        """True if the error is transient (retrying may succeed)."""
        return bool(_lib.jpt_state_error_transient(self._p()))

    @property
    def error_trace(self) -> List[str]:
        """The error's source chain, outermost first."""
        p = self._p()
        return [_from_c(_lib.jpt_state_error_trace(p, i))
                for i in range(_lib.jpt_state_error_trace_count(p))]

    @property
    def structured_content(self) -> Any:
        """MCP ``structuredContent`` as a Python value, or None when absent
        (a JSON null is also None; :meth:`to_json` tells them apart)."""
        text = _lib.jpt_state_structured_content(self._p())
        return None if text is None else json.loads(text)

    @property
    def warnings(self) -> List[str]:
        """Problems found while parsing, one sentence each, in order."""
        p = self._p()
        return [_from_c(_lib.jpt_state_warning(p, i))
                for i in range(_lib.jpt_state_warning_count(p))]

    @property
    def errmsg(self) -> str:
        """The message of the last failed builder call, or "" if none
        (``jpt_state_errmsg``)."""
        return _from_c(_lib.jpt_state_errmsg(self._p()))

    def _field(self, i: int, field: int) -> Optional[bytes]:
        n = ctypes.c_size_t()
        ptr = _lib.jpt_state_block_field(self._ptr, i, field, ctypes.byref(n))
        return None if ptr is None else ctypes.string_at(ptr, n.value)

    def block(self, i: int) -> Dict[str, Any]:
        """Block ``i`` as a dict: "type" ("text", "resource", "question",
        "image", "audio" or "resource_link") and each field the block has,
        under the keys of :attr:`blocks`. IndexError when out of range."""
        p = self._p()
        if not 0 <= i < _lib.jpt_state_block_count(p):
            raise IndexError("block index out of range")
        btype = _lib.jpt_state_block_type(p, i)
        block: Dict[str, Any] = {"type": _BLOCK_TYPE_NAMES.get(btype, btype)}
        for key, field, how in _FIELDS:
            data = self._field(i, field)
            if data is None:
                continue
            if how == _JSON:
                block[key] = json.loads(data)
            elif how == _INT:
                block[key] = int(data)
            else:
                block[key] = data.decode("utf-8", "surrogateescape")
        return block

    @property
    def blocks(self) -> List[Dict[str, Any]]:
        """The content blocks in the tool's order, each a dict with "type"
        and every field the block has: "text", "uri", "mime_type", "blob"
        (base64 text), "blob_size" (int, decoded bytes), "formatted", "name",
        "title", "description", "annotations" (parsed JSON), "id", "schema"
        (parsed JSON), "default" (parsed JSON). Text fields are str decoded
        with errors="surrogateescape", whole even when they hold NUL bytes."""
        return [self.block(i) for i in range(_lib.jpt_state_block_count(self._p()))]

    # -- building --

    def add_text(self, text: _Text) -> None:
        """Appends a text block (``jpt_state_add_text``)."""
        self._build(_lib.jpt_state_add_text(self._p(), _to_c(text, "text")))

    def add_resource(self, uri: _Text, mime_type: Optional[_Text] = None,
                     text: Optional[_Text] = None, blob: Optional[_Text] = None,
                     formatted: Optional[_Text] = None, name: Optional[_Text] = None,
                     title: Optional[_Text] = None,
                     description: Optional[_Text] = None,
                     annotations: Optional[Dict[str, Any]] = None) -> None:
        """Appends a resource block (``jpt_state_add_resource``). ``uri`` is
        required and exactly one of ``text`` or ``blob`` (base64 text);
        ``annotations`` is a dict (MCP annotations: audience, priority,
        lastModified). Raises JptError(JPT_ERR_INVALID) with the reason
        otherwise."""
        r = _Resource(
            ctypes.sizeof(_Resource),
            _to_c(uri, "uri"),
            _to_c(mime_type, "mime_type"),
            _to_c(text, "text"),
            _to_c(blob, "blob"),
            _to_c(formatted, "formatted"),
            _to_c(name, "name"),
            _to_c(title, "title"),
            _to_c(description, "description"),
            None if annotations is None else _json_arg(annotations, False, "annotations"),
        )
        self._build(_lib.jpt_state_add_resource(self._p(), ctypes.byref(r)))

    def add_question(self, id: _Text, text: _Text, schema: Any = None,
                     default: Any = _ABSENT) -> None:
        """Appends a question block (``jpt_state_add_question``). ``schema``
        is a JSON Schema (a dict) or None for "any answer"; ``default`` is
        any JSON value (None is JSON null), left out when not given."""
        schema_json = None if schema is None else _json_arg(schema, False, "schema")
        default_json = None if default is _ABSENT else _json_arg(default, False, "default")
        self._build(_lib.jpt_state_add_question(
            self._p(), _to_c(id, "id"), _to_c(text, "text"), schema_json,
            default_json))

    def add_block(self, block: Union[Dict[str, Any], _Text]) -> None:
        """Appends one content block in RFD 058 / MCP form
        (``jpt_state_add_block_json``): a dict, or its JSON text as str or
        bytes. Any block type works (image, audio and resource_link too).
        A malformed block raises JptError(JPT_ERR_INVALID) with the reason."""
        raw = isinstance(block, (str, bytes, bytearray))
        self._build(_lib.jpt_state_add_block_json(
            self._p(), _json_arg(block, raw, "block")))

    def set_structured_content(self, value: Any, raw: bool = False) -> None:
        """Sets MCP ``structuredContent`` (``jpt_state_set_structured_content``),
        replacing an earlier one: a Python value, or JSON text with
        ``raw=True``."""
        self._build(_lib.jpt_state_set_structured_content(
            self._p(), _json_arg(value, raw, "structured content")))

    def set_error(self, message: _Text, transient: bool = False) -> None:
        """Marks the state as a stopped error (``jpt_state_set_error``). A
        non-empty message is appended as a text block; content can no longer
        be added afterwards (JPT_ERR_STATE), trace lines can."""
        self._build(_lib.jpt_state_set_error(
            self._p(), _to_c(message, "message"), 1 if transient else 0))

    def add_error_trace(self, line: _Text) -> None:
        """Appends a line to the error's trace (``jpt_state_add_error_trace``);
        JptError(JPT_ERR_STATE) when no error is set."""
        self._build(_lib.jpt_state_add_error_trace(self._p(), _to_c(line, "line")))

    # -- serialising --

    def to_json(self, form: Union[str, int] = "envelope", pretty: bool = False) -> str:
        """The state as JSON text (``jpt_state_to_json``): ``form`` is
        "envelope" (RFD 058 / MCP CallToolResult), "tool_state" (RFD 009) or
        "outcome" (JP's legacy Outcome), or a JPT_JSON_* number; ``pretty``
        indents with two spaces. A running state has no "outcome" form:
        JptError(JPT_ERR_INVALID)."""
        if isinstance(form, str):
            if form not in _FORMS:
                raise JptError(JPT_ERR_INVALID, f"unknown JSON form {form!r}")
            form = _FORMS[form]
        out = ctypes.c_void_p()
        _check(_lib.jpt_state_to_json(self._p(), form,
                                      JPT_JSON_PRETTY if pretty else 0,
                                      ctypes.byref(out)))
        return _take_string(out)

    def render(self, root: Optional[Union[_Text, os.PathLike]] = None) -> str:
        """The text the model reads for this state (``jpt_state_render``).
        File resources beneath ``root`` (a path or file:// URI) are named
        relative to it; without one, by their absolute URI."""
        opts = _RenderOptions(ctypes.sizeof(_RenderOptions), _to_c(root, "root"))
        out = ctypes.c_void_p()
        _check(_lib.jpt_state_render(self._p(), ctypes.byref(opts),
                                     ctypes.byref(out)))
        return _take_string(out)


# ---- The access policy (vfs.h) ---------------------------------------------------

_ACCESS_NAMES = {
    "read": JPT_ACCESS_READ,
    "write": JPT_ACCESS_WRITE,
    "list": JPT_ACCESS_LIST,
    "http": JPT_ACCESS_HTTP,
    "process": JPT_ACCESS_PROCESS,
}


def normalize_path(path: Union[_Text, os.PathLike]) -> str:
    """The normalised form of a requested path, lexically
    (``jpt_policy_normalize_path``): "." and empty names dropped,
    "name/.." removed, "" becomes ".". For checking a request before the
    files backend resolves it (lexical ".." removal is wrong when "name" is
    a symlink). Raises JptError (JPT_ERR_INVALID) for an absolute path or a
    ".." that leaves the root."""
    out = ctypes.c_void_p()
    _check(_lib.jpt_policy_normalize_path(_to_c(path, "path"), ctypes.byref(out)))
    return _take_string(out)


class Policy(_Closable):
    """A VFS tool's access policy (``jpt_policy *``), built from the JSON of
    its ``sandbox`` section; vfs.h documents the keys, the built-in
    sensitive paths and the precedence of the rules.

    ``Policy()`` is the default policy (workspace read-only, no network, no
    processes). ``Policy(sandbox)`` writes a Python value with
    ``json.dumps``; ``Policy(text, raw=True)`` passes JSON text as it is.
    A configuration the library refuses raises JptError (JPT_ERR_INVALID)
    whose message names the key (``jpt_policy_errmsg``). A policy is
    immutable; close it with :meth:`close` or a ``with`` block (garbage
    collection frees it too).
    """

    __slots__ = ("_ptr", "__weakref__")

    def __init__(self, sandbox: Any = None, *, raw: bool = False):
        text = None if sandbox is None else _json_arg(sandbox, raw, "sandbox")
        ptr = _PolicyPtr()
        self._ptr = None
        rc = _lib.jpt_policy_new(text, ctypes.byref(ptr))
        if rc < 0:
            # A refused configuration still comes with a policy holding the
            # message (vfs.h); it is freed here.
            message = _from_c(_lib.jpt_policy_errmsg(ptr)) if ptr else None
            _lib.jpt_policy_free(ptr)
            raise JptError(rc, message)
        self._ptr = ptr

    def check(self, access: Union[int, str], target: Any) -> Tuple[int, str]:
        """The verdict on one request and its reason (``jpt_policy_check``):
        ``(JPT_VERDICT_ALLOW | _DENY | _ASK, "fs.read '.env': denied: …")``.

        ``access`` is a JPT_ACCESS_* constant or "read", "write", "list",
        "http", "process". For the file system kinds, ``target`` is a
        normalised path relative to the workspace root (see
        :func:`normalize_path`; any other form is denied); for "http" the
        URL; for "process" the program and its arguments, as a list of
        strings (written as JSON) or JSON text. Raises JptError
        (JPT_ERR_INVALID) for an unknown access kind or a malformed process
        target."""
        if isinstance(access, str):
            if access not in _ACCESS_NAMES:
                raise JptError(JPT_ERR_INVALID, f"unknown access kind {access!r}")
            access = _ACCESS_NAMES[access]
        if access == JPT_ACCESS_PROCESS and isinstance(target, (list, tuple)):
            target = _json_arg(list(target), False, "target")
        reason = ctypes.c_void_p()
        verdict = _lib.jpt_policy_check(self._p(), _c_int_arg(access, "access"),
                                        _to_c(target, "target"), ctypes.byref(reason))
        text = _take_string(reason)
        _check(verdict)
        return verdict, text

    @property
    def hardlinks_allowed(self) -> bool:
        """Whether the files backend may open files with several hard links
        (``"filesystem": {"hardlinks": "allow"}``;
        ``jpt_policy_hardlinks_allowed``)."""
        return bool(_lib.jpt_policy_hardlinks_allowed(self._p()))

    def close(self) -> None:
        """Frees the policy (``jpt_policy_free``). Closing twice is
        harmless; any other use after closing raises ValueError."""
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr:
            _lib.jpt_policy_free(ptr)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return not self._ptr

    def __del__(self, _free=_lib.jpt_policy_free):
        ptr = getattr(self, "_ptr", None)
        if ptr:
            self._ptr = None
            _free(ptr)

    def __repr__(self) -> str:
        return "<jptool.Policy closed>" if not self._ptr else "<jptool.Policy>"

    def _p(self) -> _PolicyPtr:
        if not self._ptr:
            raise ValueError("operation on a closed Policy")
        return self._ptr


# ---- Registry (registry.h) ----------------------------------------------------

_INT_MIN, _INT_MAX = -(2 ** 31), 2 ** 31 - 1
_KIND_BY_NUMBER = {v: k for k, v in _KIND_NAMES.items()}
_TARGET_NAMES = {JPT_TARGET_USER: "user", JPT_TARGET_ASSISTANT: "assistant"}

# The status a builtin callback returns to the library when it raises an
# exception other than JptError (the exception itself is re-raised later).
_CALLBACK_FAILURE = JPT_ERR_INVALID


def _c_int_arg(value: Any, what: str) -> int:
    """An int argument checked to fit a C int (ctypes would truncate it)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if not _INT_MIN <= value <= _INT_MAX:
        raise ValueError(f"{what} is out of range for a C int: {value}")
    return value


def _address(ptr: Any) -> int:
    """The address a ctypes pointer holds (0 for NULL)."""
    return ctypes.cast(ptr, ctypes.c_void_p).value or 0


def _status_of(result: Any, what: str) -> int:
    """A builtin callback's return value as a status: None is JPT_OK."""
    if result is None:
        return JPT_OK
    return _c_int_arg(result, f"the {what} callback's result")


def reap_stale(path: Union[_Text, os.PathLike]) -> int:
    """Kills the children a crashed host left behind, as recorded in a
    registry's state file (``jpt_registry_reap_stale``; see the
    ``state_file`` option of :class:`Registry`), then removes the file. A
    process is killed only if its pid still has the recorded start time.
    Returns how many were killed; a missing file is not an error (0).
    Raises JptError: JPT_ERR_IO when the file cannot be read or removed,
    JPT_ERR_INVALID, JPT_ERR_NOMEM."""
    killed = ctypes.c_size_t()
    _check(_lib.jpt_registry_reap_stale(_to_c(path, "path"), ctypes.byref(killed)))
    return killed.value


class Registry(_Closable):
    """Tool definitions and the handles of running tools
    (``jpt_registry *``): the tool calls of a model message go in as a
    :class:`Batch` (:meth:`submit`), run as processes (or builtin Python
    callbacks), and come back as results.

    Keyword options (``jpt_registry_options``; None, the default, keeps the
    library's default): ``root`` (workspace root and the tools' working
    directory, an existing directory; default the current directory),
    ``kill_grace_ms`` (SIGTERM to SIGKILL, 5000), ``capture_bytes`` (output
    kept per stream, 1 MiB), ``output_limit`` (bytes of output per result,
    30000), ``settle_ms`` (150), ``yield_ms`` (10000), ``drain_ms`` (100),
    ``max_inquiry_rounds`` (16), ``spool_dir`` (output longer than the
    model reads of it is written whole to a file there, named to the
    model; output that fits leaves none), ``state_file`` (live children
    recorded there for :func:`reap_stale`), ``turn_end_timeout_ms`` (how
    long :meth:`end_turn` waits for handles, 120000), ``max_processes``
    (tool processes alive at once, calls beyond it waiting for a slot;
    default from the fd limit, leaving the host a quarter of it, at least
    32 fds, and at most 256), ``max_events`` (events queued before the
    oldest is dropped, 4096), ``keep_spool`` (JPT_REGISTRY_KEEP_SPOOL: the
    spool files outlive the registry; by default :meth:`close` removes
    them), ``containment`` (what the end of a tool's process kills:
    ``JPT_CONTAIN_AUTO``, the default, a cgroup per process where the
    host's cgroup allows it, else the process group;
    ``JPT_CONTAIN_CGROUP``, ``JPT_CONTAIN_SUBREAPER``, which makes this
    whole process a child subreaper for good, or ``JPT_CONTAIN_SESSION``;
    see registry.h), ``sandbox_mode`` (the OS sandbox of "vfs" tools, and
    of stdio tools whose definition asks for one, where the definition's
    ``"os_sandbox": {"mode"}`` does not say: ``JPT_SANDBOX_REQUIRED``, the
    default, ``JPT_SANDBOX_BEST_EFFORT`` or ``JPT_SANDBOX_OFF``; see
    :class:`VfsHost` for what it confines). Raises JptError(JPT_ERR_INVALID)
    for a negative duration, a root that is not a directory, an unknown
    containment or sandbox mode,
    JPT_ERR_UNSUPPORTED for ``JPT_CONTAIN_CGROUP`` where cgroups are not
    available, JPT_ERR_IO when the epoll fd, timerfd, eventfd or state file
    cannot be made.

    Drive it with :meth:`wait` or :meth:`run` (blocking), or from your own
    loop: poll :meth:`fileno` for reading at most :meth:`timeout`
    milliseconds, then :meth:`dispatch`. The blocking calls release the
    GIL, so :meth:`wakeup` (the one thread-safe method) can interrupt them
    from another thread.

    :meth:`close` (also at the end of a ``with`` block, or on garbage
    collection) ends every live handle (SIGTERM, the grace period, SIGKILL,
    every child reaped before it returns) and frees the registry; the
    Batch, Inquiry and Handle objects it handed out are invalid from then on
    (their methods raise ValueError). Close a registry explicitly: garbage
    collection of a registry kept in a reference cycle may come late, and
    its children live until then.
    """

    def __init__(self, *, root: Optional[Union[_Text, os.PathLike]] = None,
                 kill_grace_ms: Optional[int] = None,
                 capture_bytes: Optional[int] = None,
                 output_limit: Optional[int] = None,
                 settle_ms: Optional[int] = None,
                 yield_ms: Optional[int] = None,
                 drain_ms: Optional[int] = None,
                 max_inquiry_rounds: Optional[int] = None,
                 spool_dir: Optional[Union[_Text, os.PathLike]] = None,
                 state_file: Optional[Union[_Text, os.PathLike]] = None,
                 turn_end_timeout_ms: Optional[int] = None,
                 max_processes: Optional[int] = None,
                 max_events: Optional[int] = None,
                 keep_spool: bool = False,
                 containment: Optional[int] = None,
                 sandbox_mode: Optional[int] = None):
        self._ptr = None
        self._pending: List[BaseException] = []
        self._inquiry_fn: Optional[Callable[["Inquiry"], None]] = None
        self._inquiry_cb = None   # the one C trampoline, kept until close
        self._output_cb: Any = None  # the C output callback, kept until close
        self._policy_fn: Optional[Callable[["PolicyRequest"], None]] = None
        self._policy_cb: Any = None  # the C policy callback, kept until close
        self._builtins: List[Any] = []  # ops structs and C callbacks
        self._batches: "weakref.WeakValueDictionary[int, Batch]" = \
            weakref.WeakValueDictionary()
        self._handles: "weakref.WeakValueDictionary[int, Handle]" = \
            weakref.WeakValueDictionary()
        self._inquiries: "weakref.WeakSet[Inquiry]" = weakref.WeakSet()
        self._depth = 0  # C calls in progress that may run callbacks
        self._closing = False  # inside jpt_registry_free
        self._driver: Any = None  # the jptool.aio.AsyncRegistry driving it, if any

        # The bytes live in these locals (and the structure's own references)
        # for the whole jpt_registry_new call; the library copies them.
        root_b = _to_c(root, "root")
        spool_b = _to_c(spool_dir, "spool_dir")
        state_b = _to_c(state_file, "state_file")
        opts = _RegistryOptions()
        opts.size = ctypes.sizeof(_RegistryOptions)
        opts.root = root_b
        opts.spool_dir = spool_b
        opts.state_file = state_b
        for name, value in (("kill_grace_ms", kill_grace_ms), ("settle_ms", settle_ms),
                            ("yield_ms", yield_ms), ("drain_ms", drain_ms),
                            ("max_inquiry_rounds", max_inquiry_rounds),
                            ("turn_end_timeout_ms", turn_end_timeout_ms),
                            ("containment", containment),
                            ("sandbox_mode", sandbox_mode)):
            if value is not None:
                setattr(opts, name, _c_int_arg(value, name))
        if sandbox_mode is not None and \
                not JPT_SANDBOX_DEFAULT <= sandbox_mode <= JPT_SANDBOX_OFF:
            raise JptError(JPT_ERR_INVALID, f"Registry: unknown sandbox_mode {sandbox_mode} "
                                            "(JPT_SANDBOX_*)")
        if keep_spool:
            opts.flags |= JPT_REGISTRY_KEEP_SPOOL
        for name, value in (("capture_bytes", capture_bytes),
                            ("output_limit", output_limit),
                            ("max_processes", max_processes),
                            ("max_events", max_events)):
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise TypeError(f"{name} must be an int, not {type(value).__name__}")
                if not 0 <= value < 2 ** (8 * ctypes.sizeof(ctypes.c_size_t)):
                    raise ValueError(f"{name} is out of range: {value}")
                setattr(opts, name, value)
        ptr = _RegistryPtr()
        _check(_lib.jpt_registry_new(ctypes.byref(opts), ctypes.byref(ptr)))
        self._ptr = ptr

    # -- lifetime --

    def close(self) -> None:
        """Ends every live handle and frees the registry
        (``jpt_registry_free``); returns once every child is reaped (bounded
        by the kill grace). Batches, inquiries and handles still held become
        invalid. The abort callbacks of live builtin handles run meanwhile
        (their Handle objects stay usable inside them); an exception one of
        them raises, or one a callback raised earlier and no call raised
        yet, is raised once the registry is freed. Closing twice is
        harmless; other use afterwards raises ValueError. Raises
        RuntimeError when called from a callback of this registry (the
        library is still inside it)."""
        self._close()
        self._reraise()

    def shutdown(self) -> bool:
        """Begins ending every live handle without blocking
        (``jpt_registry_shutdown``): calls in flight are cancelled, tool
        processes get SIGTERM and, past the kill grace, SIGKILL. Keep
        dispatching; returns True once every process is reaped (an event
        ``"shutdown"`` is queued then), False before. From the first call on,
        :meth:`submit` and :meth:`end_turn` raise. :meth:`close` then returns
        at once."""
        rc = _lib.jpt_registry_shutdown(self._p())
        if rc == JPT_ERR_AGAIN:
            return False
        _check(rc)
        return True

    def _close(self) -> None:
        ptr = getattr(self, "_ptr", None)
        if not ptr or self._closing:
            return
        if self._depth:
            raise RuntimeError("Registry.close() called from a callback of the "
                               "same registry; close it once the call returns")
        # While the library frees the registry it calls the abort callbacks
        # of live builtin handles: their Handle objects stay usable, all
        # else is refused already.
        self._closing = True
        try:
            with self._busy():
                _lib.jpt_registry_free(ptr)
        finally:
            self._ptr = None
            self._closing = False
            # The library freed the batches and inquiries it still held.
            for obj in list(self._batches.values()):
                obj._ptr = None
            for obj in list(self._handles.values()):
                obj._ptr = None
            for obj in list(self._inquiries):
                obj._ptr = None
            self._batches.clear()
            self._handles.clear()
            self._inquiries.clear()
            # No C code refers to the callbacks any more.
            self._inquiry_fn = None
            self._inquiry_cb = None
            self._output_cb = None
            self._policy_fn = None
            self._policy_cb = None
            self._builtins = []

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return not self._live()

    def __del__(self):
        try:
            self._close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def _live(self) -> bool:
        return bool(self._ptr) and not self._closing

    def __repr__(self) -> str:
        if not self._live():
            return "<jptool.Registry closed>"
        return f"<jptool.Registry fd={self.fileno()}>"

    def _p(self):
        if not self._ptr or self._closing:
            raise ValueError("operation on a closed Registry")
        return self._ptr

    @property
    def errmsg(self) -> str:
        """The message of the last failed call on the registry, or ""
        (``jpt_registry_errmsg``)."""
        return _from_c(_lib.jpt_registry_errmsg(self._p()))

    def _error(self, rc: int) -> JptError:
        msg = _lib.jpt_registry_errmsg(self._ptr) if self._ptr else None
        return JptError(rc, _from_c(msg) or None)

    @contextlib.contextmanager
    def _busy(self):
        """Marks a C call that may run callbacks: closing the registry from
        one of them would free it under the library's feet."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1

    # -- exceptions raised inside callbacks --

    def _stash(self, exc: BaseException) -> None:
        """Keeps an exception a callback raised, for the next driving call
        to raise (it cannot cross the C library)."""
        if self._pending:
            # Only the first is raised; later ones are reported at once.
            print("jptool: another exception in a registry callback:",
                  file=sys.stderr)
            traceback.print_exception(type(exc), exc, exc.__traceback__)
            return
        self._pending.append(exc)

    def _reraise(self) -> None:
        if self._pending:
            exc = self._pending.pop()
            self._pending.clear()
            raise exc

    # -- tools --

    def load_tools(self, config: Union[Dict[str, Any], _Text],
                   replace: bool = False) -> None:
        """Loads tool definitions (``jpt_registry_load_tools``): a dict
        ``{"tools": [definition, …]}`` or its JSON text (str or bytes).
        ``replace=True`` (JPT_LOAD_REPLACE) lets a definition replace a tool
        of the same name. All definitions are checked before any is added:
        on error nothing changes and JptError's message names the tool and
        the field (JPT_ERR_INVALID; JPT_ERR_EXISTS for a duplicate name;
        JPT_ERR_UNSUPPORTED for a "sandbox" key that a stdio tool's OS
        sandbox cannot enforce, which is refused rather than ignored).
        A ``"runtime": "vfs"`` definition (D11) takes ``command``, ``env``,
        ``stateful`` and the keys of a stdio tool but ``pty`` and ``stdin``,
        plus ``sandbox`` (its access policy; absent: the workspace
        read-only), ``files`` (the name of a backend added with
        :meth:`add_files`; absent: the registry's root) and
        ``request_timeout_ms``; registry.h describes them. Its process runs
        in the OS sandbox (:class:`VfsHost` says what it confines) with
        PATH and the variables its ``env.allow`` names, nothing else;
        ``"os_sandbox": {"mode": "required" | "best-effort" | "off",
        "read": [absolute paths]}`` chooses the mode (default: the
        registry's ``sandbox_mode``) and what else it may read and execute.
        A Python tool whose interpreter is not under /usr needs its prefix
        there: ``"os_sandbox": {"read": jptool.python_tool_read_paths()}``
        (see :func:`python_tool_read_paths`)."""
        raw = isinstance(config, (str, bytes, bytearray, memoryview))
        text = _json_arg(config, raw, "config")
        rc = _lib.jpt_registry_load_tools(self._p(), text,
                                          JPT_LOAD_REPLACE if replace else 0)
        if rc < 0:
            raise self._error(rc)

    def tools(self, dialect: Union[str, int] = "openai", flat: bool = False,
              one_of: bool = False, strict: bool = False) -> Any:
        """The tools as the model should see them (``jpt_registry_tools_json``),
        parsed: ``dialect`` is "openai" (Chat Completions: a list of
        ``{"type":"function","function":{…}}``), "openai_responses" (a list
        of ``{"type":"function","name",…,"strict"}``), "anthropic" (a list
        of ``{"name","description","input_schema"}``), "gemini"
        (``{"functionDeclarations":[…]}``, in Gemini's schema subset) or
        "mcp" (``{"tools":[…]}``), or a JPT_DIALECT_* number. By default
        each is what its provider accepts: stateful tools get the flat
        schema. ``one_of=True`` (JPT_DIALECT_ONEOF) gives RFD 009's oneOf
        and RFD 037's anyOf exactly instead, for a provider that takes
        them; ``strict=True`` (JPT_DIALECT_STRICT, OpenAI only) the form of
        OpenAI's strict mode. ``flat=True`` (JPT_DIALECT_FLAT) is the
        default, accepted for compatibility."""
        if isinstance(dialect, str):
            if dialect not in _DIALECTS:
                raise JptError(JPT_ERR_INVALID, f"unknown dialect {dialect!r}")
            number = _DIALECTS[dialect]
        else:
            number = _c_int_arg(dialect, "dialect")
        if flat:
            number |= JPT_DIALECT_FLAT
        if one_of:
            number |= JPT_DIALECT_ONEOF
        if strict:
            number |= JPT_DIALECT_STRICT
        out = ctypes.c_void_p()
        rc = _lib.jpt_registry_tools_json(self._p(), number, ctypes.byref(out))
        text = _take_string(out)
        if rc < 0:
            raise self._error(rc)
        return json.loads(text)

    def add_builtin(self, definition: Union[Dict[str, Any], _Text],
                    start: Callable[["Handle", Dict[str, Any]], Optional[int]],
                    apply: Optional[Callable[["Handle", Any], Optional[int]]] = None,
                    abort: Optional[Callable[["Handle"], None]] = None) -> None:
        """Adds a tool implemented in Python (``jpt_registry_add_builtin``):
        ``definition`` holds the keys of :meth:`load_tools` (a dict or JSON
        text; runtime and command do not apply).

        Callbacks, called inside the registry's calls (dispatch, run, wait,
        call, close, and calls made from a callback):

        - ``start(handle, arguments)``: a call or spawn begins; ``arguments``
          is the parsed arguments object (without action and id).
        - ``apply(handle, input)``: input for a running handle, or the answer
          to its question, parsed from JSON. Required when the tool is
          stateful and declares "apply" (as it does by default); without
          one, an answer to a one-shot tool's question is refused with
          JPT_ERR_UNSUPPORTED.
        - ``abort(handle)``: the handle is being aborted, by the model or
          because the registry is being closed; it is stopped (and
          ``handle`` invalid) once this returns.

        ``start`` and ``apply`` return None (JPT_OK) or a JPT_* status;
        raising JptError returns its status. Any other exception makes the
        callback return JPT_ERR_INVALID to the library (the call fails) and
        raised again when the registry call that ran the callback returns
        (:meth:`dispatch`, :meth:`run`, :meth:`wait`, :meth:`call`,
        :meth:`close`). The tool reports its progress with
        :meth:`Handle.update`, in the callback or later.

        The callbacks stay alive until the registry is closed. Errors as
        :meth:`load_tools`, and JPT_ERR_INVALID for a missing ``apply``.
        """
        if not callable(start):
            raise TypeError("add_builtin: start must be callable")
        for name, fn in (("apply", apply), ("abort", abort)):
            if fn is not None and not callable(fn):
                raise TypeError(f"add_builtin: {name} must be callable or None")
        if isinstance(definition, (str, bytes, bytearray, memoryview)):
            text = _to_c(definition, "definition")
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None  # the library reports it
        else:
            text = _json_arg(definition, False, "definition")
            parsed = definition
        stateful = isinstance(parsed, dict) and parsed.get("stateful") is True
        self_ref = weakref.ref(self)

        def c_start(hptr, args_json, _ud):
            reg = self_ref()
            if reg is None:
                return JPT_ERR_STATE
            h = reg._handle(hptr, stateful)
            try:
                rc = _status_of(start(h, json.loads(args_json)), "start")
            except JptError as e:
                rc = e.status
            except BaseException as e:  # noqa: B902 - it cannot cross C
                reg._stash(e)
                rc = _CALLBACK_FAILURE
            if rc < 0:
                h._retire()  # the library frees a handle that failed to start
            return rc

        def c_apply(hptr, input_json, _ud):
            reg = self_ref()
            if reg is None:
                return JPT_ERR_STATE
            h = reg._handle(hptr, stateful)
            if apply is None:
                rc = JPT_ERR_UNSUPPORTED
            else:
                try:
                    rc = _status_of(apply(h, json.loads(input_json)), "apply")
                except JptError as e:
                    rc = e.status
                except BaseException as e:  # noqa: B902
                    reg._stash(e)
                    rc = _CALLBACK_FAILURE
            if rc < 0 and not stateful:
                h._retire()  # a refused answer ends a one-shot call
            return rc

        def c_abort(hptr, _ud):
            reg = self_ref()
            if reg is None:
                return
            h = reg._handle(hptr, stateful)
            try:
                if abort is not None:
                    abort(h)
            except BaseException as e:  # noqa: B902
                reg._stash(e)
            finally:
                h._retire()  # stopped once this returns

        # The abort callback is always installed, even without `abort`: the
        # Python handle must learn that the C handle stops (and is freed).
        callbacks = (_StartFn(c_start), _ApplyFn(c_apply), _AbortFn(c_abort))
        ops = _BuiltinOps(ctypes.sizeof(_BuiltinOps), *callbacks)
        if apply is None:
            # NULL, so the library refuses a tool that declares "apply" and
            # answers a one-shot tool's question with JPT_ERR_UNSUPPORTED.
            ops.apply = _ApplyFn()
        rc = _lib.jpt_registry_add_builtin(self._p(), text, ctypes.byref(ops), None)
        if rc < 0:
            raise self._error(rc)
        self._builtins.append((ops, callbacks))

    def _handle(self, hptr, stateful: bool) -> "Handle":
        """The Python Handle for a C handle, made on first sight or after
        the previous object was retired."""
        addr = _address(hptr)
        h = self._handles.get(addr)
        if h is None or not h._ptr:
            h = Handle(self, ctypes.cast(addr, _HandlePtr), stateful)
            self._handles[addr] = h
        return h

    # -- calls --

    def submit(self, calls: Union[List[Dict[str, Any]], _Text]) -> "Batch":
        """Submits the tool calls of one model message
        (``jpt_registry_submit``): a list of ``{"id", "name", "arguments"}``
        dicts (arguments a dict or a JSON string holding one), or of the
        calls as a provider sent them (OpenAI Chat Completions
        ``tool_calls`` entries, OpenAI Responses ``function_call`` items,
        Anthropic ``tool_use`` blocks, Gemini ``functionCall`` parts; the
        message's other blocks are skipped), or that list's JSON text. The
        calls start at once and run concurrently. A call that cannot run
        gets an error result; only calls that are not such a list raise
        JptError(JPT_ERR_INVALID), saying where."""
        raw = isinstance(calls, (str, bytes, bytearray, memoryview))
        text = _json_arg(calls, raw, "calls")
        out = _BatchPtr()
        p = self._p()
        with self._busy():
            rc = _lib.jpt_registry_submit(p, text, ctypes.byref(out))
        if rc < 0:
            raise self._error(rc)
        batch = Batch(self, out)
        self._batches[_address(out)] = batch
        return batch

    def call(self, name: _Text, arguments: Any = None, id: _Text = "c1",
             timeout_ms: int = -1) -> Tuple[Any, bool]:
        """Runs one call ``{"id", "name", "arguments"}`` to completion and
        returns ``(content, is_error)`` (``arguments`` None is ``{}``).
        Raises JptError(JPT_ERR_TIMEOUT) when it has not finished after
        ``timeout_ms`` (-1: no limit); the call goes on, its result dropped."""
        calls = [{"id": _from_c(_to_c(id, "id")), "name": _from_c(_to_c(name, "name")),
                  "arguments": {} if arguments is None else arguments}]
        with self.submit(calls) as batch:
            if not self.wait(batch, timeout_ms):
                raise JptError(JPT_ERR_TIMEOUT,
                               f"call {calls[0]['id']!r} of {calls[0]['name']!r} did "
                               f"not finish within {timeout_ms} ms")
            result = batch.results()[0]
        return result["content"], bool(result["is_error"])

    # -- driving the registry --

    def fileno(self) -> int:
        """The epoll fd to poll for reading (``jpt_registry_get_fd``); it
        never changes. With :meth:`timeout` and :meth:`dispatch` it plugs
        the registry into ``selectors`` or asyncio's ``add_reader``."""
        return _lib.jpt_registry_get_fd(self._p())

    def timeout(self) -> int:
        """Milliseconds until :meth:`dispatch` is due
        (``jpt_registry_get_timeout``): 0 when work is ready, -1 when only
        fd activity can make any."""
        return _lib.jpt_registry_get_timeout(self._p())

    def dispatch(self) -> int:
        """Does what is ready without blocking (``jpt_registry_dispatch``):
        reads output, reaps children, fires timers, completes calls, calls
        the inquiry handler. Returns >0 if more work is ready at once (call
        it again before polling), else 0. Raises JptError(JPT_ERR_IO), or
        an exception a callback raised meanwhile."""
        p = self._p()
        with self._busy():
            rc = _lib.jpt_registry_dispatch(p)
        self._reraise()
        if rc < 0:
            raise self._error(rc)
        return rc

    def run(self, timeout_ms: int = -1) -> bool:
        """Polls and dispatches until no call is in flight
        (``jpt_registry_run``): True when idle, False when ``timeout_ms``
        passed first (-1: no limit). Releases the GIL while it polls."""
        p = self._p()
        with self._busy():
            rc = _lib.jpt_registry_run(p, _c_int_arg(timeout_ms, "timeout_ms"))
        self._reraise()
        if rc == JPT_ERR_TIMEOUT:
            return False
        _check(rc)
        return True

    def wait(self, batch: "Batch", timeout_ms: int = -1) -> bool:
        """Polls and dispatches until ``batch`` is done
        (``jpt_registry_wait``): True when done, False when ``timeout_ms``
        passed first (-1: no limit). Raises JptError(JPT_ERR_CANCELLED) when
        a callback closed ``batch`` meanwhile. Releases the GIL while it
        polls."""
        if not isinstance(batch, Batch) or batch._registry is not self:
            raise TypeError("wait: the batch must be one this registry submitted")
        p, b = self._p(), batch._p()
        with self._busy():
            rc = _lib.jpt_registry_wait(p, b, _c_int_arg(timeout_ms, "timeout_ms"))
        self._reraise()
        if rc == JPT_ERR_TIMEOUT:
            return False
        _check(rc)
        return True

    def wakeup(self) -> None:
        """Makes :meth:`fileno` readable, so a thread blocked polling it (or
        in :meth:`run` / :meth:`wait`) returns (``jpt_registry_wakeup``).
        The one method that may be called from any thread, as long as the
        registry is not being closed meanwhile."""
        _check(_lib.jpt_registry_wakeup(self._p()))

    # -- events --

    def events(self) -> Iterator[Dict[str, Any]]:
        """Pops the queued events, oldest first (``jpt_registry_next_event``),
        each as a dict: "type" ("call_done", "batch_done", "output",
        "state" or "shutdown"), "call_id" (call_done), "handle_id" (output,
        state; the call_done of an action), "tool" (all but batch_done and
        shutdown), "state" ("waiting" or "stopped" for a state event) and
        "batch" (the :class:`Batch` of a call_done or batch_done, if it is
        still open); what does not apply is None. A generator: stops when none is left."""
        while True:
            ev = _EventPtr()
            rc = _lib.jpt_registry_next_event(self._p(), ctypes.byref(ev))
            if rc == JPT_ERR_AGAIN:
                return
            _check(rc)
            try:
                etype = _lib.jpt_event_type(ev)
                state = _lib.jpt_event_state(ev)
                batch_addr = _lib.jpt_event_batch(ev)
                event = {
                    "type": _EVENT_NAMES.get(etype, etype),
                    "call_id": _from_c(_lib.jpt_event_call_id(ev)),
                    "handle_id": _from_c(_lib.jpt_event_handle_id(ev)),
                    "tool": _from_c(_lib.jpt_event_tool(ev)),
                    "state": _KIND_BY_NUMBER.get(state, state) if state else None,
                    "batch": self._batches.get(batch_addr) if batch_addr else None,
                }
            finally:
                _lib.jpt_event_free(ev)
            yield event

    # -- questions --

    def set_inquiry_handler(self, fn: Optional[Callable[["Inquiry"], None]]) -> None:
        """Installs ``fn(inquiry)`` as the handler of the questions the model
        did not drive (``jpt_registry_set_inquiry_handler``): those one-shot
        tools ask, those of stateful handles that ask while an ``await``
        watches them (:attr:`Inquiry.handle_id` set), and the turn end's
        question (see :meth:`end_turn`). None removes it (a one-shot tool's
        question then ends its call with an error, and the turn end treats
        "inquire" handles as "await"). The handler answers with
        :meth:`Inquiry.answer` or :meth:`Inquiry.cancel`, at once or later;
        until then the call waits (an Inquiry dropped unanswered leaves its
        call waiting until the registry closes). If the handler raises, the
        inquiry is cancelled (unless it was answered already) and the
        exception is raised again when the registry call that ran the
        handler returns (:meth:`dispatch`, :meth:`run`, :meth:`wait`,
        :meth:`call`). The registry keeps its C callback alive until it is
        closed."""
        p = self._p()
        if fn is None:
            _lib.jpt_registry_set_inquiry_handler(p, _InquiryFn(), None)
            self._inquiry_fn = None
            return
        if not callable(fn):
            raise TypeError("set_inquiry_handler: fn must be callable or None")
        if self._inquiry_cb is None:
            self._inquiry_cb = _InquiryFn(_inquiry_trampoline(weakref.ref(self)))
        self._inquiry_fn = fn
        _lib.jpt_registry_set_inquiry_handler(p, self._inquiry_cb, None)

    # -- streaming output --

    def set_output_handler(self, fn: Optional[Callable[[str, str, bool, int, bytes], None]]
                           ) -> None:
        """Installs ``fn(id, tool, stateful, stream, data)``, called inside
        dispatch with each piece of output a tool process writes, as it is
        read (``jpt_registry_set_output_handler``): ``id`` is the call id of
        a one-shot call or the handle id (``stateful`` True), ``stream``
        JPT_STREAM_STDOUT or JPT_STREAM_STDERR, ``data`` the bytes. It
        consumes nothing: the model's results and fetches read the same
        output. stdio tools' stdout and stderr, vfs tools' stderr. If ``fn``
        raises, the exception is raised again when the registry call that
        ran it returns. None removes it."""
        p = self._p()
        if fn is None:
            _lib.jpt_registry_set_output_handler(p, _OutputFn(), None)
            self._output_cb = None
            return
        if not callable(fn):
            raise TypeError("set_output_handler: fn must be callable or None")
        reg_ref = weakref.ref(self)

        def trampoline(optr, _ud):
            o = optr.contents
            try:
                fn(o.id.decode("utf-8", "replace"), o.tool.decode("utf-8", "replace"),
                   bool(o.stateful), o.stream, ctypes.string_at(o.data, o.len))
            except BaseException as e:  # noqa: B902 - it cannot cross C
                reg = reg_ref()
                if reg is not None:
                    reg._stash(e)

        self._output_cb = _OutputFn(trampoline)
        _lib.jpt_registry_set_output_handler(p, self._output_cb, None)

    # -- VFS tools (D11) --

    def add_files(self, name: _Text, files: "Files") -> None:
        """Names a files backend that ``"runtime": "vfs"`` tool definitions
        may choose with ``"files": name`` (``jpt_registry_add_files``); the
        registry takes a reference, so ``files`` may be closed afterwards.
        Add it before loading the definitions that name it. A name is added
        once. Raises JptError: JPT_ERR_INVALID (a name that is not 1 to 64
        characters of A-Z a-z 0-9 _ -), JPT_ERR_EXISTS, JPT_ERR_NOMEM."""
        if not isinstance(files, Files):
            raise TypeError(f"add_files: files must be a jptool.Files, not "
                            f"{type(files).__name__}")
        rc = _lib.jpt_registry_add_files(self._p(), _to_c(name, "name"), files._p())
        if rc < 0:
            raise self._error(rc)

    def set_policy_handler(self, fn: Optional[Callable[["PolicyRequest"], None]]) -> None:
        """Installs ``fn(request)`` as the policy handler of the registry's
        "vfs" tools (``jpt_registry_set_policy_handler``): each request their
        policy asks about comes as a :class:`PolicyRequest` whose ``id`` is
        the call id of a one-shot call or the handle id of a stateful one;
        the handler answers it at once or later (keeping the object). It
        runs inside the registry's driving calls; if it raises, the request
        is denied (unless answered) and the exception is raised when that
        call returns, as for the inquiry handler. None removes it (asks are
        then denied, the tool told that no one could be asked). The registry
        keeps its C callback alive until it is closed."""
        p = self._p()
        if fn is None:
            _lib.jpt_registry_set_policy_handler(p, _PolicyFn(0), None)
            self._policy_fn = None
            return
        if not callable(fn):
            raise TypeError("set_policy_handler: fn must be callable or None")
        if self._policy_cb is None:
            self._policy_cb = _PolicyFn(_policy_trampoline(weakref.ref(self)))
        self._policy_fn = fn
        _lib.jpt_registry_set_policy_handler(p, self._policy_cb, None)

    # -- notifications and the end of a turn (RFD 037) --

    def take_notifications(self) -> List[Dict[str, Any]]:
        """Takes the notifications queued since the last call and clears
        them (``jpt_registry_take_notifications``), parsed: a list of dicts
        ``{"id", "tool", "state", "elapsed_secs"}`` plus ``"result"`` and
        ``"is_error"`` for a stopped handle, ``"output_preview"`` for a
        running or waiting one; [] when there are none. A registered handle
        leaves one when it changes state while the model is not watching it
        (no action or await on it), as its tool's ``spawn.notifications``
        flags allow; only the latest per handle is kept. The host puts them
        in front of the model's next message (RFD 011); a stopped handle's
        result reaches the model this way, and the handle then goes."""
        out = ctypes.c_void_p()
        rc = _lib.jpt_registry_take_notifications(self._p(), ctypes.byref(out))
        text = _take_string(out)
        if rc < 0:
            raise self._error(rc)
        return json.loads(text)

    def tool_sandbox(self, tool: _Text) -> Tuple[int, str]:
        """What the OS sandbox of ``tool``'s processes enforces here
        (``jpt_registry_tool_sandbox``): the JPT_SANDBOX_ENFORCED_* bits of
        vfs.h (0 for a tool without one) and a sentence saying so and
        naming what is missing. Raises JptError: JPT_ERR_NOT_FOUND (no such
        tool), JPT_ERR_SANDBOX (its mode is "required" and this system
        cannot enforce it; the message says what is lacking)."""
        enforced = _c_uint()
        out = ctypes.c_void_p()
        rc = _lib.jpt_registry_tool_sandbox(self._p(), _to_c(tool, "tool"),
                                            ctypes.byref(enforced), ctypes.byref(out))
        text = _take_string(out)
        if rc < 0:
            raise self._error(rc)
        return enforced.value, text

    def end_turn(self, keep: bool = False, abort: bool = False) -> "Batch":
        """Ends the turn (``jpt_registry_end_turn``, RFD 037 "Turn-end
        behavior"), from the next dispatch: every live handle meets its
        tool's ``spawn.lifecycle.on_turn_end`` policy. "abort": killed, its
        result discarded. "await": waited for, up to ``turn_end_timeout_ms``,
        its result queued as a notification (:meth:`take_notifications`),
        killed past the timeout. "inquire" (the default): one question
        (id "turn_end", target JPT_TARGET_ASSISTANT, tool and call id None)
        goes to the inquiry handler, listing these handles; the answer
        ``{"handles": [{"id", "action": "wait" | "abort"}, …]}`` names
        handles by id, in any order, and chooses per handle. A handle
        answered "wait" (or not mentioned) is waited for and its result
        becomes a result of the returned batch: ``{"id": handle id,
        "content": JSON text of {"id", "state", "result" | "error"},
        "is_error"}``; "abort" kills it. Without a handler, or if the
        question is cancelled, they are treated as "await". The answer is
        checked against the question's schema: an id that is not one of the
        listed handles, or an action other than "wait" and "abort", is
        refused.

        Returns a :class:`Batch` that is done when every handle has settled
        (drive it with :meth:`wait` like any batch); the registry then holds
        no live handle, unless ``keep=True`` (JPT_TURN_KEEP): nothing is
        killed, and handles past their wait stay running. With
        ``abort=True`` (JPT_TURN_ABORT) every live handle is killed at once,
        whatever its policy. Raises JptError: JPT_ERR_STATE while a previous
        turn end is still settling or the registry is shutting down,
        JPT_ERR_INVALID (``keep`` and ``abort`` together), JPT_ERR_NOMEM."""
        out = _BatchPtr()
        p = self._p()
        with self._busy():
            flags = (JPT_TURN_KEEP if keep else 0) | (JPT_TURN_ABORT if abort else 0)
            rc = _lib.jpt_registry_end_turn(p, flags,
                                            ctypes.byref(out))
        if rc < 0:
            raise self._error(rc)
        batch = Batch(self, out)
        self._batches[_address(out)] = batch
        return batch


def _inquiry_trampoline(reg_ref: "weakref.ref[Registry]"):
    """The one C inquiry callback of a registry: it wraps the inquiry and
    calls the registry's current Python handler."""

    def trampoline(qptr, _ud):
        reg = reg_ref()
        if reg is None:  # pragma: no cover - the registry frees first
            return
        try:
            q = Inquiry(reg, qptr)
        except BaseException as e:  # noqa: B902 - it cannot cross C
            _lib.jpt_inquiry_cancel(qptr, b"the host could not read the question")
            reg._stash(e)
            return
        reg._inquiries.add(q)
        fn = reg._inquiry_fn
        try:
            if fn is None:
                q.cancel("no inquiry handler")
                return
            fn(q)
        except BaseException as e:  # noqa: B902
            if q.valid:
                q.cancel(f"the inquiry handler failed: {type(e).__name__}: {e}")
            reg._stash(e)

    return trampoline


class Batch(_Closable):
    """The tool calls of one model message, submitted with
    :meth:`Registry.submit` (``jpt_batch *``), or the results of a turn end
    (:meth:`Registry.end_turn`). Its results come in as the registry is
    driven; :attr:`done` says when all are there. :meth:`cancel` stops the
    calls still in flight.

    :meth:`close` (or the end of a ``with`` block, or garbage collection)
    frees it; calls still in flight keep running and their results are
    dropped. A batch is also invalid once its registry is closed.
    """

    __slots__ = ("_ptr", "_registry", "__weakref__")

    def __init__(self, registry: Registry, ptr):
        """Made by :meth:`Registry.submit`."""
        self._registry = registry
        self._ptr = ptr

    def _p(self):
        if not self._ptr or not self._registry._live():
            raise ValueError("operation on a closed Batch")
        return self._ptr

    @property
    def closed(self) -> bool:
        """True once the batch or its registry was closed."""
        return not self._ptr or not self._registry._live()

    @property
    def done(self) -> bool:
        """True when every call has its result (``jpt_batch_done``)."""
        return bool(_lib.jpt_batch_done(self._p()))

    def results(self, dialect: Union[None, str, int] = None) -> List[Dict[str, Any]]:
        """The results, one per call in the order submitted
        (``jpt_batch_results_json``): dicts ``{"id", "content",
        "is_error"}``. For an action, ``content`` is the handle's response
        as JSON text (``json.loads`` it); for an ``await``, RFD 037's
        ``{"completed": […], "pending": […]}`` (plus ``"timed_out"`` or
        ``"cancelled"``: true) as JSON text. A call still running is
        ``{"id", "content": None, "is_error": False, "pending": True}``.

        With ``dialect`` (``jpt_batch_results_json_as``), in a provider's
        shape: "openai" (``tool`` messages), "openai_responses"
        (``function_call_output`` items), "anthropic" (``tool_result``
        blocks), "gemini" (``functionResponse`` parts), "as_called" (each
        in the shape its call came in), or a JPT_DIALECT_* number. Raises
        JptError(JPT_ERR_STATE) while a call is still running."""
        out = ctypes.c_void_p()
        if dialect is None:
            rc = _lib.jpt_batch_results_json(self._p(), ctypes.byref(out))
        else:
            if isinstance(dialect, str):
                if dialect not in _RESULT_SHAPES:
                    raise JptError(JPT_ERR_INVALID, f"unknown result shape {dialect!r}")
                number = _RESULT_SHAPES[dialect]
            else:
                number = _c_int_arg(dialect, "dialect")
            rc = _lib.jpt_batch_results_json_as(self._p(), number, ctypes.byref(out))
        text = _take_string(out)
        _check(rc)
        return json.loads(text)

    def cancel(self) -> None:
        """Cancels every call of the batch still in flight
        (``jpt_batch_cancel``; RFD 037's cancellation, for a host's Ctrl+C),
        at the registry's next dispatch: one-shot children are killed and
        their calls end with an error that carries the output so far,
        awaits answer with the handles' states and ``"cancelled": true``,
        spawn and apply answer at once with the output so far (their
        handles keep running), calls not yet started never run. Finished calls keep their results; drive the
        registry (:meth:`Registry.wait`) to collect the rest."""
        _lib.jpt_batch_cancel(self._p())

    def cancel_call(self, call_id: _Text) -> None:
        """Cancels one call of the batch, as :meth:`cancel` cancels each
        (``jpt_batch_cancel_call``); the others go on. A finished call keeps
        its result. Raises JptError(JPT_ERR_NOT_FOUND) for an id the batch
        does not hold."""
        _check(_lib.jpt_batch_cancel_call(self._p(), _to_c(call_id, "call_id")))

    def set_call_timeout(self, call_id: Optional[_Text], timeout_ms: int) -> None:
        """A host-side time limit (``jpt_batch_set_call_timeout``):
        ``timeout_ms`` from now the call (None: every call of the batch) is
        cancelled, its result saying that it reached the host's time limit,
        with the output so far. 0 removes the limit."""
        _check(_lib.jpt_batch_set_call_timeout(
            self._p(), _to_c(call_id, "call_id") if call_id is not None else None,
            _c_int_arg(timeout_ms, "timeout_ms")))

    def close(self) -> None:
        """Frees the batch (``jpt_batch_free``). Closing twice is harmless.
        A callback may close it, also while :meth:`Registry.wait` waits on
        it: that wait then raises JptError(JPT_ERR_CANCELLED)."""
        ptr, self._ptr = getattr(self, "_ptr", None), None
        reg = getattr(self, "_registry", None)
        if ptr and reg is not None and reg._live():
            # (Otherwise the registry frees it, or has freed it.)
            reg._batches.pop(_address(ptr), None)
            _lib.jpt_batch_free(ptr)

    def __del__(self):
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __repr__(self) -> str:
        if self.closed:
            return "<jptool.Batch closed>"
        return f"<jptool.Batch {'done' if self.done else 'pending'}>"


class Inquiry:
    """A question the model did not drive (``jpt_inquiry *``), given to the
    handler of :meth:`Registry.set_inquiry_handler`: one a one-shot tool
    asked, one a stateful handle asked while an ``await`` watches it, or
    the turn end's question (:meth:`Registry.end_turn`).

    ``tool``, ``call_id``, ``handle_id`` (the handle whose question it is,
    for a stateful handle asking while awaited; else None),
    ``question`` (RFD 058's parsed ``{"id", "text", "schema", "default"}``)
    and ``target`` (JPT_TARGET_USER or JPT_TARGET_ASSISTANT: who should be
    asked) are copied when the inquiry arrives and stay readable; ``tool``
    and ``call_id`` are None for the turn end's question. Answer with
    :meth:`answer` or end the call with :meth:`cancel`; after either
    succeeds (or the registry is closed) the inquiry is invalid and its
    methods and :attr:`context` raise ValueError.
    """

    __slots__ = ("_ptr", "_registry", "tool", "call_id", "handle_id", "question",
                 "target", "__weakref__")

    def __init__(self, registry: Registry, ptr):
        """Made by the registry for its inquiry handler."""
        self._registry = registry
        self._ptr = None
        self.tool = _from_c(_lib.jpt_inquiry_tool(ptr))
        self.call_id = _from_c(_lib.jpt_inquiry_call_id(ptr))
        self.handle_id = _from_c(_lib.jpt_inquiry_handle_id(ptr))
        self.question = json.loads(_lib.jpt_inquiry_question_json(ptr))
        self.target = _lib.jpt_inquiry_target(ptr)
        self._ptr = ptr

    def _p(self):
        if not self._ptr or not self._registry._live():
            raise ValueError("operation on an answered, cancelled or closed Inquiry")
        return self._ptr

    @property
    def valid(self) -> bool:
        """True until the inquiry is answered, cancelled or its registry
        closed."""
        return bool(self._ptr) and self._registry._live()

    @property
    def context(self) -> State:
        """The blocks the tool showed before the question, as a new
        :class:`State` (``jpt_inquiry_context``; may have no blocks). The
        inquiry owns the C state; the State returned holds its own
        reference (``jpt_state_ref``), so it stays usable after the
        inquiry is gone. Close it when done."""
        return State(_lib.jpt_state_ref(_lib.jpt_inquiry_context(self._p())))

    def _retire(self) -> None:
        self._ptr = None
        self._registry._inquiries.discard(self)

    def answer(self, value: Any, raw: bool = False) -> None:
        """Answers the question (``jpt_inquiry_answer``) with a Python value
        (written with ``json.dumps``), or JSON text with ``raw=True``. The
        answer is checked against the question's schema; on success the
        tool runs again with the answers so far and the inquiry is invalid.
        Raises JptError(JPT_ERR_INVALID) with the library's reason
        (``jpt_inquiry_errmsg``) when the answer is not JSON or does not
        fit, and the inquiry stays valid for another try; raises
        JptError(JPT_ERR_CANCELLED) when the call ended meanwhile (the
        inquiry is then invalid)."""
        p = self._p()
        text = _json_arg(value, raw, "answer")
        with self._registry._busy():
            rc = _lib.jpt_inquiry_answer(p, text)
        if rc == JPT_OK or rc == JPT_ERR_CANCELLED:
            self._retire()
            _check(rc)
            return
        raise JptError(rc, _from_c(_lib.jpt_inquiry_errmsg(p)) or None)

    def cancel(self, reason: Optional[_Text] = None) -> None:
        """Ends the call with an error naming ``reason`` (may be None)
        (``jpt_inquiry_cancel``); the inquiry is invalid afterwards."""
        p = self._p()
        reason_b = _to_c(reason, "reason")
        self._retire()
        with self._registry._busy():
            rc = _lib.jpt_inquiry_cancel(p, reason_b)
        _check(rc)

    @property
    def errmsg(self) -> str:
        """The message of the last failed answer, or ""
        (``jpt_inquiry_errmsg``)."""
        return _from_c(_lib.jpt_inquiry_errmsg(self._p()))

    def __repr__(self) -> str:
        return (f"<jptool.Inquiry {self.tool}/{self.handle_id or self.call_id} "
                f"{self.question.get('id') if isinstance(self.question, dict) else ''}"
                f"{'' if self.valid else ' (done)'}>")


class Handle:
    """One call or stateful handle of a builtin tool (``jpt_handle *``),
    given to the callbacks of :meth:`Registry.add_builtin`. The tool reports
    its progress with :meth:`update`, from the callbacks or later.

    ``id`` (the model's id for a stateful spawn, the call id for a one-shot
    call), ``tool`` and ``stateful`` are copied and stay readable.

    Validity: the library frees a handle without telling the host, so this
    object tracks what may free it and refuses use afterwards (ValueError,
    :attr:`valid` False). A handle is invalid once it reported ``stopped``,
    once its ``abort`` callback returned (the model aborted it, or the
    registry is being closed), once its ``start`` failed, once its registry
    is closed and, for a one-shot tool, once it reported ``waiting`` or its
    ``apply`` failed: the question goes to the inquiry handler, and a call
    that ends there (no handler, too many rounds, cancelled, answer refused)
    frees the handle with no stopped state and no abort callback; an answer
    comes to ``apply`` with a valid Handle again. This is stricter than
    registry.h, which names only the stopped state and the abort callback.
    """

    __slots__ = ("_ptr", "_registry", "id", "tool", "stateful", "__weakref__")

    def __init__(self, registry: Registry, ptr, stateful: bool):
        """Made by the registry for the builtin callbacks."""
        self._registry = registry
        self._ptr = ptr
        self.id = _from_c(_lib.jpt_handle_id(ptr))
        self.tool = _from_c(_lib.jpt_handle_tool(ptr))
        self.stateful = stateful

    def _p(self):
        if not self._ptr or not self._registry._ptr:
            raise ValueError("operation on a finished Handle (stopped, aborted, "
                             "handed to an inquiry, or its registry closed)")
        return self._ptr

    @property
    def valid(self) -> bool:
        """True while :meth:`update` may be called."""
        return bool(self._ptr) and bool(self._registry._ptr)

    def _retire(self) -> None:
        ptr, self._ptr = self._ptr, None
        if ptr:
            addr = _address(ptr)
            if self._registry._handles.get(addr) is self:
                del self._registry._handles[addr]

    def update(self, state: Union[State, Dict[str, Any], _Text]) -> None:
        """Reports the handle's state (``jpt_handle_update``): output so far
        (running), a question (waiting) or the end (stopped), as a
        :class:`State`, or anything :meth:`State.parse` reads (a dict is
        written as JSON first: an RFD 058 envelope, say). The state's content
        is copied; the registry reacts at its next dispatch (at once when
        called from a callback inside one). Raises JptError
        (JPT_ERR_INVALID, JPT_ERR_STATE, JPT_ERR_NOMEM); see the class for
        when the handle becomes invalid."""
        p = self._p()
        own = None
        if not isinstance(state, State):
            if isinstance(state, dict):
                state = json.dumps(state)
            own = state = State.parse(state)
        try:
            kind = state.kind
            ends = kind == JPT_STATE_STOPPED or (kind == JPT_STATE_WAITING
                                                 and not self.stateful)
            addr = _address(p)
            reg = self._registry
            if ends and reg._handles.get(addr) is self:
                # A callback run inside the update (the inquiry handler
                # answering at once, say) gets a fresh Handle object.
                del reg._handles[addr]
            with reg._busy():
                rc = _lib.jpt_handle_update(p, state._p())
            if rc < 0:
                if ends and self._ptr and addr not in reg._handles:
                    reg._handles[addr] = self
                raise JptError(rc)
            if ends:
                self._ptr = None
        finally:
            if own is not None:
                own.close()

    def __repr__(self) -> str:
        return (f"<jptool.Handle {self.tool}/{self.id}"
                f"{'' if self.valid else ' (finished)'}>")


# ---- ProjectFiles (vfs.h, "ProjectFiles (lib/files)") ------------------------------

_FILES_KINDS = {
    JPT_FILES_KIND_FILE: "file",
    JPT_FILES_KIND_DIR: "dir",
    JPT_FILES_KIND_SYMLINK: "symlink",
    JPT_FILES_KIND_OTHER: "other",
}


class _HostBackend:
    """A host-supplied backend's Python side: the handler, and the requests
    it has not answered yet (by address, weakly: one dropped unanswered is
    failed by its finaliser)."""

    __slots__ = ("handler", "requests")

    def __init__(self, handler: Callable[["FilesRequest"], None]):
        self.handler = handler
        self.requests: "weakref.WeakValueDictionary[int, FilesRequest]" = \
            weakref.WeakValueDictionary()


# The library may use a host-supplied backend after its Files object is
# closed (a registry or VFS host holds a reference), so its callbacks cannot
# belong to that object: the one ops table below calls these module-level
# trampolines, never freed, with a key in `ud` naming the backend in
# _HOST_BACKENDS until the library releases it.
_HOST_BACKENDS: Dict[int, _HostBackend] = {}
_host_backend_keys = itertools.count(1)


def _files_call(rptr, method, params, ud):
    backend = _HOST_BACKENDS.get(ud or 0)
    if backend is None:  # pragma: no cover - released backends get no calls
        return JPT_ERR_STATE
    try:
        request = FilesRequest(rptr, _from_c(method), json.loads(params))
    except BaseException:  # noqa: B902 - it cannot cross C
        traceback.print_exc()
        return JPT_ERR_NOMEM
    backend.requests[_address(rptr)] = request
    try:
        backend.handler(request)
    except JptError as e:
        if request.valid:
            request.fail(e.status, e.message)
    except BaseException as e:  # noqa: B902
        # A bug in the handler, not an answer: the tool is told, and the
        # traceback goes where Python reports what it cannot raise.
        if request.valid:
            request.fail(JPT_ERR_IO, f"the host's files handler failed: "
                                     f"{type(e).__name__}: {e}")
        print("jptool: exception in a files handler (Files.host):", file=sys.stderr)
        traceback.print_exception(type(e), e, e.__traceback__)
    return JPT_OK


def _files_cancel(rptr, ud):
    backend = _HOST_BACKENDS.get(ud or 0)
    request = backend.requests.get(_address(rptr)) if backend is not None else None
    if request is not None:
        request.cancelled = True


def _files_release(ud):
    _HOST_BACKENDS.pop(ud or 0, None)


_HOST_OPS = _FilesOps(ctypes.sizeof(_FilesOps), _FilesCallFn(_files_call),
                      _FilesCancelFn(_files_cancel), _FilesReleaseFn(_files_release))


class FilesRequest:
    """One request to a host-supplied backend (:meth:`Files.host`), given to
    its handler: answer it exactly once, at once or later (from the same
    thread), with :meth:`reply` or :meth:`fail` (``jpt_files_request *``).

    ``method`` is the D11 method ("fs.read", "fs.write", "fs.exists",
    "fs.list_dir", "fs.metadata", "fs.delete", "fs.rename", "fs.grep") and
    ``params`` its params as a dict, paths already checked and in their
    normal form. ``cancelled`` becomes True when nobody wants the answer any
    more (the tool went away): the host may stop the work, but must still
    answer. A request dropped unanswered (garbage collected) is failed with
    JPT_ERR_CANCELLED, so the backend can be freed.
    """

    __slots__ = ("_ptr", "method", "params", "cancelled", "__weakref__")

    def __init__(self, ptr, method: str, params: Dict[str, Any]):
        """Made by the backend for its handler."""
        self._ptr = ptr
        self.method = method
        self.params = params
        self.cancelled = False

    @property
    def valid(self) -> bool:
        """True until the request is answered."""
        return bool(self._ptr)

    def _take(self):
        ptr, self._ptr = self._ptr, None
        if not ptr:
            raise ValueError("the FilesRequest was answered already")
        return ptr

    def reply(self, result: Union[Dict[str, Any], _Text]) -> None:
        """Answers with ``result``, D11's result for the method as a dict
        (or its JSON text): ``{"content": "…"}`` for fs.read (with
        ``"encoding": "base64"`` for bytes that are not text),
        ``{}`` for fs.write, fs.delete and fs.rename, ``{"exists": True}``,
        ``{"kind": "file", "size": 13}``, ``{"entries": [{"path": name,
        "kind": "file"}]}``, ``{"matches": […]}``
        (``jpt_files_request_reply``). The request is answered whatever
        happens. Raises JptError(JPT_ERR_INVALID) for a result not of that
        shape (the request then fails with JPT_ERR_PROTOCOL, saying what was
        expected), TypeError/ValueError for a dict that is not JSON (the
        request then fails with JPT_ERR_IO), ValueError when answered
        already."""
        raw = isinstance(result, (str, bytes, bytearray, memoryview))
        try:
            text = _json_arg(result, raw, "result")
        except (TypeError, ValueError) as e:
            self.fail(JPT_ERR_IO, f"the host's result is not JSON: {e}")
            raise
        rc = _lib.jpt_files_request_reply(self._take(), text)
        if rc == JPT_ERR_INVALID:
            raise JptError(rc, f"{self.method}: the result is not of D11's shape for the "
                               f"method; the request failed with JPT_ERR_PROTOCOL")
        _check(rc)

    def fail(self, status: int, message: Optional[_Text] = None) -> None:
        """Fails the request (``jpt_files_request_fail``): ``status`` is a
        JPT_ERR_* code (JPT_ERR_NOT_FOUND, JPT_ERR_DENIED, …; anything not
        negative becomes JPT_ERR_IO) and ``message`` says why; the tool is
        told "<method> '<path>': <message>". Raises ValueError when answered
        already."""
        status = _c_int_arg(status, "status")
        message_b = _to_c(message, "message")
        _check(_lib.jpt_files_request_fail(self._take(), status, message_b))

    def __del__(self, _fail=_lib.jpt_files_request_fail):
        ptr = getattr(self, "_ptr", None)
        if ptr:
            self._ptr = None
            _fail(ptr, JPT_ERR_CANCELLED, b"the host dropped the request unanswered")

    def __repr__(self) -> str:
        return (f"<jptool.FilesRequest {self.method} "
                f"{self.params.get('path', self.params.get('from', ''))!r}"
                f"{'' if self.valid else ' (answered)'}>")


class Files(_Closable):
    """A ProjectFiles backend (``jpt_files *``): the files a VFS tool reads
    and writes, for :class:`VfsHost` (``files=``) and
    :meth:`Registry.add_files`, or used directly. Three kinds:
    :meth:`open_dir` (a directory, every path confined beneath it),
    :meth:`memory` (files in this process), :meth:`host` (methods a Python
    handler serves, at once or later). vfs.h documents the path rules and
    each method's errors.

    Paths are relative to the root, '/'-separated (str, bytes or path-like);
    every failure raises :class:`JptError` with the library's message,
    which names the method and the path as requested, never the root
    ("fs.read 'src/x.rs': not found"). On a host-supplied backend a method
    the handler did not answer within its call raises
    JptError(JPT_ERR_AGAIN) (a VFS host waits instead).

    :meth:`close` (or the end of a ``with`` block, or garbage collection)
    drops this object's reference; a registry or host that took one keeps
    the backend alive.
    """

    __slots__ = ("_ptr", "__weakref__")

    def __init__(self, _ptr):
        """Wraps a reference the caller owns; use open_dir(), memory() or
        host() instead."""
        if not isinstance(_ptr, _FilesPtr) or not _ptr:
            raise TypeError("Files() takes a jpt_files pointer; use Files.open_dir(), "
                            "Files.memory() or Files.host()")
        self._ptr = _ptr

    @classmethod
    def open_dir(cls, root: Union[_Text, os.PathLike], flags: int = 0) -> "Files":
        """The directory ``root``, opened once (``jpt_files_open_dir``);
        ``flags``: JPT_FILES_ALLOW_HARDLINKS (read and write files with
        several hard links), JPT_FILES_FSYNC (fs.write syncs before it
        replaces). Raises JptError: JPT_ERR_NOT_FOUND (no such directory),
        JPT_ERR_IO (not a directory, or it cannot be opened),
        JPT_ERR_INVALID (unknown flags)."""
        root_b = _to_c(root, "root")
        p = _FilesPtr()
        rc = _lib.jpt_files_open_dir(root_b, _c_int_arg(flags, "flags"), ctypes.byref(p))
        if rc < 0:
            raise JptError(rc, f"cannot open the directory {_from_c(root_b)!r}: "
                               f"{strerror(rc)}")
        return cls(p)

    @classmethod
    def memory(cls) -> "Files":
        """An empty memory backend (``jpt_files_new_memory``): the same
        methods, path rules and errors, without symlinks, modes or hard
        links."""
        p = _FilesPtr()
        _check(_lib.jpt_files_new_memory(ctypes.byref(p)))
        return cls(p)

    @classmethod
    def host(cls, handler: Callable[[FilesRequest], None]) -> "Files":
        """A backend whose methods ``handler`` serves (``jpt_files_new``): it
        gets each request as a :class:`FilesRequest` and answers it at once
        or later. A JptError the handler raises fails the request with its
        status and message; any other exception fails it with JPT_ERR_IO
        naming the exception, and its traceback is printed to stderr (it
        cannot cross the library). The handler lives as long as the backend
        does: after this object is closed, while a registry or host still
        holds it."""
        if not callable(handler):
            raise TypeError("Files.host: handler must be callable")
        key = next(_host_backend_keys)
        _HOST_BACKENDS[key] = _HostBackend(handler)
        p = _FilesPtr()
        rc = _lib.jpt_files_new(ctypes.byref(_HOST_OPS), key, ctypes.byref(p))
        if rc < 0:
            _HOST_BACKENDS.pop(key, None)
            raise JptError(rc)
        return cls(p)

    def close(self) -> None:
        """Drops this object's reference (``jpt_files_free``). Closing twice
        is harmless; any other use afterwards raises ValueError."""
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr:
            _lib.jpt_files_free(ptr)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return not self._ptr

    def __del__(self, _free=_lib.jpt_files_free):
        ptr = getattr(self, "_ptr", None)
        if ptr:
            self._ptr = None
            _free(ptr)

    def __repr__(self) -> str:
        return "<jptool.Files closed>" if not self._ptr else "<jptool.Files>"

    def _p(self):
        if not self._ptr:
            raise ValueError("operation on a closed Files")
        return self._ptr

    def _check(self, rc: int) -> None:
        if rc < 0:
            raise JptError(rc, _from_c(_lib.jpt_files_errmsg(self._ptr)) or None)

    def read(self, path: Union[_Text, os.PathLike], limit: int = 0) -> bytes:
        """The file's bytes (fs.read, ``jpt_files_read``), at most ``limit``
        bytes (0: JPT_FILES_READ_LIMIT): JPT_ERR_LIMIT when larger."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit must be a non-negative int, not {limit!r}")
        out, n = ctypes.c_void_p(), ctypes.c_size_t()
        rc = _lib.jpt_files_read(self._p(), _to_c(path, "path"), limit, ctypes.byref(out),
                                 ctypes.byref(n), None)
        self._check(rc)
        try:
            return ctypes.string_at(out, n.value)
        finally:
            _lib.jpt_free(out)

    def write(self, path: Union[_Text, os.PathLike], data: _Text) -> None:
        """Replaces the file's content atomically, creating missing parent
        directories (fs.write, ``jpt_files_write``); str is written as
        UTF-8."""
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        elif isinstance(data, (bytearray, memoryview)):
            data = bytes(data)
        elif not isinstance(data, bytes):
            raise TypeError(f"data must be bytes or str, not {type(data).__name__}")
        self._check(_lib.jpt_files_write(self._p(), _to_c(path, "path"), data, len(data)))

    def exists(self, path: Union[_Text, os.PathLike]) -> bool:
        """Whether something is at ``path``, following symlinks
        (fs.exists)."""
        out = ctypes.c_int()
        self._check(_lib.jpt_files_exists(self._p(), _to_c(path, "path"), ctypes.byref(out)))
        return bool(out.value)

    def metadata(self, path: Union[_Text, os.PathLike]) -> Dict[str, Any]:
        """``{"kind": "file" | "dir" | "other", "size": bytes}``, following
        symlinks (fs.metadata; size 0 for what is not a regular file)."""
        kind, size = ctypes.c_int(), ctypes.c_uint64()
        self._check(_lib.jpt_files_metadata(self._p(), _to_c(path, "path"),
                                            ctypes.byref(kind), ctypes.byref(size)))
        return {"kind": _FILES_KINDS.get(kind.value, "other"), "size": size.value}

    def list_dir(self, path: Union[_Text, os.PathLike] = ".") -> List[Dict[str, str]]:
        """The directory's entries as D11 lists them, ``[{"path": name,
        "kind": "file" | "dir" | "symlink" | "other"}]``, sorted by name
        bytewise; symlinks are not followed (fs.list_dir)."""
        out, n = ctypes.c_void_p(), ctypes.c_size_t()
        self._check(_lib.jpt_files_list_dir(self._p(), _to_c(path, "path"),
                                            ctypes.byref(out), ctypes.byref(n)))
        try:
            entries = ctypes.cast(out, ctypes.POINTER(_FilesEntry))
            return [{"path": entries[i].name.decode("utf-8", "surrogateescape"),
                     "kind": _FILES_KINDS.get(entries[i].kind, "other")}
                    for i in range(n.value)]
        finally:
            _lib.jpt_free(out)

    def delete(self, path: Union[_Text, os.PathLike]) -> None:
        """Removes the file (a symlink itself) at ``path`` (fs.delete)."""
        self._check(_lib.jpt_files_delete(self._p(), _to_c(path, "path")))

    def rename(self, src: Union[_Text, os.PathLike], dst: Union[_Text, os.PathLike]) -> None:
        """Moves ``src`` to ``dst``, creating the parents of ``dst``; an
        existing ``dst`` is never replaced (JPT_ERR_EXISTS) (fs.rename)."""
        self._check(_lib.jpt_files_rename(self._p(), _to_c(src, "src"), _to_c(dst, "dst")))

    def grep(self, pattern: _Text, *, paths: Optional[List[str]] = None,
             extensions: Optional[List[str]] = None, context: Optional[int] = None,
             case_insensitive: Optional[bool] = None, fixed_strings: Optional[bool] = None,
             max_matches: Optional[int] = None) -> Dict[str, Any]:
        """Searches the files (fs.grep, ``jpt_files_grep``; vfs.h says which
        files and how): ``{"matches": [{"path", "lines": [{"line_number",
        "content", "is_match"}]}], "truncated": bool}``. The keywords are
        D11's params and issue 9's; None leaves one out."""
        params: Dict[str, Any] = {"pattern": _from_c(_to_c(pattern, "pattern"))}
        for name, value in (("paths", paths), ("extensions", extensions),
                            ("context", context), ("case_insensitive", case_insensitive),
                            ("fixed_strings", fixed_strings), ("max_matches", max_matches)):
            if value is not None:
                params[name] = value
        out = ctypes.c_void_p()
        rc = _lib.jpt_files_grep(self._p(), _json_arg(params, False, "params"),
                                 ctypes.byref(out))
        found = _take_json(out)
        self._check(rc)
        return found

    def call(self, method: _Text, params: Union[Dict[str, Any], _Text]) -> Dict[str, Any]:
        """Any D11 filesystem method by name (``jpt_files_call``), its params
        a dict or JSON text, its result parsed as a VFS tool gets it (an
        fs.read's content is text, or base64 with ``"encoding"``).
        JPT_ERR_UNSUPPORTED for an unknown method."""
        raw = isinstance(params, (str, bytes, bytearray, memoryview))
        out = ctypes.c_void_p()
        rc = _lib.jpt_files_call(self._p(), _to_c(method, "method"),
                                 _json_arg(params, raw, "params"), ctypes.byref(out))
        got = _take_json(out)
        self._check(rc)
        return got


# ---- The policy prompt (vfs.h, "The policy prompt") ---------------------------------

_DECISIONS = (JPT_DECISION_DENY, JPT_DECISION_ALLOW, JPT_DECISION_ALLOW_ALWAYS)


class PolicyRequest:
    """A VFS tool's request that its access policy asks about
    (``jpt_policy_request *``; D11: "not covered by the sandbox config"),
    given to the policy handler of a :class:`VfsHost` or a
    :class:`Registry`. The tool waits, told ``pending``, until the request
    is answered, at once or later: :meth:`allow`, :meth:`allow_always`,
    :meth:`deny`, or :meth:`answer` with a JPT_DECISION_* value.

    Copied when it arrives and readable afterwards: ``tool`` (the tool's
    name), ``method`` (the D11 method, "fs.write"), ``path`` (as the tool
    asked for it; fs.rename asks about each of its two paths), ``access``
    (JPT_ACCESS_*), ``reason`` (why the policy asks, for a person) and
    ``id`` (the call id of a registry's one-shot call or the handle id of a
    stateful one; None on a :class:`VfsHost`).

    The library keeps the request until it is answered, even past its
    host's or registry's end (the answer then raises
    JptError(JPT_ERR_CANCELLED)). So that a request nobody answers is not
    kept forever, one garbage collected unanswered is denied: a handler
    that answers later must keep the object.
    """

    __slots__ = ("_ptr", "tool", "method", "path", "access", "reason", "id", "__weakref__")

    def __init__(self, ptr):
        """Made for the policy handler."""
        self._ptr = None
        self.tool = _from_c(_lib.jpt_policy_request_tool(ptr))
        self.method = _from_c(_lib.jpt_policy_request_method(ptr))
        self.path = _from_c(_lib.jpt_policy_request_path(ptr))
        self.access = _lib.jpt_policy_request_access(ptr)
        self.reason = _from_c(_lib.jpt_policy_request_reason(ptr))
        self.id = _from_c(_lib.jpt_policy_request_id(ptr))
        self._ptr = ptr

    @property
    def valid(self) -> bool:
        """True until the request is answered."""
        return bool(self._ptr)

    def answer(self, decision: int, reason: Optional[_Text] = None) -> None:
        """Decides the request (``jpt_policy_request_answer``):
        JPT_DECISION_DENY (the tool gets -32001, with ``reason`` added to the
        message when given), JPT_DECISION_ALLOW (this request only) or
        JPT_DECISION_ALLOW_ALWAYS (this request and every later one of this
        tool run for the same access to the same path). The tool hears of
        it from the next dispatch. The request is answered afterwards, even
        when this raises JptError(JPT_ERR_CANCELLED): the tool's request is
        gone (the tool ended or was stopped first). Raises
        JptError(JPT_ERR_INVALID) for an unknown decision (the request stays
        unanswered), ValueError when answered already."""
        if isinstance(decision, bool) or decision not in _DECISIONS:
            raise JptError(JPT_ERR_INVALID, f"unknown policy decision {decision!r} "
                                            "(JPT_DECISION_DENY, _ALLOW or _ALLOW_ALWAYS)")
        reason_b = _to_c(reason, "reason")
        ptr, self._ptr = self._ptr, None
        if not ptr:
            raise ValueError("the PolicyRequest was answered already")
        rc = _lib.jpt_policy_request_answer(ptr, decision, reason_b)
        if rc == JPT_ERR_CANCELLED:
            raise JptError(rc, f"{self.method} '{self.path}': the tool's request is gone "
                               "(the tool ended or was stopped first)")
        _check(rc)

    def allow(self) -> None:
        """:meth:`answer` with JPT_DECISION_ALLOW."""
        self.answer(JPT_DECISION_ALLOW)

    def allow_always(self) -> None:
        """:meth:`answer` with JPT_DECISION_ALLOW_ALWAYS."""
        self.answer(JPT_DECISION_ALLOW_ALWAYS)

    def deny(self, reason: Optional[_Text] = None) -> None:
        """:meth:`answer` with JPT_DECISION_DENY and ``reason``."""
        self.answer(JPT_DECISION_DENY, reason)

    def __del__(self, _answer=_lib.jpt_policy_request_answer):
        ptr = getattr(self, "_ptr", None)
        if ptr:
            self._ptr = None
            _answer(ptr, JPT_DECISION_DENY, b"the host dropped the request unanswered")

    def __repr__(self) -> str:
        return (f"<jptool.PolicyRequest {self.tool}: {self.method} {self.path!r}"
                f"{'' if self.valid else ' (answered)'}>")


def _policy_trampoline(owner_ref: "weakref.ref[Any]"):
    """The C policy callback of a registry or VFS host (``owner``, which has
    ``_policy_fn`` and ``_stash``): it wraps the request and calls the
    current Python handler. A handler that raises denies the request (unless
    it answered it) and its exception is raised by the owner's driving call
    that ran it."""

    def trampoline(rptr, _ud):
        owner = owner_ref()
        try:
            request = PolicyRequest(rptr)
        except BaseException as e:  # noqa: B902 - it cannot cross C
            _lib.jpt_policy_request_answer(rptr, JPT_DECISION_DENY,
                                           b"the host could not read the request")
            if owner is not None:
                owner._stash(e)
            return
        fn = owner._policy_fn if owner is not None else None
        if fn is None:  # pragma: no cover - the C handler is removed with it
            request.deny("no policy handler")
            return
        try:
            fn(request)
        except BaseException as e:  # noqa: B902
            if request.valid:
                try:
                    request.deny(f"the policy handler failed: {type(e).__name__}: {e}")
                except JptError:
                    pass  # the tool's request is gone: nothing to deny
            owner._stash(e)

    return trampoline


# ---- The VFS host (vfs.h, "A standalone host") -----------------------------------------


def python_tool_read_paths() -> List[str]:
    """The paths a VFS tool written in Python needs to read beside what
    the OS sandbox allows anyway (/usr, /lib, …), when it runs on this
    interpreter (``sys.executable``) and imports :mod:`jptool.vfs_tool`
    as this process imported jptool: pass them as
    ``VfsHost(sandbox_read=…)`` or in a definition's ``"os_sandbox":
    {"read": […]}``. Without them an interpreter outside /usr (pyenv,
    /opt) cannot even load its standard library in the sandbox, nor a
    tool in a virtualenv import its packages. In this order, absolute and
    with symlinks resolved (the sandbox grants what a path resolves to),
    each once, and none beneath another of the list:

      - ``sys.base_prefix`` and ``sys.base_exec_prefix``: the interpreter,
        its shared library and its standard library;
      - ``sys.prefix`` and ``sys.exec_prefix``: a virtualenv's own
        site-packages, when this is one;
      - the directory this jptool package was imported from (its sys.path
        entry);
      - the directory of the libjptool this process loaded
        (:data:`library_path`), when that is a path rather than the
        installed soname.

    Not included: the tool's script when it is not its program (argv[0]),
    anything it imports from elsewhere, and its environment. A sandboxed
    tool's environment is PATH alone (in a registry, with what its
    definition's ``env`` names), so a tool that imports jptool from
    outside its interpreter's site-packages needs PYTHONPATH, and one
    whose libjptool is not installed needs JPTOOL_LIBRARY: set them in the
    definition's ``env`` (``"allow"`` or ``"set"``) or, for a
    :class:`VfsHost`, on the command line (``["env",
    "JPTOOL_LIBRARY=…", sys.executable, script]``)."""
    candidates = [sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix,
                  os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    if os.sep in library_path:
        candidates.append(os.path.dirname(os.path.abspath(library_path)))
    paths = list(dict.fromkeys(os.path.realpath(p) for p in candidates))
    return [p for p in paths
            if not any(p.startswith(q.rstrip(os.sep) + os.sep) for q in paths if q != p)]


class VfsHost(_Closable):
    """Serves one VFS tool (D11) from the host's own loop, without a
    registry (``jpt_vfs_host *``): the tool's JSON-RPC requests go through
    ``files`` after the policy of ``sandbox``, and its ``result``,
    ``error`` and ``state`` notifications become :class:`State` objects
    (:meth:`state`).

    Keyword options (``jpt_vfs_host_options``; None keeps the library's
    default): ``files`` (a :class:`Files` backend; the host takes a
    reference) or ``root`` (a directory, opened as one; default the current
    directory), not both; ``sandbox`` (the tool's D11 ``sandbox`` section,
    a dict or its JSON text; default: the workspace read-only);
    ``request_timeout_ms`` (no request nor result for this long stops the
    tool; 60000, -1 for none); ``kill_grace_ms`` (after ``cancel``, before
    SIGTERM, and again before SIGKILL; 5000); ``max_message`` (longest line
    from the tool; 10 MiB + 64 KiB); ``max_violations`` (protocol
    violations tolerated; 16); ``sandbox_mode`` (the spawned tool's OS
    sandbox, below: ``JPT_SANDBOX_REQUIRED``, the default,
    ``JPT_SANDBOX_BEST_EFFORT`` or ``JPT_SANDBOX_OFF``); ``sandbox_read``
    (absolute paths, str, bytes or path objects, that the spawned tool may
    also read and execute; default none). Raises JptError(JPT_ERR_INVALID)
    for a bad option or a sandbox the policy refuses (the message names the
    key), JPT_ERR_IO or JPT_ERR_NOT_FOUND when ``root`` cannot be opened.

    The OS sandbox (vfs.h, "The OS sandbox"): a tool :meth:`spawn` starts
    runs confined by the kernel (Landlock, a seccomp filter,
    no_new_privs), so that the protocol is its only way to the files. It
    may read and execute /usr, /bin, /sbin, /lib*, a few files of /etc,
    its own program file and the ``sandbox_read`` paths, and nothing else:
    not the workspace (an ``open()`` of a workspace file fails with
    PermissionError in a Python tool), not home, not /proc. It may create
    no socket. Its environment is PATH alone: give it anything else on its
    command line (``["env", "NAME=value", program, …]``). In the default
    mode :meth:`spawn` raises JptError(JPT_ERR_SANDBOX) on a system that
    cannot enforce it; :meth:`sandbox` says what was enforced. A Python
    tool whose interpreter is not under /usr (pyenv, a build in /opt)
    cannot even start unless the interpreter's prefix is in
    ``sandbox_read``, nor one in a virtualenv import its packages without
    the virtualenv's: :func:`python_tool_read_paths` gives the paths a
    tool that imports :mod:`jptool.vfs_tool` needs. A tool on attached fds
    (:meth:`attach`) is confined by whatever the application did.

    Start the tool with :meth:`spawn` or :meth:`attach`, then drive the host
    with :meth:`run` (blocking, releases the GIL) or from your own loop:
    poll :meth:`fileno` for reading at most :meth:`timeout` milliseconds,
    then :meth:`dispatch`. A stateful tool takes :meth:`apply`;
    :meth:`cancel` stops one. Requests the policy asks about go to the
    handler of :meth:`set_policy_handler` (without one they are denied).

    The policy handler runs inside :meth:`dispatch` and :meth:`run`; an
    exception it raises cannot cross the library: the request is denied
    and the exception is raised when that call returns.

    :meth:`close` (or the end of a ``with`` block, or garbage collection)
    kills a tool still running (SIGKILL), reaps it and frees the host; not
    from inside the policy handler (RuntimeError).
    """

    __slots__ = ("_ptr", "_policy_fn", "_policy_cb", "_pending", "_depth", "_driver",
                 "__weakref__")

    def __init__(self, *, files: Optional[Files] = None,
                 root: Optional[Union[_Text, os.PathLike]] = None,
                 sandbox: Union[None, Dict[str, Any], _Text] = None,
                 request_timeout_ms: Optional[int] = None,
                 kill_grace_ms: Optional[int] = None,
                 max_message: Optional[int] = None,
                 max_violations: Optional[int] = None,
                 sandbox_mode: Optional[int] = None,
                 sandbox_read: Optional[Iterable[Union[_Text, os.PathLike]]] = None):
        self._ptr = None
        self._policy_fn: Optional[Callable[[PolicyRequest], None]] = None
        self._policy_cb: Any = None  # the C policy callback, kept until close
        self._pending: List[BaseException] = []
        self._depth = 0
        self._driver: Any = None  # the jptool.aio.AsyncVfsHost driving it, if any
        if files is not None and root is not None:
            raise JptError(JPT_ERR_INVALID, "VfsHost: give files or root, not both")
        if files is not None and not isinstance(files, Files):
            raise TypeError(f"VfsHost: files must be a jptool.Files, not "
                            f"{type(files).__name__}")
        sandbox_b = None
        if sandbox is not None:
            raw = isinstance(sandbox, (str, bytes, bytearray, memoryview))
            sandbox_b = _json_arg(sandbox, raw, "sandbox")
            # jpt_vfs_host_new only logs why it refuses a sandbox (there is
            # no host to ask): the policy says it here, naming the key.
            try:
                Policy(sandbox_b, raw=True).close()
            except JptError as e:
                raise JptError(e.status, f"VfsHost: the sandbox: {e.message}") from None
        root_b = _to_c(root, "root")
        opts = _VfsHostOptions()
        opts.size = ctypes.sizeof(_VfsHostOptions)
        opts.files = files._p() if files is not None else None
        opts.root = root_b
        opts.sandbox_json = sandbox_b
        if request_timeout_ms is not None:
            opts.request_timeout_ms = _c_int_arg(request_timeout_ms, "request_timeout_ms")
            if request_timeout_ms < -1:
                raise JptError(JPT_ERR_INVALID, "VfsHost: request_timeout_ms must be -1 "
                                                "(none), 0 (the default) or more")
        if kill_grace_ms is not None:
            opts.kill_grace_ms = _c_int_arg(kill_grace_ms, "kill_grace_ms")
            if kill_grace_ms < 0:
                raise JptError(JPT_ERR_INVALID, "VfsHost: kill_grace_ms must not be negative")
        for name, value, bits in (("max_message", max_message, 8 * ctypes.sizeof(_c_size)),
                                  ("max_violations", max_violations, 32)):
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise TypeError(f"{name} must be an int, not {type(value).__name__}")
                if not 0 <= value < 2 ** bits:
                    raise ValueError(f"{name} is out of range: {value}")
                setattr(opts, name, value)
        if sandbox_mode is not None:
            opts.sandbox_mode = _c_int_arg(sandbox_mode, "sandbox_mode")
            if not JPT_SANDBOX_DEFAULT <= sandbox_mode <= JPT_SANDBOX_OFF:
                raise JptError(JPT_ERR_INVALID, f"VfsHost: unknown sandbox_mode "
                                                f"{sandbox_mode} (JPT_SANDBOX_*)")
        # The array lives here for the whole jpt_vfs_host_new call, which
        # copies the paths.
        read_array = None
        if sandbox_read is not None:
            if isinstance(sandbox_read, (str, bytes, os.PathLike)):
                raise TypeError("VfsHost: sandbox_read must be a list of paths, not one path")
            paths: List[bytes] = []
            for i, item in enumerate(sandbox_read):
                path = _to_c(item, f"sandbox_read[{i}]")
                if path is None:
                    raise TypeError(f"VfsHost: sandbox_read[{i}] is None, not a path")
                if not path.startswith(b"/"):
                    raise JptError(JPT_ERR_INVALID, f"VfsHost: sandbox_read[{i}]: "
                                                    f"{_from_c(path)!r} is not an absolute "
                                                    "path")
                paths.append(path)
            read_array = (ctypes.c_char_p * (len(paths) + 1))(*paths, None)
            opts.sandbox_read = read_array
        ptr = _VfsHostPtr()
        rc = _lib.jpt_vfs_host_new(ctypes.byref(opts), ctypes.byref(ptr))
        if rc < 0:
            if root_b is not None and rc in (JPT_ERR_IO, JPT_ERR_NOT_FOUND):
                raise JptError(rc, f"VfsHost: cannot open the root {_from_c(root_b)!r}: "
                                   f"{strerror(rc)}")
            raise JptError(rc)
        self._ptr = ptr

    # -- lifetime --

    def close(self) -> None:
        """Kills a tool still running (SIGKILL), reaps it and frees the host
        (``jpt_vfs_host_free``). Policy requests still unanswered stay
        valid; answering them raises JptError(JPT_ERR_CANCELLED). Closing
        twice is harmless; other use afterwards raises ValueError. Raises
        RuntimeError from inside the policy handler."""
        ptr = getattr(self, "_ptr", None)
        if not ptr:
            return
        if self._depth:
            raise RuntimeError("VfsHost.close() called from its policy handler; close "
                               "it once the call returns")
        self._ptr = None
        _lib.jpt_vfs_host_free(ptr)
        # No C code refers to the callback any more.
        self._policy_fn = None
        self._policy_cb = None

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return not self._ptr

    def __del__(self):
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __repr__(self) -> str:
        if not self._ptr:
            return "<jptool.VfsHost closed>"
        return f"<jptool.VfsHost fd={self.fileno()}{' done' if self.done else ''}>"

    def _p(self):
        if not self._ptr:
            raise ValueError("operation on a closed VfsHost")
        return self._ptr

    @property
    def errmsg(self) -> str:
        """The message of the last failed call, or "" (``jpt_vfs_host_errmsg``)."""
        return _from_c(_lib.jpt_vfs_host_errmsg(self._p())) or ""

    def _error(self, rc: int) -> JptError:
        return JptError(rc, _from_c(_lib.jpt_vfs_host_errmsg(self._ptr)) or None)

    @contextlib.contextmanager
    def _busy(self):
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1

    def _stash(self, exc: BaseException) -> None:
        """Keeps an exception the policy handler raised, for the driving
        call to raise."""
        if self._pending:
            print("jptool: another exception in a VFS host's policy handler:",
                  file=sys.stderr)
            traceback.print_exception(type(exc), exc, exc.__traceback__)
            return
        self._pending.append(exc)

    def _reraise(self) -> None:
        if self._pending:
            exc = self._pending.pop()
            raise exc

    # -- the tool --

    def spawn(self, argv: List[Union[_Text, os.PathLike]],
              tool: Union[Dict[str, Any], _Text]) -> None:
        """Starts the tool (``jpt_vfs_host_spawn``): ``argv`` (argv[0]
        looked up in PATH unless it has a '/') with its stdin and stdout as
        the protocol's pipes and its stderr kept (its end is quoted when the
        tool fails); the host then writes ``init`` with ``tool``, a dict
        ``{"name", "arguments", "answers", "options"}`` or its JSON text
        (name required; the others objects, default {}). One tool per host.
        Raises JptError: JPT_ERR_STATE (a tool was started already),
        JPT_ERR_INVALID (``tool``), JPT_ERR_NOT_FOUND (no such program),
        JPT_ERR_SANDBOX (the sandbox mode is required and this system
        cannot enforce it; the message names what it lacks), JPT_ERR_IO,
        with the host's message. The tool runs in the OS sandbox (see the
        class) with PATH as its whole environment."""
        if isinstance(argv, (str, bytes)) or not argv:
            raise TypeError("spawn: argv must be a non-empty list of strings")
        items = [_to_c(a, f"argv[{i}]") for i, a in enumerate(argv)]
        c_argv = (ctypes.c_char_p * (len(items) + 1))(*items, None)
        text = _json_arg(tool, isinstance(tool, (str, bytes, bytearray, memoryview)), "tool")
        rc = _lib.jpt_vfs_host_spawn(self._p(), c_argv, text)
        if rc < 0:
            raise self._error(rc)

    def attach(self, read_fd: int, write_fd: int, tool: Union[Dict[str, Any], _Text]) -> None:
        """Serves a tool the application started itself
        (``jpt_vfs_host_attach``): the host reads the tool's messages from
        ``read_fd`` and writes to ``write_fd`` (both made non-blocking),
        then writes ``init`` with ``tool`` as :meth:`spawn` does. The fds
        become the host's: it closes them when the tool ends (``read_fd``
        reaches its end) or the host is closed. On error they stay the
        caller's. Raises as :meth:`spawn`, and JPT_ERR_INVALID for a
        negative fd."""
        text = _json_arg(tool, isinstance(tool, (str, bytes, bytearray, memoryview)), "tool")
        rc = _lib.jpt_vfs_host_attach(self._p(), _c_int_arg(read_fd, "read_fd"),
                                      _c_int_arg(write_fd, "write_fd"), text)
        if rc < 0:
            raise self._error(rc)

    def apply(self, input: Any, raw: bool = False) -> None:
        """Gives a stateful tool its next input (``jpt_vfs_host_apply``,
        D11's ``apply`` notification): any Python value, written with
        ``json.dumps``, or JSON text with ``raw=True``. Raises
        JptError(JPT_ERR_STATE) when no tool runs, JPT_ERR_INVALID for
        text that is not JSON."""
        rc = _lib.jpt_vfs_host_apply(self._p(), _json_arg(input, raw, "input"))
        if rc < 0:
            raise self._error(rc)

    def cancel(self) -> None:
        """Cancels the tool (``jpt_vfs_host_cancel``): D11's ``cancel``
        notification, SIGTERM after the kill grace if it has not ended,
        SIGKILL after another (a tool on attached fds has its fds closed
        instead); its requests waiting for the policy handler are answered
        -32005. Raises JptError(JPT_ERR_STATE) when no tool runs."""
        rc = _lib.jpt_vfs_host_cancel(self._p())
        if rc < 0:
            raise self._error(rc)

    def state(self) -> Optional[State]:
        """The tool's latest state as a new :class:`State`
        (``jpt_vfs_host_state``; close it when done): running or waiting as
        its ``state`` notifications said, stopped once it has ended — its
        result, or an error state saying why it failed (it exited without a
        result, with the end of its stderr; it broke the protocol; it was
        silent past the request timeout). None while the tool has reported
        nothing. Raises JptError(JPT_ERR_STATE) when no tool was started."""
        out = _StatePtr()
        rc = _lib.jpt_vfs_host_state(self._p(), ctypes.byref(out))
        if rc == JPT_ERR_AGAIN:
            return None
        if rc < 0:
            raise self._error(rc)
        return State(out)

    def sandbox(self) -> Tuple[int, str]:
        """What the OS sandbox of the spawned tool enforces
        (``jpt_vfs_host_sandbox``): the JPT_SANDBOX_ENFORCED_* bits (0 with
        ``JPT_SANDBOX_OFF``) and a sentence saying so and naming what this
        system lacks ("vfs profile, Landlock ABI 7: enforced files, …").
        Also after the tool ended. Raises JptError(JPT_ERR_STATE) when no
        tool was spawned (none yet, or one attached)."""
        enforced = _c_uint()
        report = _c_str()
        rc = _lib.jpt_vfs_host_sandbox(self._p(), ctypes.byref(enforced), ctypes.byref(report))
        if rc < 0:
            raise self._error(rc)
        return enforced.value, _from_c(report.value) or ""

    @property
    def done(self) -> bool:
        """True once the tool has ended: its process reaped, or its fds
        closed (``jpt_vfs_host_done``)."""
        return bool(_lib.jpt_vfs_host_done(self._p()))

    def set_policy_handler(self, fn: Optional[Callable[[PolicyRequest], None]]) -> None:
        """Installs ``fn(request)`` as the policy handler
        (``jpt_vfs_host_set_policy_handler``): each request the tool's
        policy asks about comes as a :class:`PolicyRequest`, which the
        handler answers at once or later (keeping the object). None removes
        it: asks are then denied, and the tool is told that no one could be
        asked. The host keeps the C callback until it is closed."""
        p = self._p()
        if fn is None:
            _lib.jpt_vfs_host_set_policy_handler(p, _PolicyFn(0), None)
            self._policy_fn = None
            return
        if not callable(fn):
            raise TypeError("set_policy_handler: fn must be callable or None")
        if self._policy_cb is None:
            self._policy_cb = _PolicyFn(_policy_trampoline(weakref.ref(self)))
        self._policy_fn = fn
        _lib.jpt_vfs_host_set_policy_handler(p, self._policy_cb, None)

    # -- driving the host --

    def fileno(self) -> int:
        """The host's epoll fd to poll for reading
        (``jpt_vfs_host_get_fd``); it never changes."""
        return _lib.jpt_vfs_host_get_fd(self._p())

    def timeout(self) -> int:
        """Milliseconds until :meth:`dispatch` is due
        (``jpt_vfs_host_get_timeout``): 0 when work is ready, -1 when only
        fd activity can make any."""
        return _lib.jpt_vfs_host_get_timeout(self._p())

    def dispatch(self) -> int:
        """Does what is ready without blocking (``jpt_vfs_host_dispatch``):
        reads and answers the tool's requests, calls the policy handler,
        fires timers, reaps the tool. Returns >0 if more work is ready at
        once (call it again before polling), else 0. Raises
        JptError(JPT_ERR_IO), or an exception the policy handler raised."""
        p = self._p()
        with self._busy():
            rc = _lib.jpt_vfs_host_dispatch(p)
        self._reraise()
        if rc < 0:
            raise self._error(rc)
        return rc

    def run(self, timeout_ms: int = -1) -> bool:
        """Polls and dispatches until the tool has ended
        (``jpt_vfs_host_run``): True then, False when ``timeout_ms`` passed
        first (-1: no limit). Releases the GIL while it polls. Raises
        JptError(JPT_ERR_STATE) when no tool was started, JPT_ERR_IO, or an
        exception the policy handler raised."""
        p = self._p()
        with self._busy():
            rc = _lib.jpt_vfs_host_run(p, _c_int_arg(timeout_ms, "timeout_ms"))
        self._reraise()
        if rc == JPT_ERR_TIMEOUT:
            return False
        if rc < 0:
            raise self._error(rc)
        return True
