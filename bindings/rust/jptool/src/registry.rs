//! Registry and Batch (registry.h): tool definitions, batches of calls,
//! the event loop, notifications and the turn end; and the state the
//! registry shares with its callbacks (closures kept alive until it drops).

use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::fmt;
use std::marker::PhantomData;
use std::os::raw::c_void;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::path::{Path, PathBuf};
use std::ptr;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jptool_sys as sys;

use crate::error::{check, check_new, Error, ErrorKind, Result};
use crate::event::Event;
use crate::files::Files;
use crate::handle::{self, Builtin, BuiltinSlot};
use crate::inquiry::{self, Inquiry};
use crate::panic;
use crate::policy::{policy_trampoline, PolicyRequest, PolicySlot};
use crate::sandbox::{Enforced, SandboxMode, SandboxReport};
use crate::{c_ptr, c_string, take_string};

type InquiryFn = Rc<dyn Fn(Inquiry)>;
type OutputFn = Rc<dyn Fn(&Output<'_>)>;

/// What the registry shares with its callbacks and with the [`Inquiry`]s
/// it hands out, which may outlive it.
pub(crate) struct Shared {
    /// False once the registry is being freed: inquiries are then the
    /// library's to free.
    alive: Cell<bool>,
    inquiry_handler: RefCell<Option<InquiryFn>>,
    policy: PolicySlot,
    output_handler: RefCell<Option<OutputFn>>,
    /// Boxed: each slot's address is a builtin's `ud`, which must not
    /// move when the vector grows.
    #[allow(clippy::vec_box)]
    builtins: RefCell<Vec<Box<BuiltinSlot>>>,
}

/// A piece of a tool's output as it was read, handed to
/// [`Registry::set_output_handler`]: what a UI shows while the tool runs.
/// It consumes nothing the model reads.
#[derive(Debug, Clone, Copy)]
pub struct Output<'a> {
    /// The call id of a one-shot call, or the handle id.
    pub id: &'a str,
    /// The tool's name.
    pub tool: &'a str,
    /// True when `id` is a handle's (a spawn).
    pub stateful: bool,
    /// True for stderr, false for stdout.
    pub stderr: bool,
    /// The bytes as the tool wrote them.
    pub data: &'a [u8],
}

unsafe extern "C" fn output_trampoline(o: *const sys::jpt_output, ud: *mut c_void) {
    let shared_ptr = ud as *const Shared;
    // SAFETY: the registry holds a strong reference while it can dispatch.
    Rc::increment_strong_count(shared_ptr);
    let shared = Rc::from_raw(shared_ptr);
    let o = &*o;
    let text = |p: *const std::os::raw::c_char| {
        if p.is_null() {
            ""
        } else {
            std::ffi::CStr::from_ptr(p).to_str().unwrap_or("")
        }
    };
    let output = Output {
        id: text(o.id),
        tool: text(o.tool),
        stateful: o.stateful != 0,
        stderr: o.stream == sys::JPT_STREAM_STDERR,
        data: if o.len == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(o.data as *const u8, o.len)
        },
    };
    let handler = shared.output_handler.borrow().clone();
    if let Some(handler) = handler {
        panic::guard(move || handler(&output));
    }
}

impl Shared {
    pub(crate) fn alive(&self) -> bool {
        self.alive.get()
    }

    pub(crate) fn inquiry_handler(&self) -> Option<InquiryFn> {
        self.inquiry_handler.borrow().clone()
    }
}

/// Where a tool's process tree ends (`JPT_CONTAIN_*`; registry.h says what
/// each guarantees).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Containment {
    /// A cgroup where the host's cgroup allows it, else the session.
    #[default]
    Auto,
    /// Every process of the tool, in a cgroup of its own.
    Cgroup,
    /// The host becomes a child subreaper and finds strays by a mark.
    Subreaper,
    /// The process group only.
    Session,
}

