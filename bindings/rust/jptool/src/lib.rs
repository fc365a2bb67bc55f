//! jptool from Rust: run the tool calls an LLM emits as processes (or Rust
//! callbacks), driven from the host's own event loop, and turn them back
//! into results for the model (RFD 009 stateful handles, RFD 037 await,
//! RFD 058 content blocks).
//!
//! The safe API over `jptool-sys`, which libjptool's headers document
//! function by function (`include/jptool/registry.h`, `state.h`):
//!
//! - [`Registry`]: tool definitions, batches of calls ([`Batch`]), the
//!   event loop ([`AsRawFd`](std::os::unix::io::AsRawFd) on the registry,
//!   [`Registry::timeout`], [`Registry::dispatch`]), [`Event`]s, the
//!   inquiry handler (a closure receiving each [`Inquiry`]), builtin tools
//!   (a [`Builtin`], or a closure, driving a [`Handle`]), notifications and
//!   the turn end.
//! - [`State`]: a tool's output as typed content blocks, parsed, built,
//!   serialised and rendered.
//! - Every fallible call returns [`Result<T>`](Result), whose [`Error`]
//!   carries the status code and the library's message.
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
//! Callbacks (the inquiry handler, builtins' methods) run inside
//! [`Registry::dispatch`], [`Registry::run`] and [`Registry::wait`] (and
//! [`Drop`] of the registry, for builtins' `abort`). A panic in one is
//! caught at the C boundary, the call it served fails (an inquiry is
//! cancelled, a builtin's call ends with an error), and the panic resumes
//! when that dispatching call returns.
//!
//! What is not covered (use `jptool-sys`): `jpt_set_allocator` (Rust hosts
//! keep the C library's allocator), `jpt_handle_set_userdata` and
//! `jpt_handle_get_userdata` (the crate keeps its [`Handle`] there: a
//! builtin keeps its own data, e.g. in a map by [`Handle::id`]), and
//! `jpt_free` (every string the library returns is copied into a `String`
//! and freed).

mod error;
mod event;
mod handle;
mod inquiry;
mod log;
mod registry;
mod state;

pub use crate::error::{last_error, status_name, strerror, Error, ErrorKind, Result};
pub use crate::event::{Event, EventKind};
pub use crate::handle::{Builtin, Handle};
pub use crate::inquiry::{Inquiry, Target};
pub use crate::log::{clear_log, set_log, LogLevel};
pub use crate::registry::{
    reap_stale, Batch, Containment, Dialect, Output, Registry, RegistryOptions, TurnEnd, Waker,
};
pub use crate::state::{
    mime_fence_lang, schema_check, uri_canonicalize, BlockType, Field, JsonForm, Kind, Resource,
    State,
};

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
