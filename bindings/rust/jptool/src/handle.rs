//! Builtin tools implemented in Rust (`jpt_registry_add_builtin`): the
//! Builtin trait the registry calls back, and Handle, one call or spawn of
//! such a tool (`jpt_handle`), through which it reports its progress.
//!
//! A Handle stays usable until the tool reports a stopped state or its
//! abort callback has returned (registry.h, jpt_handle_update); after
//! that its methods fail with ErrorKind::State instead of touching a
//! handle the registry may have freed. The registry's handle keeps one
//! reference to the Handle's shared part in its userdata, given back at
//! that point.

use std::cell::Cell;
use std::ffi::CStr;
use std::fmt;
use std::os::raw::{c_char, c_int, c_void};
use std::ptr;
use std::rc::Rc;

use jptool_sys as sys;

use crate::error::{Error, ErrorKind, Result};
use crate::panic;
use crate::state::{Kind, State};

/// A builtin tool: the host's own code run as a tool (RFD 009, "Toward
/// sub-agents"). The methods run inside dispatch; the tool reports each
/// call's progress through its [`Handle`], from them or at any later time.
/// A closure `Fn(&Handle, &str) -> Result<()>` is a Builtin whose `start`
/// it is. Methods take `&self`: a builtin that keeps state uses `Cell` or
/// `RefCell`, as callbacks may be re-entered (a callback may dispatch).
pub trait Builtin {
    /// A call or spawn begins; `arguments_json` is the arguments object
    /// (without action and id). An error fails the call (no update is
    /// needed then; the message is not passed on, only the code).
    fn start(&self, handle: &Handle, arguments_json: &str) -> Result<()>;

    /// Input for a running handle, or the answer to its question, as JSON.
    /// The default refuses it ([`ErrorKind::Unsupported`]).
    fn apply(&self, handle: &Handle, input_json: &str) -> Result<()> {
        let _ = (handle, input_json);
        Err(Error::new(
            ErrorKind::Unsupported,
            "this builtin takes no input",
        ))
    }

    /// The handle is being aborted (by the model, the turn end, or because
    /// the registry drops); the registry marks it stopped after this
    /// returns, unless it reports its own stop here.
    fn abort(&self, handle: &Handle) {
        let _ = handle;
    }
}

impl<F> Builtin for F
where
    F: Fn(&Handle, &str) -> Result<()>,
{
    fn start(&self, handle: &Handle, arguments_json: &str) -> Result<()> {
        self(handle, arguments_json)
    }
}

/// What the registry keeps per builtin tool: the implementation. Boxed,
/// so the address given to C as `ud` is stable.
pub(crate) struct BuiltinSlot {
    builtin: Rc<dyn Builtin>,
}

impl BuiltinSlot {
    pub(crate) fn new(builtin: Rc<dyn Builtin>) -> BuiltinSlot {
        BuiltinSlot { builtin }
    }
}

pub(crate) fn ops() -> sys::jpt_builtin_ops {
    sys::jpt_builtin_ops {
        size: std::mem::size_of::<sys::jpt_builtin_ops>(),
        start: Some(start_trampoline),
        apply: Some(apply_trampoline),
        abort: Some(abort_trampoline),
    }
}

struct HandleInner {
    /// NULL once the handle is no longer the host's to use.
    raw: Cell<*mut sys::jpt_handle>,
    id: String,
    tool: String,
}

/// One call or spawn of a builtin tool (`jpt_handle`). Clones share it: a
/// builtin may keep one to report progress later, outside dispatch too,
/// on the registry's thread (it is not `Send`). Kept past its end (or
/// past the registry), it refuses updates with [`ErrorKind::State`].
#[derive(Clone)]
pub struct Handle {
    inner: Rc<HandleInner>,
}

impl Handle {
    /// A new Handle for `raw`, the registry's reference in its userdata.
    unsafe fn attach(raw: *mut sys::jpt_handle) -> Handle {
        let text = |p: *const c_char| CStr::from_ptr(p).to_string_lossy().into_owned();
        let handle = Handle {
            inner: Rc::new(HandleInner {
                raw: Cell::new(raw),
                id: text(sys::jpt_handle_id(raw)),
                tool: text(sys::jpt_handle_tool(raw)),
            }),
        };
        let reference = Rc::into_raw(handle.inner.clone());
        sys::jpt_handle_set_userdata(raw, reference as *mut c_void);
        handle
    }

