//! VfsHost (vfs.h, "A standalone host"): serves one VFS tool from the
//! host's own loop, through a files backend, after an access policy whose
//! questions go to a policy handler (a closure).

use std::ffi::{CStr, CString, OsStr};
use std::fmt;
use std::os::raw::{c_char, c_void};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::{AsFd, AsRawFd, BorrowedFd, IntoRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::ptr::{self, NonNull};
use std::rc::Rc;
use std::time::Duration;

use jptool_sys as sys;

use crate::error::{check, check_new, Error, ErrorKind, Result};
use crate::files::Files;
use crate::panic;
use crate::policy::{policy_trampoline, PolicyRequest, PolicySlot};
use crate::registry::millis;
use crate::sandbox::{Enforced, SandboxMode, SandboxReport};
use crate::state::State;
use crate::{c_ptr, c_string, c_string_opt};

/// How long a VFS tool may go without a request or a result before it is
/// stopped (`jpt_vfs_host_options.request_timeout_ms`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum RequestTimeout {
    /// 60 s.
    #[default]
    Default,
    /// No limit.
    Never,
    /// This long (at least a millisecond; longer than `i32::MAX` ms
    /// saturates).
    After(Duration),
}

/// Options for [`VfsHost::with_options`] (`jpt_vfs_host_options`). None
/// (or the default) means the library's default, given in vfs.h.
#[derive(Clone, Debug, Default)]
pub struct VfsHostOptions {
    /// The tool's files (the host takes a reference); None: the
    /// directory [`VfsHostOptions::root`].
    pub files: Option<Files>,
    /// With `files` None: the workspace directory (default: the current
    /// directory).
    pub root: Option<PathBuf>,
    /// The tool's `sandbox` section as JSON text (the access policy);
    /// None: D11's default (workspace read-only).
    pub sandbox_json: Option<String>,
    /// No request nor result for this long stops the tool.
    pub request_timeout: RequestTimeout,
    /// After `cancel`, before SIGTERM, and again before SIGKILL (5 s).
    pub kill_grace: Option<Duration>,
    /// The longest line from the tool (10 MiB + 64 KiB).
    pub max_message: Option<usize>,
    /// Protocol violations tolerated (16).
    pub max_violations: Option<u32>,
    /// The spawned tool's OS sandbox (default: required).
    pub sandbox_mode: SandboxMode,
    /// Absolute paths the spawned tool may also read and execute (its
    /// libraries or interpreter outside /usr).
    pub sandbox_read: Vec<PathBuf>,
}

/// A standalone VFS host (`jpt_vfs_host`): one tool, spawned
/// ([`VfsHost::spawn`], in the OS sandbox) or on fds the application made
/// ([`VfsHost::attach`]), served from the host's loop: poll its fd
/// ([`AsRawFd`]) for reading for at most [`VfsHost::timeout`], then
/// [`VfsHost::dispatch`], or let [`VfsHost::run`] do both.
///
/// Neither `Send` nor `Sync`: it is driven from the thread that created
/// it (its tool dies with the thread that spawned it), and the
/// [`PolicyRequest`]s it hands out are answered there. Dropping it kills
/// a tool still running (SIGKILL) and reaps it.
///
/// ```compile_fail,E0277
/// let host = jptool::VfsHost::new().unwrap();
/// std::thread::spawn(move || drop(host)); // a VfsHost is not Send
/// ```
pub struct VfsHost {
    raw: NonNull<sys::jpt_vfs_host>,
    /// Where the C policy callback's `ud` points; freed after the host.
    policy: Box<PolicySlot>,
}

fn path_c(path: &std::path::Path, what: &str) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        Error::new(
            ErrorKind::Invalid,
            format!("{} holds a NUL byte: {}", what, path.display()),
        )
    })
}

impl VfsHost {
    /// A host with every default: the current directory, D11's default
    /// policy, the OS sandbox required (`jpt_vfs_host_new(NULL)`).
    pub fn new() -> Result<VfsHost> {
        VfsHost::create(ptr::null())
    }