/// Options for [`Registry::with_options`] (`jpt_registry_options`). None
/// (or zero) means the library's default, given in registry.h.
#[derive(Clone, Debug, Default)]
pub struct RegistryOptions {
    /// The workspace root, the tools' working directory (default: the
    /// current directory).
    pub root: Option<PathBuf>,
    /// SIGTERM to SIGKILL (5 s).
    pub kill_grace: Option<Duration>,
    /// Output kept per stream (1 MiB).
    pub capture_bytes: Option<usize>,
    /// Bytes of output the model reads per result (30000).
    pub output_limit: Option<usize>,
    /// spawn/apply answer once output is quiet this long (150 ms).
    pub settle: Option<Duration>,
    /// … or this long after the action at most (10 s).
    pub yield_after: Option<Duration>,
    /// Reading after a child exits, for output a grandchild holds (100 ms).
    pub drain: Option<Duration>,
    /// Questions answered per one-shot call (16).
    pub max_inquiry_rounds: Option<u32>,
    /// Where output longer than the model reads is written whole.
    pub spool_dir: Option<PathBuf>,
    /// Spool files outlive the registry (`JPT_REGISTRY_KEEP_SPOOL`).
    pub keep_spool: bool,
    /// Live children recorded here, for [`reap_stale`].
    pub state_file: Option<PathBuf>,
    /// How long the turn end waits for handles (120 s).
    pub turn_end_timeout: Option<Duration>,
    /// Tool processes alive at once.
    pub max_processes: Option<usize>,
    /// Events queued before the oldest is dropped (4096).
    pub max_events: Option<usize>,
    /// What the end of a tool's process kills.
    pub containment: Containment,
    /// The OS sandbox mode of the "vfs" tools and of the stdio tools
    /// that ask for one, unless a definition's `os_sandbox` says
    /// otherwise (default: required).
    pub sandbox_mode: SandboxMode,
}

fn path_c_string(path: &Path, what: &str) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        Error::new(
            ErrorKind::Invalid,
            format!("{} holds a NUL byte: {}", what, path.display()),
        )
    })
}

fn path_c_string_opt(path: &Option<PathBuf>, what: &str) -> Result<Option<CString>> {
    path.as_deref().map(|p| path_c_string(p, what)).transpose()
}

/// Milliseconds for the C API: None and durations too long for an int
/// saturate as documented (None: `none`).
pub(crate) fn millis(d: Option<Duration>, none: i32) -> i32 {
    match d {
        None => none,
        Some(d) => i32::try_from(d.as_millis()).unwrap_or(i32::MAX),
    }
}

/// A tool-list or results dialect (`JPT_DIALECT_*`), with forms OR'd in
/// by [`Dialect::strict`] and [`Dialect::one_of`]. registry.h says which
/// provider takes which.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dialect(i32);

impl Dialect {
    /// Results only: each in the shape its call came in.
    pub const AS_CALLED: Dialect = Dialect(sys::JPT_DIALECT_AS_CALLED);
    /// OpenAI Chat Completions.
    pub const OPENAI: Dialect = Dialect(sys::JPT_DIALECT_OPENAI);
    /// OpenAI Responses.
    pub const OPENAI_RESPONSES: Dialect = Dialect(sys::JPT_DIALECT_OPENAI_RESPONSES);
    /// Anthropic Messages.
    pub const ANTHROPIC: Dialect = Dialect(sys::JPT_DIALECT_ANTHROPIC);
    /// Gemini.
    pub const GEMINI: Dialect = Dialect(sys::JPT_DIALECT_GEMINI);
    /// An MCP server's tools/list (tool lists only).
    pub const MCP: Dialect = Dialect(sys::JPT_DIALECT_MCP);

    /// OpenAI's strict mode (`JPT_DIALECT_STRICT`; OpenAI dialects only).
    pub fn strict(self) -> Dialect {
        Dialect(self.0 | sys::JPT_DIALECT_STRICT)
    }

    /// RFD 009's oneOf schemas exactly (`JPT_DIALECT_ONEOF`).
    pub fn one_of(self) -> Dialect {
        Dialect(self.0 | sys::JPT_DIALECT_ONEOF)
    }

    /// The C value.
    pub fn raw(self) -> i32 {
        self.0
    }
}

/// How [`Registry::end_turn`] treats live handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TurnEnd {
    /// Each tool's on_turn_end policy (RFD 037).
    Policies,
    /// Kill nothing: handles past their wait stay (`JPT_TURN_KEEP`).
    Keep,
    /// Kill every live handle at once (`JPT_TURN_ABORT`).
    Abort,
}

