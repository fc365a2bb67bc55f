//! jptool from Rust: run the tool calls an LLM emits as processes (or Rust
//! callbacks), driven from the host's own event loop, and turn them back
//! into results for the model (RFD 009 stateful handles, RFD 037 await,
//! RFD 058 content blocks); serve VFS tools (D11), whose every file, URL
//! and process goes through the host, checked against an access policy;
//! and write such tools in Rust.
//!
//! The safe API over `jptool-sys`, which libjptool's headers document
//! function by function (`include/jptool/*.h`):
//!
//! - [`Registry`]: tool definitions, batches of calls ([`Batch`]), the
//!   event loop ([`AsRawFd`](std::os::unix::io::AsRawFd) on the registry,
//!   [`Registry::timeout`], [`Registry::dispatch`]), [`Event`]s, the
//!   inquiry handler (a closure receiving each [`Inquiry`]), builtin tools
//!   (a [`Builtin`], or a closure, driving a [`Handle`]), notifications,
//!   the turn end, and for its "vfs" tools named files backends and a
//!   policy handler.
//! - [`State`]: a tool's output as typed content blocks, parsed, built,
//!   serialised and rendered.
//! - [`VfsHost`]: one VFS tool served from the host's loop, its policy
//!   prompt answered by a closure ([`VfsHost::set_policy_handler`]) now or
//!   later (a [`PolicyRequest`] kept and answered).
//! - [`Files`]: ProjectFiles, a directory, memory, or the host's own
//!   store implemented as a [`FilesBackend`] answering each
//!   [`FilesRequest`] now or later.
//! - [`Policy`]: the access policy on its own ([`Policy::check`],
//!   [`normalize_path`]); [`SandboxReport`]s say what the OS sandbox
//!   enforces ([`VfsHost::sandbox`], [`Registry::tool_sandbox`]).
//! - [`VfsTool`]: the tool side of D11, for a Rust program that is a VFS
//!   tool.
//! - Every fallible call returns [`Result<T>`](Result), whose [`Error`]
//!   carries the status code and the library's message: the object's
//!   (`jpt_*_errmsg`), or for calls without one the thread's
//!   [`last_error`]; where the C call leaves no message, one naming the
//!   call and its argument.
//!
//! JSON crosses the API as text, as in C: tool definitions, calls,
//! results and answers are `&str`/`String` holding JSON.
//!
//! ```no_run
//! use jptool::{Dialect, Registry};
//!
//! # fn main() -> jptool::Result<()> {
//! let registry = Registry::new()?; // workspace root: the current directory
//! registry.load_tools(r#"{"tools":[{"name":"sh","stateful":true,"command":["sh"]}]}"#)?;
//! let tools = registry.tools_json(Dialect::ANTHROPIC)?; // send with the request
//! # let _ = tools;
//! // The reply's content, as it came: its tool_use blocks are the calls.
//! let batch = registry.submit(
//!     r#"[{"type":"tool_use","id":"toolu_1","name":"sh","input":{"action":"spawn","id":"shell"}}]"#,
//! )?;
//! registry.wait(&batch, None)?;
//! println!("{}", batch.results_json_as(Dialect::AS_CALLED)?); // tool_result blocks
//! # Ok(())
//! # }
//! ```
//!
//! The crate's `examples/` show each part at work: `host` (a registry:
//! one-shot, stateful and await calls from a poll() loop), `vfs_host` (a
//! VfsHost whose policy closure answers now and later), `files_backend`
//! (a host-supplied files backend under a registry's "vfs" tool) and
//! `vfs_tool` (a VFS tool written with [`VfsTool`]).
//!
//! # Threads
//!
//! The types say what the C headers say. A [`Registry`] or a [`VfsHost`]
//! and everything it hands out ([`Batch`], [`Event`], [`Inquiry`],
//! [`Handle`], [`PolicyRequest`]) are used from the thread that made them
//! (its tool processes die with the thread that spawned them, and
//! callbacks run inside its dispatch): none is `Send`. So is a [`Files`]
//! backend, which the hosts using it share, with its [`FilesRequest`]s.
//! The one thread-safe part of a registry, `jpt_registry_wakeup`, is a
//! [`Waker`]: `Send`, `Sync` and `'static`. A [`State`] (atomic reference
//! count, immutable once shared) and a [`Policy`] (never changes once made)
//! are `Send` and `Sync`; a [`VfsTool`] is `Send` (one thread at a time).
//!
//! ```compile_fail,E0277
//! let registry = jptool::Registry::new().unwrap();
//! std::thread::spawn(move || drop(registry)); // a Registry is not Send
//! ```
//!
//! ```
//! let registry = jptool::Registry::new().unwrap();
//! let waker = registry.waker();
//! std::thread::spawn(move || waker.wake()).join().unwrap(); // a Waker is
//! ```
//!
//! # Lifetimes
//!
//! A [`Batch`] borrows its registry, so it cannot outlive it:
//!
//! ```compile_fail,E0597
//! let batch = {
//!     let registry = jptool::Registry::new().unwrap();
//!     registry.submit("[]").unwrap()
//! }; // `registry` dropped here while still borrowed
//! ```
//!
//! What the C library frees on its own schedule is copied or checked: an
//! [`Event`] owns its strings; an [`Inquiry`] or a [`Handle`] kept past its
//! registry, or a [`PolicyRequest`] past its host, fails cleanly
//! ([`ErrorKind::Cancelled`], [`ErrorKind::State`]); a [`FilesRequest`]
//! keeps its backend's Rust side alive until it is answered. A
//! [`VfsTool`] borrows the fds it was connected on.
//!
//! # Panics in callbacks
//!
//! A panic never unwinds into C: each callback (inquiry, policy, output,
//! builtin, files backend, on_pending) runs under `catch_unwind`. What it
//! was serving fails as if it had answered with an error — an inquiry is
//! cancelled, a policy request denied ("the host's policy handler
//! panicked"), a files request failed with [`ErrorKind::Io`] ("the host's
//! files backend panicked"), a builtin's call fails — and the panic then
//! resumes (`resume_unwind`) when the crate call that entered C returns:
//! the dispatch, run or wait, the [`Files`] method, the [`VfsTool`]
//! call, or the drop of the registry or host (unless the thread is
//! unwinding already). A panic in the log hook aborts the process: it has
//! no caller to resume in.
//!
//! # Coverage
//!
//! Every function `lib/jptool.sym` exports is called by a safe wrapper
//! here, or listed in [`UNWRAPPED`] with the reason; a test
//! (`tests/coverage.rs`) fails otherwise. [`version`], [`strerror`],
//! [`status_name`], `jpt_free` (every string the library returns is copied
//! and freed), and the handle userdata (where [`Handle`] keeps itself) are
//! among the wrapped ones.

