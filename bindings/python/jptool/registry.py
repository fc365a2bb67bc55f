"""The registry (registry.h): :class:`Registry`, the :class:`Batch` of a
model message's calls, the questions it asks (:class:`Inquiry`) and the
handles of builtin tools (:class:`Handle`)."""

from __future__ import annotations

import contextlib
import ctypes
import json
import sys
import traceback
import weakref
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

from ._lib import (_AbortFn, _ApplyFn, _BatchPtr, _BuiltinOps, _EventPtr, _HandlePtr,
                   _InquiryFn, _OutputFn, _PolicyFn, _RegistryOptions, _RegistryPtr, _StartFn,
                   _c_uint, lib)
from ._util import (_Closable, _Path, _Text, _address, _c_int_arg, _from_c, _json_arg,
                    _json_text, _set, _take_string, _to_c)
from .constants import (JPT_DIALECT_ANTHROPIC, JPT_DIALECT_AS_CALLED, JPT_DIALECT_FLAT,
                        JPT_DIALECT_GEMINI, JPT_DIALECT_MCP, JPT_DIALECT_ONEOF, JPT_DIALECT_OPENAI,
                        JPT_DIALECT_OPENAI_RESPONSES, JPT_DIALECT_STRICT, JPT_ERR_AGAIN,
                        JPT_ERR_CANCELLED, JPT_ERR_INVALID, JPT_ERR_STATE, JPT_ERR_TIMEOUT,
                        JPT_ERR_UNSUPPORTED, JPT_EVENT_BATCH_DONE, JPT_EVENT_CALL_DONE,
                        JPT_EVENT_OUTPUT, JPT_EVENT_SHUTDOWN, JPT_EVENT_STATE, JPT_LOAD_REPLACE,
                        JPT_OK, JPT_REGISTRY_KEEP_SPOOL, JPT_SANDBOX_DEFAULT, JPT_SANDBOX_OFF,
                        JPT_STATE_STOPPED, JPT_STATE_WAITING, JPT_TARGET_ASSISTANT,
                        JPT_TARGET_USER, JPT_TURN_ABORT, JPT_TURN_KEEP)
from .errors import JptError, _check, _check_new
from .files import Files
from .state import _KIND_NAMES, State
from .vfs import PolicyRequest, _policy_trampoline

if TYPE_CHECKING:
    from ctypes import _Pointer

    from ._lib import _BatchP, _Callback, _HandleP, _InquiryP, _Output, _RegistryP

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


# ---- Registry (registry.h) ----------------------------------------------------


_KIND_BY_NUMBER = {v: k for k, v in _KIND_NAMES.items()}
_TARGET_NAMES = {JPT_TARGET_USER: "user", JPT_TARGET_ASSISTANT: "assistant"}

# The status a builtin callback returns to the library when it raises an
# exception other than JptError (the exception itself is re-raised later).
_CALLBACK_FAILURE = JPT_ERR_INVALID


def _status_of(result: Any, what: str) -> int:
    """A builtin callback's return value as a status: None is JPT_OK."""
    if result is None:
        return JPT_OK
    return _c_int_arg(result, f"the {what} callback's result")