/// A registry: tool definitions and the handles of running tools
/// (`jpt_registry`). Drive it from the thread that created it (it is
/// neither `Send` nor `Sync`; children die with the thread that spawned
/// them): poll its fd ([`AsRawFd`]) for reading for at most
/// [`Registry::timeout`], then [`Registry::dispatch`], or let
/// [`Registry::wait`] do both. Dropping it ends every tool process
/// (blocking up to the kill grace; call [`Registry::shutdown`] first to
/// avoid that) and frees the closures it keeps.
///
/// What it hands out is bound to it as the C docs say: a [`Batch`]
/// borrows it (it cannot outlive it), and [`Event`]s, [`Inquiry`]s,
/// [`Handle`](crate::Handle)s and [`PolicyRequest`]s stay on its thread
/// (none is `Send`); an Inquiry or a Handle kept past the registry fails
/// with [`ErrorKind::Cancelled`] or [`ErrorKind::State`] instead of
/// touching freed memory. The one part another thread may use is a
/// [`Waker`].
pub struct Registry {
    raw: *mut sys::jpt_registry,
    shared: Rc<Shared>,
    waker: Arc<WakerTarget>,
}

impl Registry {
    /// A registry with every default (`jpt_registry_new(NULL)`).
    pub fn new() -> Result<Registry> {
        Registry::create(ptr::null())
    }

    /// A registry with `options`.
    pub fn with_options(options: &RegistryOptions) -> Result<Registry> {
        let root = path_c_string_opt(&options.root, "the root")?;
        let spool_dir = path_c_string_opt(&options.spool_dir, "the spool directory")?;
        let state_file = path_c_string_opt(&options.state_file, "the state file")?;
        let opts = sys::jpt_registry_options {
            size: std::mem::size_of::<sys::jpt_registry_options>(),
            root: c_ptr(&root),
            kill_grace_ms: millis(options.kill_grace, 0),
            capture_bytes: options.capture_bytes.unwrap_or(0),
            output_limit: options.output_limit.unwrap_or(0),
            settle_ms: millis(options.settle, 0),
            yield_ms: millis(options.yield_after, 0),
            drain_ms: millis(options.drain, 0),
            max_inquiry_rounds: options
                .max_inquiry_rounds
                .map_or(0, |n| i32::try_from(n).unwrap_or(i32::MAX)),
            spool_dir: c_ptr(&spool_dir),
            state_file: c_ptr(&state_file),
            turn_end_timeout_ms: millis(options.turn_end_timeout, 0),
            max_processes: options.max_processes.unwrap_or(0),
            max_events: options.max_events.unwrap_or(0),
            flags: if options.keep_spool {
                sys::JPT_REGISTRY_KEEP_SPOOL as u32
            } else {
                0
            },
            containment: match options.containment {
                Containment::Auto => sys::JPT_CONTAIN_AUTO,
                Containment::Cgroup => sys::JPT_CONTAIN_CGROUP,
                Containment::Subreaper => sys::JPT_CONTAIN_SUBREAPER,
                Containment::Session => sys::JPT_CONTAIN_SESSION,
            },
            sandbox_mode: options.sandbox_mode.raw(),
        };
        Registry::create(&opts)
    }

    fn create(opts: *const sys::jpt_registry_options) -> Result<Registry> {
        let mut raw = ptr::null_mut();
        // No registry to hold a message: the thread's last error has it.
        check_new(unsafe { sys::jpt_registry_new(opts, &mut raw) })?;
        Ok(Registry {
            raw,
            shared: Rc::new(Shared {
                alive: Cell::new(true),
                inquiry_handler: RefCell::new(None),
                policy: PolicySlot::default(),
                output_handler: RefCell::new(None),
                builtins: RefCell::new(Vec::new()),
            }),
            waker: Arc::new(WakerTarget(Mutex::new(RawRegistry(raw)))),
        })
    }

