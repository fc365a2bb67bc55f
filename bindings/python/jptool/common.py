"""common.h's version and log function, and the helpers of state.h:
canonical URIs, code fence languages, the schema check of questions."""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any, Callable, Optional, Tuple

from ._lib import _LogFn, lib
from ._util import _Path, _Text, _from_c, _json_arg, _take_string, _take_text, _to_c
from .constants import JPT_ERR_INVALID, JPT_LOG_WARNING, JPT_OK
from .errors import JptError, _check_new

if TYPE_CHECKING:
    from ._lib import _Callback

# ---- Common -----------------------------------------------------------------


def version() -> str:
    """The library version as "MAJOR.MINOR.PATCH" (``jpt_version``)."""
    return lib.jpt_version().decode("ascii")


_log_callback: Optional[_Callback] = None  # the ctypes function object the library calls


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
        lib.jpt_set_log(_LogFn(0), None, min_level)
        _log_callback = None
        return
    if not callable(fn):
        raise TypeError("set_log: fn must be callable or None")
    log = fn

    def trampoline(level: int, msg: Optional[bytes], _ud: Optional[int]) -> None:
        log(level, _from_c(msg) if msg is not None else "")

    callback = _LogFn(trampoline)
    lib.jpt_set_log(callback, None, min_level)
    _log_callback = callback  # the previous one is no longer referenced by C


# ---- Helpers ------------------------------------------------------------------


def uri_canonicalize(uri: _Text, root: Optional[_Path] = None) -> str:
    """The canonical form of a URI or path for identity
    (``jpt_uri_canonicalize``): a file beneath ``root`` (a path or file://
    URI) relative to it ("src/main.rs", "." for the root), other files as
    file:///… URIs, other URIs with lowercase scheme and host, no default
    port, dot segments resolved and percent-encoding normalised.

    Raises JptError (JPT_ERR_INVALID) for a URI the library rejects.
    """
    out = ctypes.c_void_p()
    _check_new(lib.jpt_uri_canonicalize(_to_c(uri, "uri"), _to_c(root, "root"),
                                         ctypes.byref(out)))
    return _take_text(out, "jpt_uri_canonicalize")


def mime_fence_lang(mime_type: Optional[_Text]) -> Optional[str]:
    """The code fence language for a mime type ("text/rust" -> "rs"), or
    None for an unknown type (``jpt_mime_fence_lang``). Parameters and case
    are ignored; "+json" / "+xml" suffixes give json / xml."""
    lang = lib.jpt_mime_fence_lang(_to_c(mime_type, "mime_type"))
    return None if lang is None else lang.decode("utf-8")


def schema_check(schema: Any, value: Any, *, raw_schema: bool = False,
                 raw_value: bool = False) -> Tuple[bool, Optional[str]]:
    """Checks ``value`` against the JSON Schema ``schema`` as JSON Schema
    draft 7 says (``jpt_schema_check``, whose comment in state.h lists what
    is checked, ignored and refused).

    Both are Python values, written with ``json.dumps``; with
    ``raw_schema=True`` / ``raw_value=True`` the argument is JSON text (str or
    bytes) passed as it is. Returns ``(True, None)`` when the value matches,
    else ``(False, why)``, where ``why`` says what did not match and where
    ("at /files/2: expected string, got integer"), that a text is not JSON,
    or that the schema is malformed. Raises JptError for other failures:
    JPT_ERR_UNSUPPORTED (a keyword jptool does not check, named in the
    message), JPT_ERR_LIMIT, JPT_ERR_NOMEM.
    """
    why = ctypes.c_void_p()
    rc = lib.jpt_schema_check(_json_arg(schema, raw_schema, "schema"),
                               _json_arg(value, raw_value, "value"),
                               ctypes.byref(why))
    reason = _take_string(why)
    if rc == JPT_OK:
        return True, None
    if rc == JPT_ERR_INVALID:
        return False, reason
    raise JptError(rc, reason)
