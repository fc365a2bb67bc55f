"""VFS tools from the host's side (vfs.h, D11): the access policy
(:class:`Policy`), the policy prompt (:class:`PolicyRequest`) and the
standalone host (:class:`VfsHost`)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import traceback
import weakref
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional,
                    Protocol, Tuple, Union)

from ._lib import _PolicyFn, _PolicyPtr, _StatePtr, _VfsHostOptions, _VfsHostPtr, _c_size, \
    _c_str, _c_uint, lib
from ._util import (_Closable, _Path, _Text, _c_int_arg, _from_c, _json_arg, _set,
                    _take_string, _take_text, _to_c)
from .constants import (JPT_ACCESS_HTTP, JPT_ACCESS_LIST, JPT_ACCESS_PROCESS, JPT_ACCESS_READ,
                        JPT_ACCESS_WRITE, JPT_DECISION_ALLOW, JPT_DECISION_ALLOW_ALWAYS,
                        JPT_DECISION_DENY, JPT_ERR_AGAIN, JPT_ERR_CANCELLED, JPT_ERR_INVALID,
                        JPT_ERR_TIMEOUT, JPT_SANDBOX_DEFAULT, JPT_SANDBOX_OFF)
from .errors import JptError, _check, _check_new, last_error
from .files import Files
from .state import State

if TYPE_CHECKING:
    from ._lib import _Callback, _PolicyP, _PolicyRequestP, _VfsHostP

# ---- The access policy (vfs.h) ---------------------------------------------------

_ACCESS_NAMES = {
    "read": JPT_ACCESS_READ,
    "write": JPT_ACCESS_WRITE,
    "list": JPT_ACCESS_LIST,
    "http": JPT_ACCESS_HTTP,
    "process": JPT_ACCESS_PROCESS,
}


def normalize_path(path: _Path) -> str:
    """The normalised form of a requested path, lexically
    (``jpt_policy_normalize_path``): "." and empty names dropped,
    "name/.." removed, "" becomes ".". For checking a request before the
    files backend resolves it (lexical ".." removal is wrong when "name" is
    a symlink). Raises JptError (JPT_ERR_INVALID) for an absolute path or a
    ".." that leaves the root."""
    out = ctypes.c_void_p()
    _check_new(lib.jpt_policy_normalize_path(_to_c(path, "path"), ctypes.byref(out)))
    return _take_text(out, "jpt_policy_normalize_path")


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
        rc = lib.jpt_policy_new(text, ctypes.byref(ptr))
        if rc < 0:
            # A refused configuration still comes with a policy holding the
            # message (vfs.h); it is freed here.
            message = _from_c(lib.jpt_policy_errmsg(ptr)) if ptr else last_error()
            lib.jpt_policy_free(ptr)
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
        verdict = lib.jpt_policy_check(self._p(), _c_int_arg(access, "access"),
                                        _to_c(target, "target"), ctypes.byref(reason))
        text = _take_string(reason)
        _check(verdict)
        return verdict, _set(text, "jpt_policy_check")

    @property
    def hardlinks_allowed(self) -> bool:
        """Whether the files backend may open files with several hard links
        (``"filesystem": {"hardlinks": "allow"}``;
        ``jpt_policy_hardlinks_allowed``)."""
        return bool(lib.jpt_policy_hardlinks_allowed(self._p()))

    def close(self) -> None:
        """Frees the policy (``jpt_policy_free``). Closing twice is
        harmless; any other use after closing raises ValueError."""
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr:
            lib.jpt_policy_free(ptr)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return not self._ptr

    def __del__(self, _free: Callable[[_PolicyP], None] = lib.jpt_policy_free) -> None:
        ptr = getattr(self, "_ptr", None)
        if ptr:
            self._ptr = None
            _free(ptr)

    def __repr__(self) -> str:
        return "<jptool.Policy closed>" if not self._ptr else "<jptool.Policy>"

    def _p(self) -> _PolicyP:
        if not self._ptr:
            raise ValueError("operation on a closed Policy")
        return self._ptr


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
    name), ``method`` (the D11 method, "fs.write"), ``path`` (for fs.*
    methods the path the request will touch, after the symlinks inside the
    workspace are followed: what the decision covers; fs.rename asks about
    each of its two paths; the URL or the command line of http.* and
    process.run), ``requested_path`` (the path as the tool wrote it:
    "scratch/ci.yml" when ``path`` is ".github/workflows/ci.yml", where
    scratch/ci.yml is a symlink; the same as ``path`` when no symlink was
    followed — show both when they differ), ``access`` (JPT_ACCESS_*),
    ``reason`` (why the policy asks, for a person) and ``id`` (the call id
    of a registry's one-shot call or the handle id of a stateful one; None
    on a :class:`VfsHost`).

    The library keeps the request until it is answered, even past its
    host's or registry's end (the answer then raises
    JptError(JPT_ERR_CANCELLED)). So that a request nobody answers is not
    kept forever, one garbage collected unanswered is denied: a handler
    that answers later must keep the object.
    """

    __slots__ = ("_ptr", "tool", "method", "path", "requested_path", "access", "reason", "id",
                 "__weakref__")
    _ptr: Optional[_PolicyRequestP]

    def __init__(self, ptr: _PolicyRequestP) -> None:
        """Made for the policy handler."""
        self._ptr = None
        self.tool = _from_c(lib.jpt_policy_request_tool(ptr))
        self.method = _from_c(lib.jpt_policy_request_method(ptr))
        self.path = _from_c(lib.jpt_policy_request_path(ptr))
        self.requested_path = _from_c(lib.jpt_policy_request_requested_path(ptr))
        self.access = lib.jpt_policy_request_access(ptr)
        self.reason = _from_c(lib.jpt_policy_request_reason(ptr))
        self.id = _from_c(lib.jpt_policy_request_id(ptr))
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
        rc = lib.jpt_policy_request_answer(ptr, decision, reason_b)
        if rc == JPT_ERR_CANCELLED:
            raise JptError(rc, f"{self.method} '{self.requested_path}': the tool's request is gone "
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

    def __del__(self, _answer: Callable[[_PolicyRequestP, int, Optional[bytes]], int]
                = lib.jpt_policy_request_answer) -> None:
        ptr = getattr(self, "_ptr", None)
        if ptr:
            self._ptr = None
            _answer(ptr, JPT_DECISION_DENY, b"the host dropped the request unanswered")

    def __repr__(self) -> str:
        written = (f" (written {self.requested_path!r})"
                   if self.requested_path != self.path else "")
        return (f"<jptool.PolicyRequest {self.tool}: {self.method} {self.path!r}{written}"
                f"{'' if self.valid else ' (answered)'}>")


if TYPE_CHECKING:
    class _PolicyOwner(Protocol):
        """What _policy_trampoline needs of a Registry or a VfsHost."""

        _policy_fn: Optional[Callable[[PolicyRequest], None]]

        def _stash(self, exc: BaseException) -> None: ...


def _policy_trampoline(owner_ref: weakref.ref[_PolicyOwner]
                       ) -> Callable[[_PolicyRequestP, Optional[int]], None]:
    """The C policy callback of a registry or VFS host (``owner``, which has
    ``_policy_fn`` and ``_stash``): it wraps the request and calls the
    current Python handler. A handler that raises denies the request (unless
    it answered it) and its exception is raised by the owner's driving call
    that ran it."""

    def trampoline(rptr: _PolicyRequestP, _ud: Optional[int]) -> None:
        owner = owner_ref()
        try:
            request = PolicyRequest(rptr)
        except BaseException as e:  # noqa: B902 - it cannot cross C
            lib.jpt_policy_request_answer(rptr, JPT_DECISION_DENY,
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
            if owner is not None:  # (it is: fn came from it)
                owner._stash(e)

    return trampoline


# ---- The VFS host (vfs.h, "A standalone host") -----------------------------------------


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
    command line (``["env", "NAME=value", program, …]``; a Python tool
    needs :func:`python_tool_env`). In the default
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
                 root: Optional[_Path] = None,
                 sandbox: Union[None, Dict[str, Any], _Text] = None,
                 request_timeout_ms: Optional[int] = None,
                 kill_grace_ms: Optional[int] = None,
                 max_message: Optional[int] = None,
                 max_violations: Optional[int] = None,
                 sandbox_mode: Optional[int] = None,
                 sandbox_read: Optional[Iterable[_Path]] = None) -> None:
        self._ptr: Optional[_VfsHostP] = None
        self._policy_fn: Optional[Callable[[PolicyRequest], None]] = None
        self._policy_cb: Optional[_Callback] = None  # the C policy callback, kept until close
        self._pending: List[BaseException] = []
        self._depth = 0
        self._driver: object = None  # the jptool.aio.AsyncVfsHost driving it, if any
        if files is not None and root is not None:
            raise JptError(JPT_ERR_INVALID, "VfsHost: give files or root, not both")
        if files is not None and not isinstance(files, Files):
            raise TypeError(f"VfsHost: files must be a jptool.Files, not "
                            f"{type(files).__name__}")
        sandbox_b = None
        if sandbox is not None:
            raw = isinstance(sandbox, (str, bytes, bytearray, memoryview))
            sandbox_b = _json_arg(sandbox, raw, "sandbox")
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
        _check_new(lib.jpt_vfs_host_new(ctypes.byref(opts), ctypes.byref(ptr)))
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
        lib.jpt_vfs_host_free(ptr)
        # No C code refers to the callback any more.
        self._policy_fn = None
        self._policy_cb = None

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return not self._ptr

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __repr__(self) -> str:
        if not self._ptr:
            return "<jptool.VfsHost closed>"
        return f"<jptool.VfsHost fd={self.fileno()}{' done' if self.done else ''}>"

    def _p(self) -> _VfsHostP:
        if not self._ptr:
            raise ValueError("operation on a closed VfsHost")
        return self._ptr

    @property
    def errmsg(self) -> str:
        """The message of the last failed call, or "" (``jpt_vfs_host_errmsg``)."""
        return _from_c(lib.jpt_vfs_host_errmsg(self._p())) or ""

    def _error(self, rc: int) -> JptError:
        message = lib.jpt_vfs_host_errmsg(self._ptr) if self._ptr else None
        return JptError(rc, _from_c(message) or None)

    @contextlib.contextmanager
    def _busy(self) -> Iterator[None]:
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

    def spawn(self, argv: List[_Path],
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
        rc = lib.jpt_vfs_host_spawn(self._p(), c_argv, text)
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
        rc = lib.jpt_vfs_host_attach(self._p(), _c_int_arg(read_fd, "read_fd"),
                                      _c_int_arg(write_fd, "write_fd"), text)
        if rc < 0:
            raise self._error(rc)

    def apply(self, input: Any, raw: bool = False) -> None:
        """Gives a stateful tool its next input (``jpt_vfs_host_apply``,
        D11's ``apply`` notification): any Python value, written with
        ``json.dumps``, or JSON text with ``raw=True``. Raises
        JptError(JPT_ERR_STATE) when no tool runs, JPT_ERR_INVALID for
        text that is not JSON."""
        rc = lib.jpt_vfs_host_apply(self._p(), _json_arg(input, raw, "input"))
        if rc < 0:
            raise self._error(rc)

    def cancel(self) -> None:
        """Cancels the tool (``jpt_vfs_host_cancel``): D11's ``cancel``
        notification, SIGTERM after the kill grace if it has not ended,
        SIGKILL after another (a tool on attached fds has its fds closed
        instead); its requests waiting for the policy handler are answered
        -32005. Raises JptError(JPT_ERR_STATE) when no tool runs."""
        rc = lib.jpt_vfs_host_cancel(self._p())
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
        rc = lib.jpt_vfs_host_state(self._p(), ctypes.byref(out))
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
        rc = lib.jpt_vfs_host_sandbox(self._p(), ctypes.byref(enforced), ctypes.byref(report))
        if rc < 0:
            raise self._error(rc)
        return enforced.value, _from_c(report.value) or ""

    @property
    def done(self) -> bool:
        """True once the tool has ended: its process reaped, or its fds
        closed (``jpt_vfs_host_done``)."""
        return bool(lib.jpt_vfs_host_done(self._p()))

    def set_policy_handler(self, fn: Optional[Callable[[PolicyRequest], None]]) -> None:
        """Installs ``fn(request)`` as the policy handler
        (``jpt_vfs_host_set_policy_handler``): each request the tool's
        policy asks about comes as a :class:`PolicyRequest`, which the
        handler answers at once or later (keeping the object). None removes
        it: asks are then denied, and the tool is told that no one could be
        asked. The host keeps the C callback until it is closed."""
        p = self._p()
        if fn is None:
            lib.jpt_vfs_host_set_policy_handler(p, _PolicyFn(0), None)
            self._policy_fn = None
            return
        if not callable(fn):
            raise TypeError("set_policy_handler: fn must be callable or None")
        if self._policy_cb is None:
            self._policy_cb = _PolicyFn(_policy_trampoline(weakref.ref(self)))
        self._policy_fn = fn
        lib.jpt_vfs_host_set_policy_handler(p, self._policy_cb, None)

    # -- driving the host --

    def fileno(self) -> int:
        """The host's epoll fd to poll for reading
        (``jpt_vfs_host_get_fd``); it never changes."""
        return lib.jpt_vfs_host_get_fd(self._p())

    def timeout(self) -> int:
        """Milliseconds until :meth:`dispatch` is due
        (``jpt_vfs_host_get_timeout``): 0 when work is ready, -1 when only
        fd activity can make any."""
        return lib.jpt_vfs_host_get_timeout(self._p())

    def dispatch(self) -> int:
        """Does what is ready without blocking (``jpt_vfs_host_dispatch``):
        reads and answers the tool's requests, calls the policy handler,
        fires timers, reaps the tool. Returns >0 if more work is ready at
        once (call it again before polling), else 0. Raises
        JptError(JPT_ERR_IO), or an exception the policy handler raised."""
        p = self._p()
        with self._busy():
            rc = lib.jpt_vfs_host_dispatch(p)
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
            rc = lib.jpt_vfs_host_run(p, _c_int_arg(timeout_ms, "timeout_ms"))
        self._reraise()
        if rc == JPT_ERR_TIMEOUT:
            return False
        if rc < 0:
            raise self._error(rc)
        return True