    /// The raw registry, for the C API this crate does not cover. It stays
    /// owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::jpt_registry {
        self.raw
    }

    /// A failed call's error, with the registry's message (every failure
    /// of the calls that use this leaves one: registry.h).
    fn check(&self, rc: i32) -> Result<()> {
        let raw = self.raw;
        check(rc, || unsafe { sys::jpt_registry_errmsg(raw) })
    }

    /// [`Registry::check`] after a call that may run callbacks: first
    /// resumes a panic one raised.
    fn done(&self, rc: i32) -> Result<()> {
        panic::resume();
        self.check(rc)
    }

    /// Loads tool definitions: `{"tools": [definition, …]}`, the keys
    /// registry.h lists (`jpt_registry_load_tools`). All are checked before
    /// any is added; the error names the tool and the field.
    pub fn load_tools(&self, config_json: &str) -> Result<()> {
        self.load(config_json, 0)
    }

    /// As [`Registry::load_tools`], a definition replacing a tool of the
    /// same name (`JPT_LOAD_REPLACE`).
    pub fn load_tools_replacing(&self, config_json: &str) -> Result<()> {
        self.load(config_json, sys::JPT_LOAD_REPLACE as u32)
    }

    fn load(&self, config_json: &str, flags: u32) -> Result<()> {
        let config = c_string(config_json, "the tool config")?;
        self.check(unsafe { sys::jpt_registry_load_tools(self.raw, config.as_ptr(), flags) })
    }

    /// Adds a builtin tool, implemented by `builtin` (a [`Builtin`], or a
    /// closure `Fn(&Handle, &str) -> Result<()>` for the start of a call),
    /// from a definition (the keys of load_tools but runtime and command).
    /// The registry keeps `builtin` until it drops.
    pub fn add_builtin<B: Builtin + 'static>(
        &self,
        definition_json: &str,
        builtin: B,
    ) -> Result<()> {
        let definition = c_string(definition_json, "the builtin definition")?;
        let slot = Box::new(BuiltinSlot::new(Rc::new(builtin)));
        let ops = handle::ops();
        let ud = &*slot as *const BuiltinSlot as *mut c_void;
        self.check(unsafe {
            sys::jpt_registry_add_builtin(self.raw, definition.as_ptr(), &ops, ud)
        })?;
        self.shared.builtins.borrow_mut().push(slot);
        Ok(())
    }

    /// The tools as the model should see them, in `dialect`
    /// (`jpt_registry_tools_json`).
    pub fn tools_json(&self, dialect: Dialect) -> Result<String> {
        let mut out = ptr::null_mut();
        self.check(unsafe { sys::jpt_registry_tools_json(self.raw, dialect.raw(), &mut out) })?;
        Ok(take_string(out))
    }

    /// Submits the tool calls of one model message, in jptool's shape or
    /// as the provider sent them (OpenAI tool_calls, Responses items,
    /// Anthropic content, Gemini parts: `jpt_registry_submit`). A call
    /// that cannot run gets an error result; the batch fails only when the
    /// calls are not such an array.
    pub fn submit(&self, calls_json: &str) -> Result<Batch<'_>> {
        let calls = c_string(calls_json, "the calls")?;
        let mut out = ptr::null_mut();
        self.check(unsafe { sys::jpt_registry_submit(self.raw, calls.as_ptr(), &mut out) })?;
        Ok(Batch {
            raw: out,
            registry: self.raw,
            _registry: PhantomData,
        })
    }

    /// Milliseconds until [`Registry::dispatch`] is due, as a Duration;
    /// None when only fd activity can make work.
    pub fn timeout(&self) -> Option<Duration> {
        let ms = unsafe { sys::jpt_registry_get_timeout(self.raw) };
        u64::try_from(ms).ok().map(Duration::from_millis)
    }

    /// Does what is ready, without blocking (`jpt_registry_dispatch`):
    /// true if more work is ready at once (dispatch again before polling).
    pub fn dispatch(&self) -> Result<bool> {
        let rc = unsafe { sys::jpt_registry_dispatch(self.raw) };
        self.done(rc)?;
        Ok(rc > 0)
    }

    /// Polls and dispatches until no call is in flight, or `timeout`
    /// passes ([`ErrorKind::Timeout`]; None: no limit).
    pub fn run(&self, timeout: Option<Duration>) -> Result<()> {
        let rc = unsafe { sys::jpt_registry_run(self.raw, millis(timeout, -1)) };
        self.wait_status(rc, "run: calls are still in flight")
    }

    /// Polls and dispatches until `batch` is done, or `timeout` passes
    /// ([`ErrorKind::Timeout`]; None: no limit).
    pub fn wait(&self, batch: &Batch<'_>, timeout: Option<Duration>) -> Result<()> {
        if batch.registry != self.raw {
            // The library refuses it too, without a message.
            return Err(Error::new(
                ErrorKind::Invalid,
                "wait: the batch belongs to another registry",
            ));
        }
        let rc = unsafe { sys::jpt_registry_wait(self.raw, batch.raw, millis(timeout, -1)) };
        self.wait_status(rc, "wait: the batch is not done")
    }

    /// run's and wait's status: the timeout is the one failure they
    /// leave no message for.
    fn wait_status(&self, rc: i32, unfinished: &str) -> Result<()> {
        if rc == sys::JPT_ERR_TIMEOUT {
            panic::resume();
            return Err(Error::new(
                ErrorKind::Timeout,
                format!("{} when the timeout passed", unfinished),
            ));
        }
        self.done(rc)
    }

    /// A [`Waker`]: makes the registry's fd readable from any thread
    /// (`jpt_registry_wakeup`), so a thread blocked polling it returns.
    pub fn waker(&self) -> Waker {
        Waker {
            target: self.waker.clone(),
        }
    }

    /// Pops the oldest event, or None when there is none.
    pub fn next_event(&self) -> Option<Event> {
        let mut out = ptr::null_mut();
        if unsafe { sys::jpt_registry_next_event(self.raw, &mut out) } == sys::JPT_OK {
            Some(unsafe { Event::from_raw(out) })
        } else {
            None
        }
    }

    /// The queued events, oldest first, each popped as it is read.
    pub fn events(&self) -> impl Iterator<Item = Event> + '_ {
        std::iter::from_fn(move || self.next_event())
    }

    /// Installs the inquiry handler: `handler` gets each question a tool
    /// asks that the model did not drive, inside dispatch, and answers it
    /// then or keeps the [`Inquiry`] to answer later (the call waits). It
    /// replaces an earlier handler; the registry keeps it until it drops or
    /// [`Registry::clear_inquiry_handler`].
    pub fn set_inquiry_handler<F: Fn(Inquiry) + 'static>(&self, handler: F) {
        *self.shared.inquiry_handler.borrow_mut() = Some(Rc::new(handler));
        let ud = Rc::as_ptr(&self.shared) as *mut c_void;
        unsafe { sys::jpt_registry_set_inquiry_handler(self.raw, Some(inquiry::trampoline), ud) };
    }

    /// Removes the inquiry handler: a question then ends its call with an
    /// error saying that input was required.
    pub fn clear_inquiry_handler(&self) {
        unsafe { sys::jpt_registry_set_inquiry_handler(self.raw, None, ptr::null_mut()) };
        // A handler running now keeps its own reference until it returns.
        *self.shared.inquiry_handler.borrow_mut() = None;
    }

    /// Sets the closure called inside dispatch with each piece of output a
    /// tool process writes, as it is read (`jpt_registry_set_output_handler`):
    /// stdio tools' stdout and stderr, vfs tools' stderr. It consumes
    /// nothing: the model's results and fetches read the same output. The
    /// registry keeps the closure until it is replaced, cleared or the
    /// registry drops; a panic in it resumes when the dispatching call
    /// returns.
    pub fn set_output_handler<F: Fn(&Output<'_>) + 'static>(&self, handler: F) {
        *self.shared.output_handler.borrow_mut() = Some(Rc::new(handler));
        let ud = Rc::as_ptr(&self.shared) as *mut c_void;
        unsafe { sys::jpt_registry_set_output_handler(self.raw, Some(output_trampoline), ud) };
    }

    /// Removes the output handler.
    pub fn clear_output_handler(&self) {
        unsafe { sys::jpt_registry_set_output_handler(self.raw, None, ptr::null_mut()) };
        *self.shared.output_handler.borrow_mut() = None;
    }

    /// Takes the notifications queued since the last call, as JSON for the
    /// model's next message ("[]" when there are none).
    pub fn take_notifications(&self) -> Result<String> {
        let mut out = ptr::null_mut();
        let rc = unsafe { sys::jpt_registry_take_notifications(self.raw, &mut out) };
        if rc < 0 {
            // Its one failure is memory, not always with a message.
            return Err(Error::about(rc, "take_notifications"));
        }
        Ok(take_string(out))
    }

    /// What the tools left since the model's last message, as text to put
    /// in front of its next user message (`jpt_registry_take_turn_text`):
    /// the notifications queued (taken, as [`Registry::take_notifications`]
    /// takes them) and, given the done [`Batch`] that [`Registry::end_turn`]
    /// returned, its results. A provider takes a tool result only for a
    /// call of the message before it, and a turn end's results answer none,
    /// so the model reads them as text: an entry each, a bracketed line
    /// such as ``[Handle `w` (tool `test`) stopped after your last turn]``
    /// and the tool's text after it, ended by a blank line; the
    /// notifications first, then the turn end's results in its order. ""
    /// when there is nothing; a second call gives only what came since.
    /// [`ErrorKind::Invalid`] for a batch that is not this registry's turn
    /// end (a model's batch's results go back as tool results),
    /// [`ErrorKind::State`] while the turn end is still settling; nothing
    /// is taken then.
    pub fn take_turn_text(&self, turn_end: Option<&Batch<'_>>) -> Result<String> {
        let batch: *const sys::jpt_batch = turn_end.map_or(ptr::null(), |b| b.raw);
        let mut out = ptr::null_mut();
        // SAFETY: a batch lives while borrowed; the library checks that it
        // is this registry's turn end.
        self.check(unsafe { sys::jpt_registry_take_turn_text(self.raw, batch, &mut out) })?;
        Ok(take_string(out))
    }

    /// Ends the turn (RFD 037): every live handle meets its tool's
    /// on_turn_end policy, or as `how` says, from the next dispatch. The
    /// batch is done once every handle has settled.
    pub fn end_turn(&self, how: TurnEnd) -> Result<Batch<'_>> {
        let flags = match how {
            TurnEnd::Policies => 0,
            TurnEnd::Keep => sys::JPT_TURN_KEEP as u32,
            TurnEnd::Abort => sys::JPT_TURN_ABORT as u32,
        };
        let mut out = ptr::null_mut();
        self.check(unsafe { sys::jpt_registry_end_turn(self.raw, flags, &mut out) })?;
        Ok(Batch {
            raw: out,
            registry: self.raw,
            _registry: PhantomData,
        })
    }

    /// Begins ending every live handle without blocking, for a host that
    /// closes; keep dispatching. Ok(true) once every process is reaped
    /// (then dropping the registry returns at once), Ok(false) before.
    pub fn shutdown(&self) -> Result<bool> {
        match unsafe { sys::jpt_registry_shutdown(self.raw) } {
            sys::JPT_OK => Ok(true),
            sys::JPT_ERR_AGAIN => Ok(false),
            rc => Err(Error::about(rc, "shutdown")),
        }
    }

    /// What the OS sandbox of `tool`'s processes enforces on this system,
    /// as a spawn now would prepare it (`jpt_registry_tool_sandbox`):
    /// empty for a tool without one. [`ErrorKind::Sandbox`] when its mode
    /// is "required" and this system cannot enforce it (what a spawn would
    /// fail with; the message says what is lacking),
    /// [`ErrorKind::NotFound`] for no such tool.
    pub fn tool_sandbox(&self, tool: &str) -> Result<SandboxReport> {
        let tool = c_string(tool, "the tool name")?;
        let (mut enforced, mut report) = (0u32, ptr::null_mut());
        self.check(unsafe {
            sys::jpt_registry_tool_sandbox(self.raw, tool.as_ptr(), &mut enforced, &mut report)
        })?;
        Ok(SandboxReport {
            enforced: Enforced::from_bits(enforced),
            report: take_string(report),
        })
    }

    /// Names a files backend that "vfs" tool definitions may choose with
    /// `"files": name` (`jpt_registry_add_files`); the registry takes a
    /// reference. A name (1 to 64 of A-Z a-z 0-9 _ -) is added once.
    pub fn add_files(&self, name: &str, files: &Files) -> Result<()> {
        let name = c_string(name, "the files name")?;
        self.check(unsafe { sys::jpt_registry_add_files(self.raw, name.as_ptr(), files.as_ptr()) })
    }

    /// Installs the policy handler of the registry's "vfs" tools
    /// (`jpt_registry_set_policy_handler`): `handler` gets each request
    /// their policy asks about, inside dispatch, and answers it then or
    /// keeps the [`PolicyRequest`] to answer later; its
    /// [`PolicyRequest::id`] is the call id or handle id. Without one an
    /// ask is denied. A panic in it denies its request and resumes when
    /// the dispatching call returns.
    pub fn set_policy_handler<F: Fn(PolicyRequest) + 'static>(&self, handler: F) {
        self.shared.policy.set(Some(Rc::new(handler)));
        let ud = &self.shared.policy as *const PolicySlot as *mut c_void;
        unsafe { sys::jpt_registry_set_policy_handler(self.raw, Some(policy_trampoline), ud) };
    }

    /// Removes the policy handler: an ask is then denied.
    pub fn clear_policy_handler(&self) {
        unsafe { sys::jpt_registry_set_policy_handler(self.raw, None, ptr::null_mut()) };
        self.shared.policy.set(None);
    }
}