    /// A host with `options`. A sandbox section the policy refuses is
    /// [`ErrorKind::Invalid`] naming the key.
    pub fn with_options(options: &VfsHostOptions) -> Result<VfsHost> {
        let root = options
            .root
            .as_deref()
            .map(|p| path_c(p, "the root"))
            .transpose()?;
        let sandbox = c_string_opt(options.sandbox_json.as_deref(), "the sandbox section")?;
        let read: Vec<CString> = options
            .sandbox_read
            .iter()
            .map(|p| path_c(p, "a sandbox_read path"))
            .collect::<Result<_>>()?;
        let mut read_ptrs: Vec<*const c_char> = read.iter().map(|p| p.as_ptr()).collect();
        read_ptrs.push(ptr::null());
        let opts = sys::jpt_vfs_host_options {
            size: std::mem::size_of::<sys::jpt_vfs_host_options>(),
            files: options
                .files
                .as_ref()
                .map_or(ptr::null_mut(), Files::as_ptr),
            root: c_ptr(&root),
            sandbox_json: c_ptr(&sandbox),
            request_timeout_ms: match options.request_timeout {
                RequestTimeout::Default => 0,
                RequestTimeout::Never => -1,
                RequestTimeout::After(d) => millis(Some(d), 0).max(1),
            },
            kill_grace_ms: millis(options.kill_grace, 0),
            max_message: options.max_message.unwrap_or(0),
            max_violations: options.max_violations.unwrap_or(0),
            sandbox_mode: options.sandbox_mode.raw(),
            sandbox_read: if read.is_empty() {
                ptr::null()
            } else {
                read_ptrs.as_ptr()
            },
        };
        VfsHost::create(&opts)
    }

    fn create(opts: *const sys::jpt_vfs_host_options) -> Result<VfsHost> {
        let mut out = ptr::null_mut();
        check_new(unsafe { sys::jpt_vfs_host_new(opts, &mut out) })?;
        Ok(VfsHost {
            raw: NonNull::new(out).expect("jpt_vfs_host_new gave no host"),
            policy: Box::default(),
        })
    }

