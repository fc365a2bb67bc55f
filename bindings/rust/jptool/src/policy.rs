//! The access policy (vfs.h, "The access policy"): [`Policy`], built from
//! a tool's `sandbox` section, gives each request a verdict; and the
//! policy prompt: a [`PolicyRequest`] the policy asks about, handed to the
//! policy handler of a [`VfsHost`](crate::VfsHost) or a
//! [`Registry`](crate::Registry), to answer at once or later.

use std::cell::RefCell;
use std::fmt;
use std::os::raw::c_void;
use std::ptr::{self, NonNull};
use std::rc::Rc;

use jptool_sys as sys;

use crate::error::{check_new, Error, ErrorKind, Result};
use crate::panic;
use crate::{c_ptr, c_string, c_string_opt, owned_str, take_string};

/// What a request does (`JPT_ACCESS_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Reading a file, fs.exists, fs.metadata, fs.grep (per file).
    Read,
    /// Writing, creating, deleting or renaming a file or directory.
    Write,
    /// Listing a directory.
    List,
    /// http.get and http.post: the target is the URL.
    Http,
    /// process.run: the target is a JSON array of strings, the program
    /// then its arguments.
    Process,
}

impl Access {
    fn raw(self) -> i32 {
        match self {
            Access::Read => sys::JPT_ACCESS_READ,
            Access::Write => sys::JPT_ACCESS_WRITE,
            Access::List => sys::JPT_ACCESS_LIST,
            Access::Http => sys::JPT_ACCESS_HTTP,
            Access::Process => sys::JPT_ACCESS_PROCESS,
        }
    }

    fn from_raw(raw: i32) -> Option<Access> {
        match raw {
            sys::JPT_ACCESS_READ => Some(Access::Read),
            sys::JPT_ACCESS_WRITE => Some(Access::Write),
            sys::JPT_ACCESS_LIST => Some(Access::List),
            sys::JPT_ACCESS_HTTP => Some(Access::Http),
            sys::JPT_ACCESS_PROCESS => Some(Access::Process),
            _ => None,
        }
    }
}

/// A policy's verdict on a request (`JPT_VERDICT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Go ahead.
    Allow,
    /// Refuse; the tool gets -32001 and the reason.
    Deny,
    /// The host's policy handler decides.
    Ask,
}

/// A verdict and the sentence that explains it, for the tool and the
/// policy handler ("fs.read '.env': denied: path is in the sensitive
/// paths list (.env)").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub verdict: Verdict,
    pub reason: String,
}

/// A VFS tool's access policy (`jpt_policy`), built once from the tool
/// definition's `sandbox` section (D11; vfs.h lists the keys). It never
/// changes once made, so it is `Send` and `Sync`.
pub struct Policy {
    raw: NonNull<sys::jpt_policy>,
}

// SAFETY: vfs.h: a policy never changes once made; checking does not
// modify it, so it may be checked from several threads and freed on any.
unsafe impl Send for Policy {}
unsafe impl Sync for Policy {}

impl Policy {
    /// A policy from the JSON text of a `sandbox` section, or D11's
    /// default (workspace read-only, no network, no processes) for None
    /// (`jpt_policy_new`). A configuration that is not JSON or breaks
    /// vfs.h's rules is [`ErrorKind::Invalid`] with the library's message
    /// naming the key (`filesystem.allow[1]: '/etc' is absolute: paths are
    /// relative to the workspace root`).
    pub fn new(sandbox_json: Option<&str>) -> Result<Policy> {
        let sandbox = c_string_opt(sandbox_json, "the sandbox configuration")?;
        let mut out = ptr::null_mut();
        let rc = unsafe { sys::jpt_policy_new(c_ptr(&sandbox), &mut out) };
        if rc < 0 && !out.is_null() {
            // vfs.h: a refused configuration still makes a policy, which
            // holds the message and must be freed.
            let error = Error::from_status(rc, unsafe { sys::jpt_policy_errmsg(out) });
            unsafe { sys::jpt_policy_free(out) };
            return Err(error);
        }
        check_new(rc)?;
        Ok(Policy {
            raw: NonNull::new(out).expect("jpt_policy_new gave no policy"),
        })
    }