    /// The Handle `raw` carries, or None once it was released.
    unsafe fn from_userdata(raw: *mut sys::jpt_handle) -> Option<Handle> {
        let p = sys::jpt_handle_get_userdata(raw) as *const HandleInner;
        if p.is_null() {
            return None;
        }
        Rc::increment_strong_count(p);
        Some(Handle {
            inner: Rc::from_raw(p),
        })
    }

    /// The handle is no longer the host's: forget the raw pointer and give
    /// back the registry's reference. `tell_registry`: the raw handle may
    /// still be used, so its userdata is cleared too.
    fn release(&self, tell_registry: bool) {
        let raw = self.inner.raw.replace(ptr::null_mut());
        if raw.is_null() {
            return;
        }
        if tell_registry {
            unsafe { sys::jpt_handle_set_userdata(raw, ptr::null_mut()) };
        }
        // SAFETY: attach() gave the registry this one reference.
        unsafe { Rc::decrement_strong_count(Rc::as_ptr(&self.inner)) };
    }

    /// The handle's id: the model's, for a stateful spawn; the call id for
    /// a one-shot call.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The tool's name.
    pub fn tool(&self) -> &str {
        &self.inner.tool
    }

    /// Whether the handle still takes updates (it has not stopped, and
    /// its abort has not run).
    pub fn is_live(&self) -> bool {
        !self.inner.raw.get().is_null()
    }

    /// Reports the handle's state (`jpt_handle_update`): output so far
    /// (running), a question (waiting) or the end (stopped). The content
    /// is copied. After a stopped state the handle is done.
    pub fn update(&self, state: &State) -> Result<()> {
        let raw = self.inner.raw.get();
        if raw.is_null() {
            return Err(Error::new(
                ErrorKind::State,
                format!(
                    "handle '{}' of '{}' has stopped or was aborted",
                    self.inner.id, self.inner.tool
                ),
            ));
        }
        let stopping = state.kind() == Kind::Stopped;
        let rc = unsafe { sys::jpt_handle_update(raw, state.as_ptr()) };
        if rc < 0 {
            return Err(Error::new(
                ErrorKind::from_code(rc),
                format!(
                    "updating handle '{}' of '{}': {}",
                    self.inner.id,
                    self.inner.tool,
                    crate::strerror(rc)
                ),
            ));
        }
        if stopping {
            // registry.h: once stopped, the handle must not be used again.
            self.release(false);
        }
        Ok(())
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("id", &self.inner.id)
            .field("tool", &self.inner.tool)
            .field("live", &self.is_live())
            .finish()
    }
}

/// The status a builtin's result gives C: an error's (negative) code.
fn status(result: Option<Result<()>>) -> c_int {
    match result {
        Some(Ok(())) => sys::JPT_OK,
        Some(Err(e)) if e.code() < 0 => e.code(),
        Some(Err(_)) => sys::JPT_ERR_INVALID,
        // It panicked: the panic resumes when the dispatch returns.
        None => sys::JPT_ERR_CANCELLED,
    }
}

unsafe extern "C" fn start_trampoline(
    h: *mut sys::jpt_handle,
    arguments_json: *const c_char,
    ud: *mut c_void,
) -> c_int {
    let slot = &*(ud as *const BuiltinSlot);
    let handle = Handle::attach(h);
    let arguments = CStr::from_ptr(arguments_json).to_string_lossy();
    let builtin = slot.builtin.clone();
    let rc = status(panic::guard(|| builtin.start(&handle, &arguments)));
    if rc < 0 {
        // A call that failed to start gets no update; it is over for the host.
        handle.release(true);
    }
    rc
}

unsafe extern "C" fn apply_trampoline(
    h: *mut sys::jpt_handle,
    input_json: *const c_char,
    ud: *mut c_void,
) -> c_int {
    let slot = &*(ud as *const BuiltinSlot);
    let handle = match Handle::from_userdata(h) {
        Some(handle) => handle,
        None => return sys::JPT_ERR_STATE,
    };
    let input = CStr::from_ptr(input_json).to_string_lossy();
    let builtin = slot.builtin.clone();
    status(panic::guard(|| builtin.apply(&handle, &input)))
}

unsafe extern "C" fn abort_trampoline(h: *mut sys::jpt_handle, ud: *mut c_void) {
    let slot = &*(ud as *const BuiltinSlot);
    let handle = match Handle::from_userdata(h) {
        Some(handle) => handle,
        None => return,
    };
    let builtin = slot.builtin.clone();
    panic::guard(|| builtin.abort(&handle));
    // registry.h: once the abort callback has returned, the handle is gone.
    handle.release(true);
}
