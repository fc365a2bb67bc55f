"""Loading libjptool and declaring its functions for ctypes: the opaque
types, the structures a host fills in, the callback types, and each
exported function's argument and result types (_PROTOTYPES)."""

from __future__ import annotations

import ctypes
import os
from typing import Tuple

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


lib, library_path = _load_library()
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
    _fn = getattr(lib, _name)
    _fn.restype = _restype
    _fn.argtypes = _argtypes
del _name, _restype, _argtypes, _fn