    /// The verdict on one request (`jpt_policy_check`): `target` is a
    /// normalised path relative to the workspace root (see
    /// [`normalize_path`]), a URL ([`Access::Http`]), or the command line
    /// as a JSON array of strings ([`Access::Process`]).
    pub fn check(&self, access: Access, target: &str) -> Result<Check> {
        let target_c = c_string(target, "the target")?;
        let mut reason = ptr::null_mut();
        let rc = unsafe {
            sys::jpt_policy_check(
                self.raw.as_ptr(),
                access.raw(),
                target_c.as_ptr(),
                &mut reason,
            )
        };
        let verdict = match rc {
            sys::JPT_VERDICT_ALLOW => Verdict::Allow,
            sys::JPT_VERDICT_DENY => Verdict::Deny,
            sys::JPT_VERDICT_ASK => Verdict::Ask,
            rc if rc == sys::JPT_ERR_INVALID && access == Access::Process => {
                return Err(Error::new(
                    ErrorKind::Invalid,
                    format!(
                        "check: the process target {} is not a non-empty JSON array of strings \
                         with a non-empty program",
                        target
                    ),
                ))
            }
            rc => return Err(Error::about(rc, format_args!("check '{}'", target))),
        };
        Ok(Check {
            verdict,
            reason: take_string(reason),
        })
    }

    /// Whether the files backend may open files with several hard links
    /// (`"filesystem": {"hardlinks": "allow"}`, `jpt_policy_hardlinks_allowed`).
    pub fn hardlinks_allowed(&self) -> bool {
        unsafe { sys::jpt_policy_hardlinks_allowed(self.raw.as_ptr()) != 0 }
    }

    /// The raw policy, owned by `self`.
    pub fn as_ptr(&self) -> *const sys::jpt_policy {
        self.raw.as_ptr()
    }
}

impl Drop for Policy {
    fn drop(&mut self) {
        unsafe { sys::jpt_policy_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("hardlinks_allowed", &self.hardlinks_allowed())
            .finish()
    }
}

/// The normalised form of a requested path, lexically
/// (`jpt_policy_normalize_path`): "." and empty names dropped, "name/.."
/// removed, "" and "./" become ".". [`ErrorKind::Invalid`] for an absolute
/// path or a ".." that leaves the root.
pub fn normalize_path(path: &str) -> Result<String> {
    let path = c_string(path, "the path")?;
    let mut out = ptr::null_mut();
    check_new(unsafe { sys::jpt_policy_normalize_path(path.as_ptr(), &mut out) })?;
    Ok(take_string(out))
}

/// A decision for [`PolicyRequest::answer`] (`JPT_DECISION_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Refuse: the tool gets -32001.
    Deny,
    /// This request only.
    Allow,
    /// This request, and every later one of this tool run for the same
    /// access to the same path (for http.*, the same URL; for
    /// process.run, the same command line).
    AllowAlways,
}

impl Decision {
    fn raw(self) -> i32 {
        match self {
            Decision::Deny => sys::JPT_DECISION_DENY,
            Decision::Allow => sys::JPT_DECISION_ALLOW,
            Decision::AllowAlways => sys::JPT_DECISION_ALLOW_ALWAYS,
        }
    }
}

/// A request of a VFS tool that its policy asks about
/// (`jpt_policy_request`; D11: "not covered by the sandbox config"). The
/// tool waits, told `pending`, until the request is answered: answer it
/// in the handler or keep it and answer later, from the same thread
/// (it is neither `Send` nor `Sync`). Answering consumes it, so a request
/// is answered once. It stays valid past its host or registry (the
/// answer then fails with [`ErrorKind::Cancelled`]); dropped unanswered,
/// it is denied, so a request nobody answers is not kept forever.
///
/// ```compile_fail,E0277
/// fn answer_elsewhere(request: jptool::PolicyRequest) {
///     std::thread::spawn(move || request.allow()); // not Send
/// }
/// ```
pub struct PolicyRequest {
    /// NULL once answered.
    raw: *mut sys::jpt_policy_request,
    tool: String,
    method: String,
    path: String,
    requested_path: String,
    access: Option<Access>,
    reason: String,
    id: Option<String>,
}

impl PolicyRequest {
    /// Copies what the request asks (valid until it is answered).
    unsafe fn from_raw(raw: *mut sys::jpt_policy_request) -> PolicyRequest {
        PolicyRequest {
            raw,
            tool: owned_str(sys::jpt_policy_request_tool(raw)).unwrap_or_default(),
            method: owned_str(sys::jpt_policy_request_method(raw)).unwrap_or_default(),
            path: owned_str(sys::jpt_policy_request_path(raw)).unwrap_or_default(),
            requested_path: owned_str(sys::jpt_policy_request_requested_path(raw))
                .unwrap_or_default(),
            access: Access::from_raw(sys::jpt_policy_request_access(raw)),
            reason: owned_str(sys::jpt_policy_request_reason(raw)).unwrap_or_default(),
            id: owned_str(sys::jpt_policy_request_id(raw)),
        }
    }

    /// The tool's name.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The D11 method ("fs.write", "http.get", "process.run").
    pub fn method(&self) -> &str {
        &self.method
    }

