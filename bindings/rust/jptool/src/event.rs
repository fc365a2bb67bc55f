//! Event: what happened in the registry (`jpt_event`), popped by the host.
//! A popped event owns copies of its strings, so it may outlive the
//! registry.

use std::fmt;
use std::ptr::NonNull;

use jptool_sys as sys;

use crate::borrowed_str;
use crate::registry::Batch;
use crate::state::Kind;

/// An event's type (`JPT_EVENT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A call has its result.
    CallDone,
    /// Every call of a batch has its result.
    BatchDone,
    /// A running handle produced output (one event until popped).
    Output,
    /// A handle became waiting or stopped.
    State,
    /// [`Registry::shutdown`](crate::Registry::shutdown) is complete.
    Shutdown,
    /// A type this version of the crate does not know.
    Other(i32),
}

/// One event (`jpt_event`), freed on drop.
pub struct Event {
    raw: NonNull<sys::jpt_event>,
}

impl Event {
    pub(crate) unsafe fn from_raw(raw: *mut sys::jpt_event) -> Event {
        Event {
            raw: NonNull::new(raw).expect("jptool returned a NULL event"),
        }
    }

    fn ptr(&self) -> *const sys::jpt_event {
        self.raw.as_ptr()
    }

    /// The event's type.
    pub fn kind(&self) -> EventKind {
        match unsafe { sys::jpt_event_type(self.ptr()) } {
            sys::JPT_EVENT_CALL_DONE => EventKind::CallDone,
            sys::JPT_EVENT_BATCH_DONE => EventKind::BatchDone,
            sys::JPT_EVENT_OUTPUT => EventKind::Output,
            sys::JPT_EVENT_STATE => EventKind::State,
            sys::JPT_EVENT_SHUTDOWN => EventKind::Shutdown,
            other => EventKind::Other(other),
        }
    }

    /// The call id (CallDone).
    pub fn call_id(&self) -> Option<&str> {
        unsafe { borrowed_str(sys::jpt_event_call_id(self.ptr())) }
    }

    /// The handle id (Output, State; CallDone of an action).
    pub fn handle_id(&self) -> Option<&str> {
        unsafe { borrowed_str(sys::jpt_event_handle_id(self.ptr())) }
    }

    /// The tool's name (None for BatchDone and Shutdown).
    pub fn tool(&self) -> Option<&str> {
        unsafe { borrowed_str(sys::jpt_event_tool(self.ptr())) }
    }

    /// The handle's new state (State events).
    pub fn state(&self) -> Option<Kind> {
        Kind::from_raw(unsafe { sys::jpt_event_state(self.ptr()) })
    }

    /// Whether the event is about `batch` (CallDone, BatchDone).
    pub fn is_for(&self, batch: &Batch<'_>) -> bool {
        let of = unsafe { sys::jpt_event_batch(self.ptr()) };
        !of.is_null() && of == batch.as_ptr()
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        unsafe { sys::jpt_event_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("kind", &self.kind())
            .field("call_id", &self.call_id())
            .field("handle_id", &self.handle_id())
            .field("tool", &self.tool())
            .field("state", &self.state())
            .finish()
    }
}