    /// The raw host, owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::jpt_vfs_host {
        self.raw.as_ptr()
    }

    /// A call's status as a Result, the host's message on failure; first
    /// resumes a panic a callback (the policy handler, a files backend)
    /// raised inside.
    fn done(&self, rc: i32) -> Result<()> {
        panic::resume();
        let raw = self.as_ptr();
        check(rc, || unsafe { sys::jpt_vfs_host_errmsg(raw) })
    }

    /// Starts the tool (`jpt_vfs_host_spawn`): `argv` (`argv[0]` looked up
    /// in PATH unless it has a '/') with stdin and stdout as the
    /// protocol's pipes, then D11's `init` with `tool_json`, an object
    /// `{"name", "arguments", "answers", "options"}` (name required). It
    /// runs in the OS sandbox of the host's mode, its environment PATH
    /// alone. [`ErrorKind::Sandbox`] when the sandbox is required and this
    /// system cannot enforce it (the message names what it lacks).
    pub fn spawn<A: AsRef<OsStr>>(&self, argv: &[A], tool_json: &str) -> Result<()> {
        let args: Vec<CString> = argv
            .iter()
            .map(|a| {
                CString::new(a.as_ref().as_bytes()).map_err(|_| {
                    Error::new(ErrorKind::Invalid, "an argument of argv holds a NUL byte")
                })
            })
            .collect::<Result<_>>()?;
        let mut ptrs: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(ptr::null());
        let tool = c_string(tool_json, "the tool JSON")?;
        let rc = unsafe { sys::jpt_vfs_host_spawn(self.as_ptr(), ptrs.as_ptr(), tool.as_ptr()) };
        self.done(rc)
    }

    /// Serves a tool the application started itself
    /// (`jpt_vfs_host_attach`): its messages are read from `read` and
    /// written to `write`, which the host owns from now on (it closes them
    /// when the tool ends or the host drops). The tool ends when `read`
    /// reaches its end. On error the fds are closed here.
    pub fn attach(&self, read: OwnedFd, write: OwnedFd, tool_json: &str) -> Result<()> {
        let tool = c_string(tool_json, "the tool JSON")?;
        let rc = unsafe {
            sys::jpt_vfs_host_attach(
                self.as_ptr(),
                read.as_raw_fd(),
                write.as_raw_fd(),
                tool.as_ptr(),
            )
        };
        if rc == sys::JPT_OK {
            // The host's now (vfs.h); on failure they stay ours to close.
            let _ = (read.into_raw_fd(), write.into_raw_fd());
        }
        self.done(rc)
    }

    /// How long until [`VfsHost::dispatch`] is due; None when only fd
    /// activity can make work.
    pub fn timeout(&self) -> Option<Duration> {
        let ms = unsafe { sys::jpt_vfs_host_get_timeout(self.as_ptr()) };
        u64::try_from(ms).ok().map(Duration::from_millis)
    }

    /// Does what is ready, without blocking (`jpt_vfs_host_dispatch`):
    /// true if more work is ready at once.
    pub fn dispatch(&self) -> Result<bool> {
        let rc = unsafe { sys::jpt_vfs_host_dispatch(self.as_ptr()) };
        self.done(rc)?;
        Ok(rc > 0)
    }

    /// Polls and dispatches until the tool has ended, or `timeout` passes
    /// ([`ErrorKind::Timeout`]; None: no limit).
    pub fn run(&self, timeout: Option<Duration>) -> Result<()> {
        let rc = unsafe { sys::jpt_vfs_host_run(self.as_ptr(), millis(timeout, -1)) };
        self.done(rc)
    }

    /// A stateful tool's input (RFD 009 apply, D11 `apply`), any JSON
    /// value.
    pub fn apply(&self, input_json: &str) -> Result<()> {
        let input = c_string(input_json, "the input")?;
        let rc = unsafe { sys::jpt_vfs_host_apply(self.as_ptr(), input.as_ptr()) };
        self.done(rc)
    }

    /// Cancels the tool: D11's `cancel`, then SIGTERM and SIGKILL after
    /// the grace; its requests waiting on the policy handler are answered
    /// -32005.
    pub fn cancel(&self) -> Result<()> {
        let rc = unsafe { sys::jpt_vfs_host_cancel(self.as_ptr()) };
        self.done(rc)
    }

    /// The tool's latest state (`jpt_vfs_host_state`): running or waiting
    /// as it said, stopped once it ended (its result, or an error state
    /// saying why it failed); None while it has reported nothing.
    pub fn state(&self) -> Result<Option<State>> {
        let mut out = ptr::null_mut();
        let rc = unsafe { sys::jpt_vfs_host_state(self.as_ptr(), &mut out) };
        if rc == sys::JPT_ERR_AGAIN {
            return Ok(None);
        }
        self.done(rc)?;
        // The host keeps its own reference: the state is shared.
        Ok(Some(unsafe { State::from_shared(out) }))
    }

    /// What the spawned tool's OS sandbox enforces, and the sentence
    /// naming what this system lacks (`jpt_vfs_host_sandbox`).
    /// [`ErrorKind::State`] when no tool was spawned.
    pub fn sandbox(&self) -> Result<SandboxReport> {
        let (mut enforced, mut report) = (0u32, ptr::null());
        let rc = unsafe { sys::jpt_vfs_host_sandbox(self.as_ptr(), &mut enforced, &mut report) };
        self.done(rc)?;
        Ok(SandboxReport {
            enforced: Enforced::from_bits(enforced),
            report: if report.is_null() {
                String::new()
            } else {
                // Valid while the host lives: copied now.
                unsafe { CStr::from_ptr(report) }
                    .to_string_lossy()
                    .into_owned()
            },
        })
    }

    /// Whether the tool has ended (its process reaped, or its fds
    /// closed).
    pub fn is_done(&self) -> bool {
        unsafe { sys::jpt_vfs_host_done(self.as_ptr()) != 0 }
    }

    /// Installs the policy handler: `handler` gets each request the
    /// policy asks about, inside dispatch, and answers it then or keeps
    /// the [`PolicyRequest`] to answer later (the tool waits, told
    /// `pending`). It replaces an earlier handler. Without one an ask is
    /// denied. A panic in it denies its request and resumes when the
    /// dispatching call returns.
    pub fn set_policy_handler<F: Fn(PolicyRequest) + 'static>(&self, handler: F) {
        self.policy.set(Some(Rc::new(handler)));
        let ud = &*self.policy as *const PolicySlot as *mut c_void;
        unsafe { sys::jpt_vfs_host_set_policy_handler(self.as_ptr(), Some(policy_trampoline), ud) };
    }

    /// Removes the policy handler: an ask is then denied.
    pub fn clear_policy_handler(&self) {
        unsafe { sys::jpt_vfs_host_set_policy_handler(self.as_ptr(), None, ptr::null_mut()) };
        self.policy.set(None);
    }
}

impl AsRawFd for VfsHost {
    /// The fd to poll for reading; it never changes.
    fn as_raw_fd(&self) -> RawFd {
        unsafe { sys::jpt_vfs_host_get_fd(self.as_ptr()) }
    }
}

impl AsFd for VfsHost {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the host owns the fd and keeps it open while it lives.
        unsafe { BorrowedFd::borrow_raw(self.as_raw_fd()) }
    }
}

impl Drop for VfsHost {
    fn drop(&mut self) {
        // A files backend's release may run here; the policy slot goes
        // after the host, which no longer calls it.
        unsafe { sys::jpt_vfs_host_free(self.as_ptr()) };
        panic::resume_unless_panicking();
    }
}

impl fmt::Debug for VfsHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VfsHost")
            .field("fd", &self.as_raw_fd())
            .field("done", &self.is_done())
            .finish()
    }
}
