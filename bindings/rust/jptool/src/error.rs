//! jptool's status codes as a Rust error: the code and the library's
//! message (the object's `jpt_*_errmsg`, and for the calls without an
//! object, the thread's `jpt_last_error`), or, where the C call leaves no
//! message (a batch's calls, a files request's answer), one this crate
//! writes naming the call and the argument. A VFS tool's error also
//! carries the host's JSON-RPC code and data.

use std::ffi::CStr;
use std::fmt;
use std::os::raw::{c_char, c_int};

use jptool_sys as sys;

/// What went wrong, one per `JPT_ERR_*` code (common.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Bad argument or malformed input.
    Invalid,
    /// An allocation failed.
    NoMem,
    /// Unknown tool, handle or path.
    NotFound,
    /// Handle id collision, file exists.
    Exists,
    /// Not valid in the current state.
    State,
    /// Action the tool does not declare, or a feature this build lacks.
    Unsupported,
    /// Access policy.
    Denied,
    /// A deadline passed.
    Timeout,
    /// Cancelled by the host or the peer.
    Cancelled,
    /// OS error.
    Io,
    /// A peer broke the protocol.
    Protocol,
    /// Nothing ready.
    Again,
    /// Sandbox required but not enforceable here.
    Sandbox,
    /// Size or count limit.
    Limit,
    /// A code this version of the crate does not know.
    Other(i32),
}

impl ErrorKind {
    /// The kind of a (negative) status code.
    pub fn from_code(code: i32) -> ErrorKind {
        match code {
            sys::JPT_ERR_INVALID => ErrorKind::Invalid,
            sys::JPT_ERR_NOMEM => ErrorKind::NoMem,
            sys::JPT_ERR_NOT_FOUND => ErrorKind::NotFound,
            sys::JPT_ERR_EXISTS => ErrorKind::Exists,
            sys::JPT_ERR_STATE => ErrorKind::State,
            sys::JPT_ERR_UNSUPPORTED => ErrorKind::Unsupported,
            sys::JPT_ERR_DENIED => ErrorKind::Denied,
            sys::JPT_ERR_TIMEOUT => ErrorKind::Timeout,
            sys::JPT_ERR_CANCELLED => ErrorKind::Cancelled,
            sys::JPT_ERR_IO => ErrorKind::Io,
            sys::JPT_ERR_PROTOCOL => ErrorKind::Protocol,
            sys::JPT_ERR_AGAIN => ErrorKind::Again,
            sys::JPT_ERR_SANDBOX => ErrorKind::Sandbox,
            sys::JPT_ERR_LIMIT => ErrorKind::Limit,
            other => ErrorKind::Other(other),
        }
    }

    /// The status code (`JPT_ERR_*`).
    pub fn code(self) -> i32 {
        match self {
            ErrorKind::Invalid => sys::JPT_ERR_INVALID,
            ErrorKind::NoMem => sys::JPT_ERR_NOMEM,
            ErrorKind::NotFound => sys::JPT_ERR_NOT_FOUND,
            ErrorKind::Exists => sys::JPT_ERR_EXISTS,
            ErrorKind::State => sys::JPT_ERR_STATE,
            ErrorKind::Unsupported => sys::JPT_ERR_UNSUPPORTED,
            ErrorKind::Denied => sys::JPT_ERR_DENIED,
            ErrorKind::Timeout => sys::JPT_ERR_TIMEOUT,
            ErrorKind::Cancelled => sys::JPT_ERR_CANCELLED,
            ErrorKind::Io => sys::JPT_ERR_IO,
            ErrorKind::Protocol => sys::JPT_ERR_PROTOCOL,
            ErrorKind::Again => sys::JPT_ERR_AGAIN,
            ErrorKind::Sandbox => sys::JPT_ERR_SANDBOX,
            ErrorKind::Limit => sys::JPT_ERR_LIMIT,
            ErrorKind::Other(code) => code,
        }
    }
}

/// A failed call: its status code and what the library said about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    code: i32,
    message: String,
    /// The host's JSON-RPC error (a [`VfsTool`](crate::VfsTool) call the
    /// host answered with an error): its code and its data as JSON text.
    rpc: Option<(i32, Option<String>)>,
}

