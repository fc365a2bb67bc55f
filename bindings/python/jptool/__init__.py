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

The code lives in modules by concern, and this module re-exports their
public names (import them from here): ``constants`` (the headers'
``JPT_*``), ``errors`` (:class:`JptError`), ``common`` (version, log,
helpers), ``state``, ``registry``, ``files`` (the ProjectFiles backends),
``vfs`` (the access policy, the policy prompt, the standalone host),
``sandbox`` (what a Python VFS tool needs in the OS sandbox); ``_lib``
loads the library and declares its functions for ctypes.

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
handle's turn-end policy and returns the results as a batch, which
:meth:`Registry.take_turn_text` gives the model as text, with the
notifications, before its next message; a stateful
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
to read, :func:`python_tool_env` the environment it needs to import jptool
as this process did. vfs_tool.h's functions are not bound: a Python tool uses
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

# The C names of the headers' constants (JPT_*), each listed in __all__ below.
from .constants import *  # noqa: F401,F403
from .errors import JptError, last_error, status_name, strerror
from .common import mime_fence_lang, schema_check, set_log, uri_canonicalize, version
from .state import State
from .registry import Batch, Handle, Inquiry, Registry, reap_stale
from .files import Files, FilesRequest
from .vfs import Policy, PolicyRequest, VfsHost, normalize_path
from .sandbox import python_tool_env, python_tool_read_paths
from ._lib import library_path

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
    "last_error",
    "status_name",
    "uri_canonicalize",
    "mime_fence_lang",
    "schema_check",
    "Policy",
    "normalize_path",
    "python_tool_env",
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
    "JPT_FILES_GREP_MAX_SKIPPED",
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
    "JPT_VFS_PROCESS_MAX_RUNNING",
    "JPT_VFS_PROCESS_MAX_WAITING",
    "JPT_VFS_RUN_SCAN_MAX",
    "JPT_VFS_RUN_COVER_MAX",
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
    "JPT_SANDBOX_ENFORCED_CAPABILITIES",
    "JPT_SANDBOX_ENFORCED_METADATA",
    "JPT_SANDBOX_ENFORCED_MOUNTS",
    "JPT_SANDBOX_ENFORCED_PROCESSES",
]
