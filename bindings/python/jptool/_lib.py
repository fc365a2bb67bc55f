"""Loading libjptool and declaring its functions for ctypes: the opaque
types, the structures a host fills in, the callback types, and each
exported function's argument and result types (_PROTOTYPES), and the same
for mypy (_Lib): ``lib`` is the library, typed as _Lib.

Typing: ctypes gives every function of a library the type "takes
anything, returns Any". _Lib, a Protocol, states instead what each
function of libjptool takes and gives in Python, as _PROTOTYPES makes
ctypes convert it (c_char_p: bytes or None; c_int, c_uint, c_size_t: int;
c_void_p: an int or None; an opaque pointer: its _Pointer; a `T *out`
parameter: what ctypes.byref() gives). ``lib`` is the CDLL cast to _Lib,
this package's one cast from ctypes' Any; test/python/test_api_coverage.py
checks that _Lib and _PROTOTYPES agree, function by function. A function
added to the library is declared in both. A `const char *` result is
bytes, not Optional[bytes], where the header promises a string: the
message getters (never NULL), and the getters that return NULL only for a
NULL object, which this package never passes.
"""

from __future__ import annotations

import ctypes
import os
from typing import TYPE_CHECKING, Dict, List, Optional, Protocol, Tuple, Type, Union, cast

if TYPE_CHECKING:
    from ctypes import _CArgObject, _CData, _FuncPointer, _Pointer

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
          "(`meson install`, then `ldconfig`). A VFS tool gets only PATH and "
          "the variables its definition passes: pass it jptool.python_tool_env().")