mod alloc;
mod error;
mod event;
mod files;
mod handle;
mod inquiry;
mod log;
mod panic;
mod policy;
mod registry;
mod sandbox;
mod state;
mod vfs_host;
mod vfs_tool;

pub use crate::alloc::{use_c_allocator, use_rust_allocator};
pub use crate::error::{last_error, status_name, strerror, Error, ErrorKind, Result};
pub use crate::event::{Event, EventKind};
pub use crate::files::{
    DirEntry, DirOptions, FileData, FileKind, Files, FilesBackend, FilesRequest, Metadata,
};
pub use crate::handle::{Builtin, Handle};
pub use crate::inquiry::{Inquiry, Target};
pub use crate::log::{clear_log, set_log, LogLevel};
pub use crate::policy::{normalize_path, Access, Check, Decision, Policy, PolicyRequest, Verdict};
pub use crate::registry::{
    reap_stale, Batch, Containment, Dialect, Output, Registry, RegistryOptions, TurnEnd, Waker,
};
pub use crate::sandbox::{Enforced, SandboxMode, SandboxReport};
pub use crate::state::{
    mime_fence_lang, schema_check, uri_canonicalize, BlockType, Field, JsonForm, Kind, Resource,
    State,
};
pub use crate::vfs_host::{RequestTimeout, VfsHost, VfsHostOptions};
pub use crate::vfs_tool::{ConnectOptions, Exit, GrepQuery, HttpResponse, ProcessOutput, VfsTool};

/// The exported C functions this crate does not wrap, each with the
/// reason (`jpt_` name, why). Every other function of `lib/jptool.sym` is
/// called by a safe wrapper; `tests/coverage.rs` checks both ways. Empty:
/// every function is wrapped. A function the library adds is wrapped
/// (one small method beside its neighbours) or listed here.
pub const UNWRAPPED: &[(&str, &str)] = &[];

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_void};

use jptool_sys as sys;

/// The library's version, "MAJOR.MINOR.PATCH" (`jpt_version`).
pub fn version() -> &'static str {
    // SAFETY: static storage, never NULL.
    unsafe { CStr::from_ptr(sys::jpt_version()) }
        .to_str()
        .unwrap_or("")
}

/// `s` as a C string; `what` names the argument when it holds a NUL byte,
/// which a C string cannot carry.
pub(crate) fn c_string(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| {
        Error::new(
            ErrorKind::Invalid,
            format!(
                "{} holds a NUL byte, which jptool's C strings cannot carry",
                what
            ),
        )
    })
}

/// An optional C string: NULL for None.
pub(crate) fn c_string_opt(s: Option<&str>, what: &str) -> Result<Option<CString>> {
    s.map(|s| c_string(s, what)).transpose()
}

pub(crate) fn c_ptr(s: &Option<CString>) -> *const c_char {
    s.as_ref().map_or(std::ptr::null(), |s| s.as_ptr())
}

/// Copies a string the library handed over (a `char **out`) and frees it
/// with `jpt_free`.
pub(crate) fn take_string(p: *mut c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the library returned a NUL-terminated string it allocated.
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    unsafe { sys::jpt_free(p as *mut c_void) };
    s
}

/// A borrowed C string as UTF-8, or None for NULL. The caller ties the
/// lifetime to the object that owns the string.
pub(crate) unsafe fn borrowed_str<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        None
    } else {
        CStr::from_ptr(p).to_str().ok()
    }
}

/// A C string copied into an owned String (lossy), or None for NULL.
pub(crate) unsafe fn owned_str(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        Some(CStr::from_ptr(p).to_string_lossy().into_owned())
    }
}