/// The result of every fallible call of this crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error of `kind` with `message` (a builtin tool returns one to
    /// fail its call).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            code: kind.code(),
            message: message.into(),
            rpc: None,
        }
    }

    /// The error with the JSON-RPC error the host answered with.
    pub(crate) fn with_rpc(mut self, code: i32, data: Option<String>) -> Error {
        self.rpc = Some((code, data));
        self
    }

    /// An error for status `code` whose message names what failed:
    /// "`what`: " and the code's description. For the C calls that leave
    /// no message of their own.
    pub(crate) fn about(code: c_int, what: impl fmt::Display) -> Error {
        Error::new(
            ErrorKind::from_code(code),
            format!("{}: {}", what, strerror(code)),
        )
    }

    /// An error for status `code` with the message `msg` points to, or the
    /// code's description when `msg` is NULL or empty.
    pub(crate) fn from_status(code: c_int, msg: *const c_char) -> Error {
        let text = if msg.is_null() {
            String::new()
        } else {
            // SAFETY: the library's messages are NUL-terminated and live
            // until the next call on their object; we copy at once.
            unsafe { CStr::from_ptr(msg) }
                .to_string_lossy()
                .into_owned()
        };
        if text.is_empty() {
            Error::from_code(code)
        } else {
            Error {
                code,
                message: text,
                rpc: None,
            }
        }
    }

    /// An error for status `code` described by `jpt_strerror`.
    pub(crate) fn from_code(code: c_int) -> Error {
        Error {
            code,
            message: strerror(code).to_owned(),
            rpc: None,
        }
    }

    /// The error's kind.
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::from_code(self.code)
    }

    /// The status code (`JPT_ERR_*`, negative).
    pub fn code(&self) -> i32 {
        self.code
    }

    /// What failed, on what, and why.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The JSON-RPC error code (`JPT_VFS_E_*`, e.g. -32001 for a policy
    /// denial) when a VFS host answered the tool's request with an error;
    /// None for every other error (`jpt_vfs_tool_error_code`).
    pub fn rpc_code(&self) -> Option<i32> {
        self.rpc.as_ref().map(|r| r.0)
    }

    /// The `data` of that JSON-RPC error as JSON text, when the host sent
    /// one: process.run's timeout carries what the process wrote
    /// (`jpt_vfs_tool_error_data`).
    pub fn rpc_data(&self) -> Option<&str> {
        self.rpc.as_ref().and_then(|r| r.1.as_deref())
    }

    /// The code's symbolic name ("JPT_ERR_INVALID"), if this library
    /// version knows it.
    pub fn name(&self) -> Option<&'static str> {
        status_name(self.code)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} ({})", self.message, name),
            None => write!(f, "{} (status {})", self.message, self.code),
        }
    }
}

impl std::error::Error for Error {}

/// A short English description of a status code (`jpt_strerror`).
pub fn strerror(code: i32) -> &'static str {
    // SAFETY: static storage, never NULL.
    unsafe { CStr::from_ptr(sys::jpt_strerror(code)) }
        .to_str()
        .unwrap_or("unknown status")
}

/// The symbolic name of a status code (`jpt_status_name`), or None for a
/// code this library version does not know.
pub fn status_name(code: i32) -> Option<&'static str> {
    let p = unsafe { sys::jpt_status_name(code) };
    if p.is_null() {
        return None;
    }
    // SAFETY: static storage.
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// Turns a status into a Result, the message read by `msg` on failure.
pub(crate) fn check(code: c_int, msg: impl FnOnce() -> *const c_char) -> Result<()> {
    if code >= 0 {
        Ok(())
    } else {
        Err(Error::from_status(code, msg()))
    }
}

/// [`check`] for a function that has no object to keep its message (a
/// constructor, a parser): the message is the thread's last error, which
/// names the argument or option and why.
pub(crate) fn check_new(code: c_int) -> Result<()> {
    // SAFETY: never NULL; thread-local text, copied at once.
    check(code, || unsafe { sys::jpt_last_error() })
}

/// Why the last call on this thread of a library function that has no
/// object to keep its message failed (`jpt_last_error`): a constructor
/// (`jpt_registry_new`, …) or a parser (`jpt_state_parse`,
/// `jpt_uri_canonicalize`, …). The [`Error`] those calls return carries it
/// already; "" when the last such call succeeded.
pub fn last_error() -> String {
    // SAFETY: never NULL; thread-local text, copied at once.
    unsafe { CStr::from_ptr(sys::jpt_last_error()) }
        .to_string_lossy()
        .into_owned()
}