def reap_stale(path: _Path) -> int:
    """Kills the children a crashed host left behind, as recorded in a
    registry's state file (``jpt_registry_reap_stale``; see the
    ``state_file`` option of :class:`Registry`), then removes the file. A
    process is killed only if its pid still has the recorded start time.
    Returns how many were killed; a missing file is not an error (0).
    Raises JptError: JPT_ERR_IO when the file cannot be read or removed,
    JPT_ERR_INVALID, JPT_ERR_NOMEM."""
    killed = ctypes.c_size_t()
    _check_new(lib.jpt_registry_reap_stale(_to_c(path, "path"), ctypes.byref(killed)))
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
    (tool processes alive at once, calls beyond it waiting for a slot,
    or failing at once while live handles hold every slot: see
    ``registry.h``; default from the fd limit, leaving the host a quarter of it, at least
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

    def __init__(self, *, root: Optional[_Path] = None,
                 kill_grace_ms: Optional[int] = None,
                 capture_bytes: Optional[int] = None,
                 output_limit: Optional[int] = None,
                 settle_ms: Optional[int] = None,
                 yield_ms: Optional[int] = None,
                 drain_ms: Optional[int] = None,
                 max_inquiry_rounds: Optional[int] = None,
                 spool_dir: Optional[_Path] = None,
                 state_file: Optional[_Path] = None,
                 turn_end_timeout_ms: Optional[int] = None,
                 max_processes: Optional[int] = None,
                 max_events: Optional[int] = None,
                 keep_spool: bool = False,
                 containment: Optional[int] = None,
                 sandbox_mode: Optional[int] = None) -> None:
        self._ptr: Optional[_RegistryP] = None
        self._pending: List[BaseException] = []
        self._inquiry_fn: Optional[Callable[[Inquiry], None]] = None
        self._inquiry_cb: Optional[_Callback] = None  # the one C trampoline, kept until close
        self._output_cb: Optional[_Callback] = None  # the C output callback, kept until close
        self._policy_fn: Optional[Callable[[PolicyRequest], None]] = None
        self._policy_cb: Optional[_Callback] = None  # the C policy callback, kept until close
        # The ops structs and C callbacks of the builtin tools.
        self._builtins: List[Tuple[_BuiltinOps, Tuple[_Callback, ...]]] = []
        self._batches: "weakref.WeakValueDictionary[int, Batch]" = \
            weakref.WeakValueDictionary()
        self._handles: "weakref.WeakValueDictionary[int, Handle]" = \
            weakref.WeakValueDictionary()
        self._inquiries: "weakref.WeakSet[Inquiry]" = weakref.WeakSet()
        self._depth = 0  # C calls in progress that may run callbacks
        self._closing = False  # inside jpt_registry_free
        self._driver: object = None  # the jptool.aio.AsyncRegistry driving it, if any

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
        _check_new(lib.jpt_registry_new(ctypes.byref(opts), ctypes.byref(ptr)))
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
        rc = lib.jpt_registry_shutdown(self._p())
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
                lib.jpt_registry_free(ptr)
        finally:
            self._ptr = None
            self._closing = False
            # The library freed the batches and inquiries it still held.
            for batch in list(self._batches.values()):
                batch._ptr = None
            for handle in list(self._handles.values()):
                handle._ptr = None
            for inquiry in list(self._inquiries):
                inquiry._ptr = None
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

    def __del__(self) -> None:
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

    def _p(self) -> _RegistryP:
        if not self._ptr or self._closing:
            raise ValueError("operation on a closed Registry")
        return self._ptr

    @property
    def errmsg(self) -> str:
        """The message of the last failed call on the registry, or ""
        (``jpt_registry_errmsg``)."""
        return _from_c(lib.jpt_registry_errmsg(self._p()))

    def _error(self, rc: int) -> JptError:
        msg = lib.jpt_registry_errmsg(self._ptr) if self._ptr else None
        return JptError(rc, _from_c(msg) or None)

    @contextlib.contextmanager
    def _busy(self) -> Iterator[None]:
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
        PATH and the variables its ``env`` names or sets, nothing else;
        ``"os_sandbox": {"mode": "required" | "best-effort" | "off",
        "read": [absolute paths]}`` chooses the mode (default: the
        registry's ``sandbox_mode``) and what else it may read and execute.
        A Python tool whose interpreter is not under /usr needs its prefix
        there: ``"os_sandbox": {"read": jptool.python_tool_read_paths()}``
        (see :func:`python_tool_read_paths`), and one that imports jptool
        the variables that find it: ``"env": {"set":
        jptool.python_tool_env()}``."""
        raw = isinstance(config, (str, bytes, bytearray, memoryview))
        text = _json_arg(config, raw, "config")
        rc = lib.jpt_registry_load_tools(self._p(), text,
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
                raise JptError(JPT_ERR_INVALID, f"unknown dialect {dialect!r} "
                                                f"({', '.join(_DIALECTS)})")
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
        rc = lib.jpt_registry_tools_json(self._p(), number, ctypes.byref(out))
        text = _take_string(out)
        if rc < 0:
            raise self._error(rc)
        return json.loads(_set(text, "jpt_registry_tools_json"))

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
        parsed: Any
        if isinstance(definition, (str, bytes, bytearray, memoryview)):
            text = _to_c(definition, "definition")
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None  # the library reports it
        else:
            text = _json_text(definition, "definition")
            parsed = definition
        stateful = isinstance(parsed, dict) and parsed.get("stateful") is True
        self_ref = weakref.ref(self)

        def c_start(hptr: _HandleP, args_json: bytes, _ud: Optional[int]) -> int:
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

        def c_apply(hptr: _HandleP, input_json: bytes, _ud: Optional[int]) -> int:
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

        def c_abort(hptr: _HandleP, _ud: Optional[int]) -> None:
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
            ops.apply = _ApplyFn(0)
        rc = lib.jpt_registry_add_builtin(self._p(), text, ctypes.byref(ops), None)
        if rc < 0:
            raise self._error(rc)
        self._builtins.append((ops, callbacks))

    def _handle(self, hptr: _HandleP, stateful: bool) -> Handle:
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
            rc = lib.jpt_registry_submit(p, text, ctypes.byref(out))
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
        return lib.jpt_registry_get_fd(self._p())

    def timeout(self) -> int:
        """Milliseconds until :meth:`dispatch` is due
        (``jpt_registry_get_timeout``): 0 when work is ready, -1 when only
        fd activity can make any."""
        return lib.jpt_registry_get_timeout(self._p())

    def dispatch(self) -> int:
        """Does what is ready without blocking (``jpt_registry_dispatch``):
        reads output, reaps children, fires timers, completes calls, calls
        the inquiry handler. Returns >0 if more work is ready at once (call
        it again before polling), else 0. Raises JptError(JPT_ERR_IO), or
        an exception a callback raised meanwhile."""
        p = self._p()
        with self._busy():
            rc = lib.jpt_registry_dispatch(p)
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
            rc = lib.jpt_registry_run(p, _c_int_arg(timeout_ms, "timeout_ms"))
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
            rc = lib.jpt_registry_wait(p, b, _c_int_arg(timeout_ms, "timeout_ms"))
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
        _check(lib.jpt_registry_wakeup(self._p()))

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
            rc = lib.jpt_registry_next_event(self._p(), ctypes.byref(ev))
            if rc == JPT_ERR_AGAIN:
                return
            _check(rc)
            try:
                etype = lib.jpt_event_type(ev)
                state = lib.jpt_event_state(ev)
                batch_addr = lib.jpt_event_batch(ev)
                event = {
                    "type": _EVENT_NAMES.get(etype, etype),
                    "call_id": _from_c(lib.jpt_event_call_id(ev)),
                    "handle_id": _from_c(lib.jpt_event_handle_id(ev)),
                    "tool": _from_c(lib.jpt_event_tool(ev)),
                    "state": _KIND_BY_NUMBER.get(state, state) if state else None,
                    "batch": self._batches.get(batch_addr) if batch_addr else None,
                }
            finally:
                lib.jpt_event_free(ev)
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
            lib.jpt_registry_set_inquiry_handler(p, _InquiryFn(0), None)
            self._inquiry_fn = None
            return
        if not callable(fn):
            raise TypeError("set_inquiry_handler: fn must be callable or None")
        if self._inquiry_cb is None:
            self._inquiry_cb = _InquiryFn(_inquiry_trampoline(weakref.ref(self)))
        self._inquiry_fn = fn
        lib.jpt_registry_set_inquiry_handler(p, self._inquiry_cb, None)

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
            lib.jpt_registry_set_output_handler(p, _OutputFn(0), None)
            self._output_cb = None
            return
        if not callable(fn):
            raise TypeError("set_output_handler: fn must be callable or None")
        reg_ref = weakref.ref(self)
        handler = fn

        def trampoline(optr: _Pointer[_Output], _ud: Optional[int]) -> None:
            o = optr.contents
            try:
                handler(o.id.decode("utf-8", "replace"), o.tool.decode("utf-8", "replace"),
                   bool(o.stateful), o.stream, ctypes.string_at(o.data, o.len))
            except BaseException as e:  # noqa: B902 - it cannot cross C
                reg = reg_ref()
                if reg is not None:
                    reg._stash(e)

        self._output_cb = _OutputFn(trampoline)
        lib.jpt_registry_set_output_handler(p, self._output_cb, None)

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
        rc = lib.jpt_registry_add_files(self._p(), _to_c(name, "name"), files._p())
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
            lib.jpt_registry_set_policy_handler(p, _PolicyFn(0), None)
            self._policy_fn = None
            return
        if not callable(fn):
            raise TypeError("set_policy_handler: fn must be callable or None")
        if self._policy_cb is None:
            self._policy_cb = _PolicyFn(_policy_trampoline(weakref.ref(self)))
        self._policy_fn = fn
        lib.jpt_registry_set_policy_handler(p, self._policy_cb, None)

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
        rc = lib.jpt_registry_take_notifications(self._p(), ctypes.byref(out))
        text = _take_string(out)
        if rc < 0:
            raise self._error(rc)
        notifications: List[Dict[str, Any]] = json.loads(
            _set(text, "jpt_registry_take_notifications"))
        return notifications

    def take_turn_text(self, turn_end: Optional["Batch"] = None) -> str:
        """What the tools left since the model's last message, as text to
        put in front of its next user message
        (``jpt_registry_take_turn_text``): the notifications queued (taken,
        as :meth:`take_notifications` takes them) and, given the done
        :class:`Batch` that :meth:`end_turn` returned, its results. A
        provider takes a tool result only for a call of the message before
        it, and a turn end's results answer none (:meth:`Batch.results`
        with a provider's dialect refuses them), so the model reads them as
        text: an entry each, a bracketed line such as ``[Notification:
        handle `b` (tool `build`) stopped after 3.2 s]`` or ``[Handle `w`
        (tool `test`) stopped after your last turn]`` and the tool's text
        after it, ended by a blank line; the notifications first, then the
        turn end's results in its order. "" when there is nothing; calling
        it again gives only what came since.

        Raises JptError, taking nothing: JPT_ERR_INVALID (a batch that is
        not this registry's turn end: a model's batch's results go back as
        tool results), JPT_ERR_STATE (the turn end is still settling:
        ``turn_end.done`` is False), JPT_ERR_NOMEM; TypeError when
        ``turn_end`` is not a Batch, ValueError when it is closed."""
        if turn_end is not None and not isinstance(turn_end, Batch):
            raise TypeError("take_turn_text: turn_end must be the Batch end_turn returned "
                            f"or None, not {type(turn_end).__name__}")
        p = self._p()
        batch = turn_end._p() if turn_end is not None else _BatchPtr()
        out = ctypes.c_void_p()
        rc = lib.jpt_registry_take_turn_text(p, batch, ctypes.byref(out))
        text = _take_string(out)
        if rc < 0:
            raise self._error(rc)
        return _set(text, "jpt_registry_take_turn_text")

    def tool_sandbox(self, tool: _Text) -> Tuple[int, str]:
        """What the OS sandbox of ``tool``'s processes enforces here
        (``jpt_registry_tool_sandbox``): the JPT_SANDBOX_ENFORCED_* bits of
        vfs.h (0 for a tool without one) and a sentence saying so and
        naming what is missing. Raises JptError: JPT_ERR_NOT_FOUND (no such
        tool), JPT_ERR_SANDBOX (its mode is "required" and this system
        cannot enforce it; the message says what is lacking)."""
        enforced = _c_uint()
        out = ctypes.c_void_p()
        rc = lib.jpt_registry_tool_sandbox(self._p(), _to_c(tool, "tool"),
                                            ctypes.byref(enforced), ctypes.byref(out))
        text = _take_string(out)
        if rc < 0:
            raise self._error(rc)
        return enforced.value, _set(text, "jpt_registry_tool_sandbox")

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
            rc = lib.jpt_registry_end_turn(p, flags,
                                            ctypes.byref(out))
        if rc < 0:
            raise self._error(rc)
        batch = Batch(self, out)
        self._batches[_address(out)] = batch
        return batch


def _inquiry_trampoline(reg_ref: weakref.ref[Registry]
                        ) -> Callable[[_InquiryP, Optional[int]], None]:
    """The one C inquiry callback of a registry: it wraps the inquiry and
    calls the registry's current Python handler."""

    def trampoline(qptr: _InquiryP, _ud: Optional[int]) -> None:
        reg = reg_ref()
        if reg is None:  # pragma: no cover - the registry frees first
            return
        try:
            q = Inquiry(reg, qptr)
        except BaseException as e:  # noqa: B902 - it cannot cross C
            lib.jpt_inquiry_cancel(qptr, b"the host could not read the question")
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
    _ptr: Optional[_BatchP]

    def __init__(self, registry: Registry, ptr: _BatchP) -> None:
        """Made by :meth:`Registry.submit`."""
        self._registry = registry
        self._ptr = ptr

    def _p(self) -> _BatchP:
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
        return bool(lib.jpt_batch_done(self._p()))

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
        JptError(JPT_ERR_STATE) while a call is still running, and
        JptError(JPT_ERR_INVALID) for a provider's dialect on a turn end's
        batch (its results answer no call of the model's: give them as
        text, :meth:`Registry.take_turn_text`)."""
        out = ctypes.c_void_p()
        if dialect is None:
            rc = lib.jpt_batch_results_json(self._p(), ctypes.byref(out))
        else:
            if isinstance(dialect, str):
                if dialect not in _RESULT_SHAPES:
                    raise JptError(JPT_ERR_INVALID, f"unknown result shape {dialect!r} "
                                                    f"({', '.join(_RESULT_SHAPES)})")
                number = _RESULT_SHAPES[dialect]
            else:
                number = _c_int_arg(dialect, "dialect")
            rc = lib.jpt_batch_results_json_as(self._p(), number, ctypes.byref(out))
            if rc < 0:
                # (It says why in the registry's message.)
                raise self._registry._error(rc)
        text = _take_string(out)
        _check(rc)
        results: List[Dict[str, Any]] = json.loads(_set(text, "jpt_batch_results_json"))
        return results

    def cancel(self) -> None:
        """Cancels every call of the batch still in flight
        (``jpt_batch_cancel``; RFD 037's cancellation, for a host's Ctrl+C),
        at the registry's next dispatch: one-shot children are killed and
        their calls end with an error that carries the output so far,
        awaits answer with the handles' states and ``"cancelled": true``,
        spawn and apply answer at once with the output so far (their
        handles keep running), calls not yet started never run. Finished calls keep their results; drive the
        registry (:meth:`Registry.wait`) to collect the rest."""
        lib.jpt_batch_cancel(self._p())

    def cancel_call(self, call_id: _Text) -> None:
        """Cancels one call of the batch, as :meth:`cancel` cancels each
        (``jpt_batch_cancel_call``); the others go on. A finished call keeps
        its result. Raises JptError(JPT_ERR_NOT_FOUND) for an id the batch
        does not hold."""
        _check(lib.jpt_batch_cancel_call(self._p(), _to_c(call_id, "call_id")))

    def set_call_timeout(self, call_id: Optional[_Text], timeout_ms: int) -> None:
        """A host-side time limit (``jpt_batch_set_call_timeout``):
        ``timeout_ms`` from now the call (None: every call of the batch) is
        cancelled, its result saying that it reached the host's time limit,
        with the output so far. 0 removes the limit."""
        _check(lib.jpt_batch_set_call_timeout(
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
            lib.jpt_batch_free(ptr)

    def __del__(self) -> None:
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

    ``tool``, ``call_id`` (the one-shot call that asks, or the ``await``
    that watched the handle when it asked), ``handle_id`` (the handle whose
    question it is, for a stateful handle asking while awaited; else None),
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
    _ptr: Optional[_InquiryP]

    def __init__(self, registry: Registry, ptr: _InquiryP) -> None:
        """Made by the registry for its inquiry handler."""
        self._registry = registry
        self._ptr = None
        self.tool = _from_c(lib.jpt_inquiry_tool(ptr))
        self.call_id = _from_c(lib.jpt_inquiry_call_id(ptr))
        self.handle_id = _from_c(lib.jpt_inquiry_handle_id(ptr))
        self.question = json.loads(lib.jpt_inquiry_question_json(ptr))
        self.target = lib.jpt_inquiry_target(ptr)
        self._ptr = ptr

    def _p(self) -> _InquiryP:
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
        return State(lib.jpt_state_ref(lib.jpt_inquiry_context(self._p())))

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
            rc = lib.jpt_inquiry_answer(p, text)
        if rc == JPT_OK or rc == JPT_ERR_CANCELLED:
            self._retire()
            _check(rc)
            return
        raise JptError(rc, _from_c(lib.jpt_inquiry_errmsg(p)) or None)

    def cancel(self, reason: Optional[_Text] = None) -> None:
        """Ends the call with an error naming ``reason`` (may be None)
        (``jpt_inquiry_cancel``); the inquiry is invalid afterwards."""
        p = self._p()
        reason_b = _to_c(reason, "reason")
        self._retire()
        with self._registry._busy():
            rc = lib.jpt_inquiry_cancel(p, reason_b)
        _check(rc)

    @property
    def errmsg(self) -> str:
        """The message of the last failed answer, or ""
        (``jpt_inquiry_errmsg``)."""
        return _from_c(lib.jpt_inquiry_errmsg(self._p()))

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
    _ptr: Optional[_HandleP]

    def __init__(self, registry: Registry, ptr: _HandleP, stateful: bool) -> None:
        """Made by the registry for the builtin callbacks."""
        self._registry = registry
        self._ptr = ptr
        self.id = _from_c(lib.jpt_handle_id(ptr))
        self.tool = _from_c(lib.jpt_handle_tool(ptr))
        self.stateful = stateful

    def _p(self) -> _HandleP:
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
                rc = lib.jpt_handle_update(p, state._p())
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
