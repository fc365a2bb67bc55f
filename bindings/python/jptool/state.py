"""A tool's state (state.h): :class:`State`."""

from __future__ import annotations

import ctypes
import json
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Union

from ._lib import _RenderOptions, _Resource, _StatePtr, lib
from ._util import _Closable, _Path, _Text, _from_c, _json_arg, _take_text, _to_c
from .constants import (JPT_BLOCK_AUDIO, JPT_BLOCK_IMAGE, JPT_BLOCK_QUESTION, JPT_BLOCK_RESOURCE,
                        JPT_BLOCK_RESOURCE_LINK, JPT_BLOCK_TEXT, JPT_ERR_INVALID,
                        JPT_FIELD_ANNOTATIONS, JPT_FIELD_BLOB, JPT_FIELD_BLOB_SIZE,
                        JPT_FIELD_DEFAULT, JPT_FIELD_DESCRIPTION, JPT_FIELD_FORMATTED,
                        JPT_FIELD_ID, JPT_FIELD_MIME_TYPE, JPT_FIELD_NAME, JPT_FIELD_SCHEMA,
                        JPT_FIELD_TEXT, JPT_FIELD_TITLE, JPT_FIELD_URI, JPT_JSON_ENVELOPE,
                        JPT_JSON_OUTCOME, JPT_JSON_PRETTY, JPT_JSON_TOOL_STATE, JPT_PARSE_RAW,
                        JPT_STATE_RUNNING, JPT_STATE_STOPPED, JPT_STATE_WAITING)
from .errors import JptError, _check, _check_new

if TYPE_CHECKING:
    from ._lib import _StateP

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


# ---- States -------------------------------------------------------------------