    /// What is asked about: for fs.* the path the request touches (after
    /// symbolic links inside the workspace: what the decision covers;
    /// fs.rename asks about each of its two), a URL, or for process.run
    /// the command line as a JSON array of strings.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// For fs.*, the path as the tool wrote it (it differs from
    /// [`path`](Self::path) when a symbolic link leads elsewhere); for
    /// the other methods the same as [`path`](Self::path).
    pub fn requested_path(&self) -> &str {
        &self.requested_path
    }

    /// The access asked for (None for a kind this crate does not know).
    pub fn access(&self) -> Option<Access> {
        self.access
    }

    /// Why the policy asks, worded for a person.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The call id (one-shot call) or handle id (stateful) the request
    /// belongs to in a registry; None on a standalone VFS host.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// Decides the request (`jpt_policy_request_answer`); `reason` (may
    /// be None) is added to a denial's message to the tool. The tool
    /// hears of it from the next dispatch. [`ErrorKind::Cancelled`] when
    /// the tool's request is gone (the tool ended or was stopped first).
    pub fn answer(mut self, decision: Decision, reason: Option<&str>) -> Result<()> {
        let reason_c = match c_string_opt(reason, "the reason") {
            Ok(reason) => reason,
            // A reason C cannot carry still decides the request.
            Err(e) => {
                self.decide(decision, None)?;
                return Err(e);
            }
        };
        self.decide(decision, reason_c.as_deref())
    }

    fn decide(&mut self, decision: Decision, reason: Option<&std::ffi::CStr>) -> Result<()> {
        let raw = std::mem::replace(&mut self.raw, ptr::null_mut());
        let rc = unsafe {
            sys::jpt_policy_request_answer(
                raw,
                decision.raw(),
                reason.map_or(ptr::null(), |r| r.as_ptr()),
            )
        };
        match rc {
            sys::JPT_OK => Ok(()),
            sys::JPT_ERR_CANCELLED => Err(Error::new(
                ErrorKind::Cancelled,
                format!(
                    "{} '{}': the tool's request is gone (the tool ended or was stopped first)",
                    self.method, self.path
                ),
            )),
            rc => Err(Error::about(
                rc,
                format_args!("answering {} '{}'", self.method, self.path),
            )),
        }
    }

    /// [`PolicyRequest::answer`] with [`Decision::Allow`].
    pub fn allow(self) -> Result<()> {
        self.answer(Decision::Allow, None)
    }

    /// [`PolicyRequest::answer`] with [`Decision::AllowAlways`].
    pub fn allow_always(self) -> Result<()> {
        self.answer(Decision::AllowAlways, None)
    }

    /// [`PolicyRequest::answer`] with [`Decision::Deny`] and `reason`.
    pub fn deny(self, reason: Option<&str>) -> Result<()> {
        self.answer(Decision::Deny, reason)
    }
}

impl Drop for PolicyRequest {
    fn drop(&mut self) {
        if self.raw.is_null() {
            return;
        }
        let reason: &[u8] = if std::thread::panicking() {
            b"the host's policy handler panicked\0"
        } else {
            b"the host dropped the request unanswered\0"
        };
        let reason = std::ffi::CStr::from_bytes_with_nul(reason).expect("NUL-terminated");
        // Cancelled (the tool is gone) is as good as denied here.
        let _ = self.decide(Decision::Deny, Some(reason));
    }
}

impl fmt::Debug for PolicyRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyRequest")
            .field("tool", &self.tool)
            .field("method", &self.method)
            .field("path", &self.path)
            .field("access", &self.access)
            .field("reason", &self.reason)
            .field("id", &self.id)
            .finish()
    }
}

/// A policy handler, shared with a call running it.
pub(crate) type PolicyFn = Rc<dyn Fn(PolicyRequest)>;

/// The policy handler of a registry or a VFS host: the closure, kept
/// where the C callback's `ud` points while the owner lives.
#[derive(Default)]
pub(crate) struct PolicySlot {
    handler: RefCell<Option<PolicyFn>>,
}

impl PolicySlot {
    pub(crate) fn set(&self, handler: Option<PolicyFn>) {
        // A handler running now keeps its own reference until it returns.
        let old = self.handler.replace(handler);
        drop(old);
    }
}

/// The C policy callback; `ud` is the owner's PolicySlot. A handler that
/// panics denies the request it was given (unless it answered it), and
/// the panic resumes when the owner's dispatching call returns.
pub(crate) unsafe extern "C" fn policy_trampoline(
    req: *mut sys::jpt_policy_request,
    ud: *mut c_void,
) {
    let slot = &*(ud as *const PolicySlot);
    let request = PolicyRequest::from_raw(req);
    let handler = slot.handler.borrow().clone();
    match handler {
        Some(handler) => {
            panic::guard(move || handler(request));
        }
        // Installed with the closure and removed with it: not reached,
        // but a request must be answered to be freed.
        None => drop(request),
    }
}
