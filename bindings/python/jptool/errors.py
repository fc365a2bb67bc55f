"""Status codes as exceptions (:class:`JptError`) and as text."""

from __future__ import annotations

from typing import Optional

from ._lib import lib

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


def last_error() -> str:
    """Why the last call on this thread of a library function that has no
    object to keep its message failed (``jpt_last_error``): a constructor
    (``jpt_registry_new``, ``jpt_vfs_host_new``, ``jpt_files_open_dir``,
    ``jpt_policy_new``, …) or a parser (``jpt_state_parse``,
    ``jpt_uri_canonicalize``, …). The JptError those raise carries it
    already; "" when the last such call succeeded."""
    return lib.jpt_last_error().decode("utf-8", "replace")


def _check_new(rc: int) -> int:
    """_check for a function without an object: the exception carries the
    thread's last error, which names the argument or option and why."""
    if rc < 0:
        raise JptError(rc, last_error())
    return rc


def strerror(status: int) -> str:
    """A short English description of a status code (``jpt_strerror``);
    "unknown status" for a code the library does not know."""
    return lib.jpt_strerror(status).decode("utf-8")


def status_name(status: int) -> Optional[str]:
    """The symbolic name of a status code ("JPT_ERR_INVALID"), or None for a
    code this library version does not know (``jpt_status_name``)."""
    name = lib.jpt_status_name(status)
    return None if name is None else name.decode("ascii")