_ABSENT = object()  # add_question(default=...) not given: no default


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
    _ptr: Optional[_StateP]

    def __init__(self, _ptr: _StateP):
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
        _check_new(lib.jpt_state_parse(data, len(data), JPT_PARSE_RAW if raw else 0,
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
        _check_new(lib.jpt_state_new(kind, ctypes.byref(ptr)))
        return cls(ptr)

    def ref(self) -> "State":
        """A new State holding another reference to the same C state
        (``jpt_state_ref``). The state is shared from then on, so it is
        immutable: builders on either object raise JptError(JPT_ERR_STATE).
        Close each State separately."""
        return State(lib.jpt_state_ref(self._p()))

    def close(self) -> None:
        """Drops this object's reference (``jpt_state_unref``); the last
        one frees the state. Closing twice is harmless; any other use after
        closing raises ValueError."""
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr:
            lib.jpt_state_unref(ptr)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return not self._ptr

    def __del__(self, _unref: Callable[[_StateP], None] = lib.jpt_state_unref) -> None:
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
                f"{lib.jpt_state_block_count(self._ptr)} block(s)>")

    def _p(self) -> _StateP:
        if not self._ptr:
            raise ValueError("operation on a closed State")
        return self._ptr

    def _build(self, rc: int) -> None:
        """Raises JptError for a failed builder call, with the state's
        error text."""
        if rc < 0:
            raise JptError(rc, _from_c(lib.jpt_state_errmsg(self._p())))

    # -- reading --

    @property
    def kind(self) -> int:
        """JPT_STATE_RUNNING, JPT_STATE_WAITING or JPT_STATE_STOPPED."""
        return lib.jpt_state_kind(self._p())

    @property
    def is_error(self) -> bool:
        """True if the tool stopped with an error (an error state is
        stopped)."""
        return bool(lib.jpt_state_is_error(self._p()))

    @property
    def error_message(self) -> str:
        """The error message: the text blocks of an error state joined by
        newlines, or the legacy message; "" when the state is not an error."""
        return _from_c(lib.jpt_state_error_message(self._p()))

    @property
    def error_transient(self) -> bool:
        """True if the error is transient (retrying may succeed)."""
        return bool(lib.jpt_state_error_transient(self._p()))

    @property
    def error_trace(self) -> List[str]:
        """The error's source chain, outermost first."""
        p = self._p()
        return [_from_c(lib.jpt_state_error_trace(p, i)) or ""
                for i in range(lib.jpt_state_error_trace_count(p))]

    @property
    def structured_content(self) -> Any:
        """MCP ``structuredContent`` as a Python value, or None when absent
        (a JSON null is also None; :meth:`to_json` tells them apart)."""
        text = lib.jpt_state_structured_content(self._p())
        return None if text is None else json.loads(text)

    @property
    def warnings(self) -> List[str]:
        """Problems found while parsing, one sentence each, in order."""
        p = self._p()
        return [_from_c(lib.jpt_state_warning(p, i)) or ""
                for i in range(lib.jpt_state_warning_count(p))]

    @property
    def errmsg(self) -> str:
        """The message of the last failed builder call, or "" if none
        (``jpt_state_errmsg``)."""
        return _from_c(lib.jpt_state_errmsg(self._p()))

    def _field(self, i: int, field: int) -> Optional[bytes]:
        n = ctypes.c_size_t()
        ptr = lib.jpt_state_block_field(self._p(), i, field, ctypes.byref(n))
        return None if ptr is None else ctypes.string_at(ptr, n.value)

    def block(self, i: int) -> Dict[str, Any]:
        """Block ``i`` as a dict: "type" ("text", "resource", "question",
        "image", "audio" or "resource_link") and each field the block has,
        under the keys of :attr:`blocks`. IndexError when out of range."""
        p = self._p()
        if not 0 <= i < lib.jpt_state_block_count(p):
            raise IndexError("block index out of range")
        btype = lib.jpt_state_block_type(p, i)
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
        return [self.block(i) for i in range(lib.jpt_state_block_count(self._p()))]

    # -- building --

    def add_text(self, text: _Text) -> None:
        """Appends a text block (``jpt_state_add_text``)."""
        self._build(lib.jpt_state_add_text(self._p(), _to_c(text, "text")))

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
        self._build(lib.jpt_state_add_resource(self._p(), ctypes.byref(r)))

    def add_question(self, id: _Text, text: _Text, schema: Any = None,
                     default: Any = _ABSENT) -> None:
        """Appends a question block (``jpt_state_add_question``). ``schema``
        is a JSON Schema (a dict) or None for "any answer"; ``default`` is
        any JSON value (None is JSON null), left out when not given."""
        schema_json = None if schema is None else _json_arg(schema, False, "schema")
        default_json = None if default is _ABSENT else _json_arg(default, False, "default")
        self._build(lib.jpt_state_add_question(
            self._p(), _to_c(id, "id"), _to_c(text, "text"), schema_json,
            default_json))

    def add_block(self, block: Union[Dict[str, Any], _Text]) -> None:
        """Appends one content block in RFD 058 / MCP form
        (``jpt_state_add_block_json``): a dict, or its JSON text as str or
        bytes. Any block type works (image, audio and resource_link too).
        A malformed block raises JptError(JPT_ERR_INVALID) with the reason."""
        raw = isinstance(block, (str, bytes, bytearray))
        self._build(lib.jpt_state_add_block_json(
            self._p(), _json_arg(block, raw, "block")))

    def set_structured_content(self, value: Any, raw: bool = False) -> None:
        """Sets MCP ``structuredContent`` (``jpt_state_set_structured_content``),
        replacing an earlier one: a Python value, or JSON text with
        ``raw=True``."""
        self._build(lib.jpt_state_set_structured_content(
            self._p(), _json_arg(value, raw, "structured content")))

    def set_error(self, message: _Text, transient: bool = False) -> None:
        """Marks the state as a stopped error (``jpt_state_set_error``). A
        non-empty message is appended as a text block; content can no longer
        be added afterwards (JPT_ERR_STATE), trace lines can."""
        self._build(lib.jpt_state_set_error(
            self._p(), _to_c(message, "message"), 1 if transient else 0))

    def add_error_trace(self, line: _Text) -> None:
        """Appends a line to the error's trace (``jpt_state_add_error_trace``);
        JptError(JPT_ERR_STATE) when no error is set."""
        self._build(lib.jpt_state_add_error_trace(self._p(), _to_c(line, "line")))

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
        _check(lib.jpt_state_to_json(self._p(), form,
                                      JPT_JSON_PRETTY if pretty else 0,
                                      ctypes.byref(out)))
        return _take_text(out, "jpt_state_to_json")

    def render(self, root: Optional[_Path] = None) -> str:
        """The text the model reads for this state (``jpt_state_render``).
        File resources beneath ``root`` (a path or file:// URI) are named
        relative to it; without one, by their absolute URI."""
        opts = _RenderOptions(ctypes.sizeof(_RenderOptions), _to_c(root, "root"))
        out = ctypes.c_void_p()
        _check(lib.jpt_state_render(self._p(), ctypes.byref(opts),
                                     ctypes.byref(out)))
        return _take_text(out, "jpt_state_render")