impl AsRawFd for Registry {
    /// The epoll fd to poll for reading; it never changes.
    fn as_raw_fd(&self) -> RawFd {
        unsafe { sys::jpt_registry_get_fd(self.raw) }
    }
}

impl AsFd for Registry {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the registry owns the fd and keeps it open while it lives.
        unsafe { BorrowedFd::borrow_raw(self.as_raw_fd()) }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        // Inquiries the host still holds are freed by the library from here.
        self.shared.alive.set(false);
        // No waker wakes it from now on (one waking now finishes first);
        // the lock is not held while callbacks run, which may wake.
        self.waker.0.lock().unwrap_or_else(|e| e.into_inner()).0 = ptr::null_mut();
        unsafe { sys::jpt_registry_free(self.raw) };
        // The closures go with the registry (builtins' aborts ran above).
        let handler = self.shared.inquiry_handler.borrow_mut().take();
        drop(handler);
        self.shared.policy.set(None);
        let output = self.shared.output_handler.borrow_mut().take();
        drop(output);
        let builtins = std::mem::take(&mut *self.shared.builtins.borrow_mut());
        drop(builtins);
        panic::resume_unless_panicking();
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("fd", &self.as_raw_fd())
            .finish()
    }
}

/// Wakes a thread blocked polling the registry's fd: the one part of a
/// registry another thread may use (`jpt_registry_wakeup`, the one
/// thread-safe function of registry.h). `Send` and `Sync`, and `'static`:
/// it may outlive the registry, and then wakes nothing.
#[derive(Clone, Debug)]
pub struct Waker {
    target: Arc<WakerTarget>,
}