_cdll, library_path = _load_library()
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
#
# (A callback's c_char_p parameter arrives as bytes, or None for NULL. The
# Python functions these types wrap are typed as the headers promise: a
# parameter the library never passes as NULL is bytes.)
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
_PROTOTYPES: Dict[str, Tuple[Optional[Type[_CData]], List[Type[_CData]]]] = {
    # common.h
    "jpt_version": (_c_str, []),
    "jpt_strerror": (_c_str, [_c_int]),
    "jpt_status_name": (_c_str, [_c_int]),
    "jpt_free": (None, [_c_void]),
    "jpt_last_error": (_c_str, []),
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
    "jpt_registry_take_turn_text": (_c_int, [_RegistryPtr, _BatchPtr, _out_str]),
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
    "jpt_policy_request_requested_path": (_c_str, [_PolicyRequestPtr]),
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
    _fn = getattr(_cdll, _name)
    _fn.restype = _restype
    _fn.argtypes = _argtypes
del _name, _restype, _argtypes, _fn

# ---- The functions' types, for mypy ---------------------------------------------

if TYPE_CHECKING:
    # The pointers to the opaque types, as ctypes makes them.
    _StateP = _Pointer[_jpt_state]
    _RegistryP = _Pointer[_jpt_registry]
    _BatchP = _Pointer[_jpt_batch]
    _EventP = _Pointer[_jpt_event]
    _InquiryP = _Pointer[_jpt_inquiry]
    _HandleP = _Pointer[_jpt_handle]
    _PolicyP = _Pointer[_jpt_policy]
    _FilesP = _Pointer[_jpt_files]
    _FilesRequestP = _Pointer[_jpt_files_request]
    _PolicyRequestP = _Pointer[_jpt_policy_request]
    _VfsHostP = _Pointer[_jpt_vfs_host]
    # A `T *` argument: what ctypes.byref() gives, or None for NULL.
    _Ref = Optional[_CArgObject]
    # A `void *` argument.
    _VoidArg = Union[int, None, ctypes.c_void_p]
    # A NULL-terminated `char *` array (argv).
    _StringArray = ctypes.Array[ctypes.c_char_p]
    # A C callback made with a CFUNCTYPE type above.
    _Callback = _FuncPointer


class _Lib(Protocol):
    """libjptool's functions as this package calls them (see the module's
    docstring); the parameter names are the headers'."""

    def jpt_version(self) -> bytes: ...
    def jpt_strerror(self, status: int) -> bytes: ...
    def jpt_status_name(self, status: int) -> Optional[bytes]: ...
    def jpt_free(self, p: _VoidArg) -> None: ...
    def jpt_last_error(self) -> bytes: ...
    def jpt_set_allocator(self, a: _Ref) -> int: ...
    def jpt_set_log(self, fn: _Callback, ud: _VoidArg, min_level: int) -> None: ...
    def jpt_state_parse(self, data: Optional[bytes], len: int, flags: int, out: _Ref) -> int: ...
    def jpt_state_ref(self, s: _StateP) -> _StateP: ...
    def jpt_state_unref(self, s: _StateP) -> None: ...
    def jpt_state_kind(self, s: _StateP) -> int: ...
    def jpt_state_is_error(self, s: _StateP) -> int: ...
    def jpt_state_error_message(self, s: _StateP) -> bytes: ...
    def jpt_state_error_transient(self, s: _StateP) -> int: ...
    def jpt_state_error_trace_count(self, s: _StateP) -> int: ...
    def jpt_state_error_trace(self, s: _StateP, i: int) -> Optional[bytes]: ...
    def jpt_state_structured_content(self, s: _StateP) -> Optional[bytes]: ...
    def jpt_state_block_count(self, s: _StateP) -> int: ...
    def jpt_state_block_type(self, s: _StateP, i: int) -> int: ...
    def jpt_state_block_field(self, s: _StateP, i: int, field: int, len: _Ref
                             ) -> Optional[int]: ...
    def jpt_state_warning_count(self, s: _StateP) -> int: ...
    def jpt_state_warning(self, s: _StateP, i: int) -> Optional[bytes]: ...
    def jpt_state_errmsg(self, s: _StateP) -> bytes: ...
    def jpt_state_new(self, kind: int, out: _Ref) -> int: ...
    def jpt_state_add_text(self, s: _StateP, text: Optional[bytes]) -> int: ...
    def jpt_state_add_resource(self, s: _StateP, r: _Ref) -> int: ...
    def jpt_state_add_question(self, s: _StateP, id: Optional[bytes], text: Optional[bytes],
                               schema_json: Optional[bytes], default_json: Optional[bytes]
                              ) -> int: ...
    def jpt_state_add_block_json(self, s: _StateP, block_json: Optional[bytes]) -> int: ...
    def jpt_state_set_structured_content(self, s: _StateP, json: Optional[bytes]) -> int: ...
    def jpt_state_set_error(self, s: _StateP, message: Optional[bytes], transient: int) -> int: ...
    def jpt_state_add_error_trace(self, s: _StateP, line: Optional[bytes]) -> int: ...
    def jpt_state_to_json(self, s: _StateP, form: int, flags: int, out: _Ref) -> int: ...
    def jpt_state_render(self, s: _StateP, opts: _Ref, out: _Ref) -> int: ...
    def jpt_uri_canonicalize(self, uri: Optional[bytes], root: Optional[bytes], out: _Ref
                            ) -> int: ...
    def jpt_mime_fence_lang(self, mime_type: Optional[bytes]) -> Optional[bytes]: ...
    def jpt_schema_check(self, schema_json: Optional[bytes], value_json: Optional[bytes], why: _Ref
                        ) -> int: ...
    def jpt_registry_new(self, opts: _Ref, out: _Ref) -> int: ...
    def jpt_registry_free(self, r: _RegistryP) -> None: ...
    def jpt_registry_shutdown(self, r: _RegistryP) -> int: ...
    def jpt_registry_errmsg(self, r: _RegistryP) -> bytes: ...
    def jpt_registry_load_tools(self, r: _RegistryP, config_json: Optional[bytes], flags: int
                               ) -> int: ...
    def jpt_registry_add_builtin(self, r: _RegistryP, definition_json: Optional[bytes], ops: _Ref,
                                 ud: _VoidArg) -> int: ...
    def jpt_handle_update(self, h: _HandleP, state: _StateP) -> int: ...
    def jpt_handle_id(self, h: _HandleP) -> bytes: ...
    def jpt_handle_tool(self, h: _HandleP) -> bytes: ...
    def jpt_handle_set_userdata(self, h: _HandleP, data: _VoidArg) -> None: ...
    def jpt_handle_get_userdata(self, h: _HandleP) -> Optional[int]: ...
    def jpt_registry_tools_json(self, r: _RegistryP, dialect: int, out: _Ref) -> int: ...
    def jpt_registry_submit(self, r: _RegistryP, calls_json: Optional[bytes], out: _Ref
                           ) -> int: ...
    def jpt_batch_done(self, b: _BatchP) -> int: ...
    def jpt_batch_results_json(self, b: _BatchP, out: _Ref) -> int: ...
    def jpt_batch_results_json_as(self, b: _BatchP, dialect: int, out: _Ref) -> int: ...
    def jpt_batch_cancel(self, b: _BatchP) -> None: ...
    def jpt_batch_cancel_call(self, b: _BatchP, call_id: Optional[bytes]) -> int: ...
    def jpt_batch_set_call_timeout(self, b: _BatchP, call_id: Optional[bytes], timeout_ms: int
                                  ) -> int: ...
    def jpt_registry_set_output_handler(self, r: _RegistryP, fn: _Callback, ud: _VoidArg
                                       ) -> None: ...
    def jpt_batch_free(self, b: _BatchP) -> None: ...
    def jpt_registry_get_fd(self, r: _RegistryP) -> int: ...
    def jpt_registry_get_timeout(self, r: _RegistryP) -> int: ...
    def jpt_registry_dispatch(self, r: _RegistryP) -> int: ...
    def jpt_registry_run(self, r: _RegistryP, timeout_ms: int) -> int: ...
    def jpt_registry_wait(self, r: _RegistryP, b: _BatchP, timeout_ms: int) -> int: ...
    def jpt_registry_wakeup(self, r: _RegistryP) -> int: ...
    def jpt_registry_next_event(self, r: _RegistryP, out: _Ref) -> int: ...
    def jpt_event_type(self, e: _EventP) -> int: ...
    def jpt_event_call_id(self, e: _EventP) -> Optional[bytes]: ...
    def jpt_event_handle_id(self, e: _EventP) -> Optional[bytes]: ...
    def jpt_event_tool(self, e: _EventP) -> Optional[bytes]: ...
    def jpt_event_state(self, e: _EventP) -> int: ...
    def jpt_event_batch(self, e: _EventP) -> Optional[int]: ...
    def jpt_event_free(self, e: _EventP) -> None: ...
    def jpt_registry_set_inquiry_handler(self, r: _RegistryP, fn: _Callback, ud: _VoidArg
                                        ) -> None: ...
    def jpt_inquiry_tool(self, q: _InquiryP) -> Optional[bytes]: ...
    def jpt_inquiry_call_id(self, q: _InquiryP) -> Optional[bytes]: ...
    def jpt_inquiry_handle_id(self, q: _InquiryP) -> Optional[bytes]: ...
    def jpt_inquiry_question_json(self, q: _InquiryP) -> bytes: ...
    def jpt_inquiry_target(self, q: _InquiryP) -> int: ...
    def jpt_inquiry_context(self, q: _InquiryP) -> _StateP: ...
    def jpt_inquiry_answer(self, q: _InquiryP, answer_json: Optional[bytes]) -> int: ...
    def jpt_inquiry_cancel(self, q: _InquiryP, reason: Optional[bytes]) -> int: ...
    def jpt_inquiry_errmsg(self, q: _InquiryP) -> bytes: ...
    def jpt_registry_take_notifications(self, r: _RegistryP, json_out: _Ref) -> int: ...
    def jpt_registry_end_turn(self, r: _RegistryP, flags: int, out: _Ref) -> int: ...
    def jpt_registry_take_turn_text(self, r: _RegistryP, turn_end: _BatchP, text_out: _Ref
                                    ) -> int: ...
    def jpt_registry_reap_stale(self, path: Optional[bytes], killed: _Ref) -> int: ...
    def jpt_registry_add_files(self, r: _RegistryP, name: Optional[bytes], files: _FilesP
                              ) -> int: ...
    def jpt_registry_set_policy_handler(self, r: _RegistryP, fn: _Callback, ud: _VoidArg
                                       ) -> None: ...
    def jpt_registry_tool_sandbox(self, r: _RegistryP, tool: Optional[bytes], enforced: _Ref,
                                  report: _Ref) -> int: ...
    def jpt_policy_new(self, sandbox_json: Optional[bytes], out: _Ref) -> int: ...
    def jpt_policy_free(self, p: _PolicyP) -> None: ...
    def jpt_policy_errmsg(self, p: _PolicyP) -> bytes: ...
    def jpt_policy_check(self, p: _PolicyP, access: int, target: Optional[bytes], reason: _Ref
                        ) -> int: ...
    def jpt_policy_hardlinks_allowed(self, p: _PolicyP) -> int: ...
    def jpt_policy_normalize_path(self, path: Optional[bytes], out: _Ref) -> int: ...
    def jpt_files_open_dir(self, root: Optional[bytes], flags: int, out: _Ref) -> int: ...
    def jpt_files_new_memory(self, out: _Ref) -> int: ...
    def jpt_files_new(self, ops: _Ref, ud: _VoidArg, out: _Ref) -> int: ...
    def jpt_files_request_reply(self, req: _FilesRequestP, result_json: Optional[bytes]
                               ) -> int: ...
    def jpt_files_request_fail(self, req: _FilesRequestP, status: int, message: Optional[bytes]
                              ) -> int: ...
    def jpt_files_free(self, f: _FilesP) -> None: ...
    def jpt_files_errmsg(self, f: _FilesP) -> bytes: ...
    def jpt_files_read(self, f: _FilesP, path: Optional[bytes], limit: int, data: _Ref, len: _Ref,
                       utf8: _Ref) -> int: ...
    def jpt_files_write(self, f: _FilesP, path: Optional[bytes], data: Optional[bytes], len: int
                       ) -> int: ...
    def jpt_files_exists(self, f: _FilesP, path: Optional[bytes], exists: _Ref) -> int: ...
    def jpt_files_metadata(self, f: _FilesP, path: Optional[bytes], kind: _Ref, size: _Ref
                          ) -> int: ...
    def jpt_files_list_dir(self, f: _FilesP, path: Optional[bytes], entries: _Ref, count: _Ref
                          ) -> int: ...
    def jpt_files_delete(self, f: _FilesP, path: Optional[bytes]) -> int: ...
    def jpt_files_rename(self, f: _FilesP, from_: Optional[bytes], to: Optional[bytes]) -> int: ...
    def jpt_files_grep(self, f: _FilesP, params_json: Optional[bytes], result_json: _Ref
                      ) -> int: ...
    def jpt_files_call(self, f: _FilesP, method: Optional[bytes], params_json: Optional[bytes],
                       result_json: _Ref) -> int: ...
    def jpt_policy_request_tool(self, req: _PolicyRequestP) -> bytes: ...
    def jpt_policy_request_method(self, req: _PolicyRequestP) -> bytes: ...
    def jpt_policy_request_path(self, req: _PolicyRequestP) -> bytes: ...
    def jpt_policy_request_requested_path(self, req: _PolicyRequestP) -> bytes: ...
    def jpt_policy_request_access(self, req: _PolicyRequestP) -> int: ...
    def jpt_policy_request_reason(self, req: _PolicyRequestP) -> bytes: ...
    def jpt_policy_request_id(self, req: _PolicyRequestP) -> Optional[bytes]: ...
    def jpt_policy_request_answer(self, req: _PolicyRequestP, decision: int,
                                  reason: Optional[bytes]) -> int: ...
    def jpt_vfs_host_new(self, opts: _Ref, out: _Ref) -> int: ...
    def jpt_vfs_host_spawn(self, h: _VfsHostP, argv: _StringArray, tool_json: Optional[bytes]
                          ) -> int: ...
    def jpt_vfs_host_attach(self, h: _VfsHostP, read_fd: int, write_fd: int,
                            tool_json: Optional[bytes]) -> int: ...
    def jpt_vfs_host_get_fd(self, h: _VfsHostP) -> int: ...
    def jpt_vfs_host_get_timeout(self, h: _VfsHostP) -> int: ...
    def jpt_vfs_host_dispatch(self, h: _VfsHostP) -> int: ...
    def jpt_vfs_host_run(self, h: _VfsHostP, timeout_ms: int) -> int: ...
    def jpt_vfs_host_apply(self, h: _VfsHostP, input_json: Optional[bytes]) -> int: ...
    def jpt_vfs_host_cancel(self, h: _VfsHostP) -> int: ...
    def jpt_vfs_host_state(self, h: _VfsHostP, out: _Ref) -> int: ...
    def jpt_vfs_host_sandbox(self, h: _VfsHostP, enforced: _Ref, report: _Ref) -> int: ...
    def jpt_vfs_host_done(self, h: _VfsHostP) -> int: ...
    def jpt_vfs_host_set_policy_handler(self, h: _VfsHostP, fn: _Callback, ud: _VoidArg
                                       ) -> None: ...
    def jpt_vfs_host_errmsg(self, h: _VfsHostP) -> bytes: ...
    def jpt_vfs_host_free(self, h: _VfsHostP) -> None: ...



# The one cast (the module's docstring says why it is sound).
lib = cast(_Lib, _cdll)