/// The registry a Waker wakes, NULL once it is freed; the lock keeps it
/// from being freed during a wakeup.
#[derive(Debug)]
struct WakerTarget(Mutex<RawRegistry>);

#[derive(Debug)]
struct RawRegistry(*mut sys::jpt_registry);

// SAFETY: the pointer is only passed to jpt_registry_wakeup, which may be
// called from any thread while the registry exists, and the registry is
// freed under the same lock after the pointer is cleared.
unsafe impl Send for RawRegistry {}

impl Waker {
    /// Makes the registry's fd readable; false when the registry is gone.
    pub fn wake(&self) -> bool {
        let target = self.target.0.lock().unwrap_or_else(|e| e.into_inner());
        !target.0.is_null() && unsafe { sys::jpt_registry_wakeup(target.0) } == sys::JPT_OK
    }
}

/// The calls of one model message (`jpt_batch`), borrowed from its
/// registry. Dropping it frees it: calls still in flight keep running and
/// their results are dropped.
pub struct Batch<'r> {
    raw: *mut sys::jpt_batch,
    /// The registry it belongs to, compared by [`Registry::wait`].
    registry: *mut sys::jpt_registry,
    _registry: PhantomData<&'r Registry>,
}

impl Batch<'_> {
    /// Whether every call has its result.
    pub fn is_done(&self) -> bool {
        unsafe { sys::jpt_batch_done(self.raw) != 0 }
    }

    /// The results in jptool's shape, one per call in order:
    /// `[{"id", "content", "is_error"}]`; calls still running are
    /// `{"id", "content": null, "is_error": false, "pending": true}`.
    pub fn results_json(&self) -> Result<String> {
        let mut out = ptr::null_mut();
        let rc = unsafe { sys::jpt_batch_results_json(self.raw, &mut out) };
        if rc < 0 {
            return Err(Error::about(rc, "results_json"));
        }
        Ok(take_string(out))
    }

    /// The results of a finished batch in a provider's shape, ready to
    /// send back (`jpt_batch_results_json_as`): [`Dialect::AS_CALLED`]
    /// gives each in the shape its call came in. [`ErrorKind::State`]
    /// while a call is still running; [`ErrorKind::Invalid`] for a dialect
    /// that is not a results dialect, and for a provider's dialect on the
    /// turn end's batch (its results answer no call of the model's: give
    /// them as text, [`Registry::take_turn_text`]); the error's message
    /// says which.
    pub fn results_json_as(&self, dialect: Dialect) -> Result<String> {
        let mut out = ptr::null_mut();
        let rc = unsafe { sys::jpt_batch_results_json_as(self.raw, dialect.raw(), &mut out) };
        let registry = self.registry;
        // SAFETY: the batch borrows its registry, alive; the message is
        // copied at once.
        check(rc, || unsafe { sys::jpt_registry_errmsg(registry) })?;
        Ok(take_string(out))
    }

    /// Cancels every call still in flight, at the next dispatch (RFD 037's
    /// cancellation); finished calls keep their results.
    pub fn cancel(&self) {
        unsafe { sys::jpt_batch_cancel(self.raw) }
    }

    /// Cancels one call of the batch, `call_id` as the model gave it, as
    /// [`Batch::cancel`] cancels each (`jpt_batch_cancel_call`); the others
    /// go on. [`ErrorKind::NotFound`] for an id the batch does not hold.
    pub fn cancel_call(&self, call_id: &str) -> Result<()> {
        let id = c_string(call_id, "call_id")?;
        let rc = unsafe { sys::jpt_batch_cancel_call(self.raw, id.as_ptr()) };
        batch_status(rc, "cancel_call", Some(call_id))
    }

    /// A host-side time limit (`jpt_batch_set_call_timeout`): `timeout_ms`
    /// from now the call (`None`: every call of the batch) is cancelled,
    /// its result saying that it reached the host's time limit, with the
    /// output so far. 0 removes the limit.
    pub fn set_call_timeout(&self, call_id: Option<&str>, timeout_ms: u32) -> Result<()> {
        let id = call_id.map(|s| c_string(s, "call_id")).transpose()?;
        let ms = i32::try_from(timeout_ms).map_err(|_| {
            Error::new(
                ErrorKind::Invalid,
                format!(
                    "set_call_timeout: {} ms is more than an int holds",
                    timeout_ms
                ),
            )
        })?;
        let rc = unsafe {
            sys::jpt_batch_set_call_timeout(
                self.raw,
                id.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
                ms,
            )
        };
        batch_status(rc, "set_call_timeout", call_id)
    }

    pub(crate) fn as_ptr(&self) -> *const sys::jpt_batch {
        self.raw
    }
}

/// A batch call's status: the C batch keeps no message, so the error
/// names the call and the id.
fn batch_status(rc: i32, what: &str, call_id: Option<&str>) -> Result<()> {
    match (rc, call_id) {
        (rc, _) if rc >= 0 => Ok(()),
        (sys::JPT_ERR_NOT_FOUND, Some(id)) => Err(Error::new(
            ErrorKind::NotFound,
            format!("{}: the batch has no call '{}'", what, id),
        )),
        (rc, _) => Err(Error::about(rc, what)),
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        unsafe { sys::jpt_batch_free(self.raw) }
    }
}

impl fmt::Debug for Batch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batch")
            .field("done", &self.is_done())
            .finish()
    }
}

/// Kills the children a crashed host left behind, as recorded in a state
/// file ([`RegistryOptions::state_file`]), removes the file, and returns
/// how many were killed (`jpt_registry_reap_stale`).
pub fn reap_stale(path: &Path) -> Result<usize> {
    let path = path_c_string(path, "the state file")?;
    let mut killed = 0usize;
    check_new(unsafe { sys::jpt_registry_reap_stale(path.as_ptr(), &mut killed) })?;
    Ok(killed)
}
