//! Inquiry: a question a tool asks that the model did not drive
//! (`jpt_inquiry`), handed to the registry's inquiry handler, to answer
//! then or later.
//!
//! The library frees an inquiry when it is answered or cancelled, or with
//! its registry; the Inquiry copies what it asks at once, and knows through
//! the registry's shared part whether the registry is still there, so it
//! may be kept (and dropped) past either.

use std::fmt;
use std::os::raw::c_void;
use std::ptr;
use std::rc::Rc;

use jptool_sys as sys;

use crate::error::{Error, ErrorKind, Result};
use crate::panic;
use crate::registry::Shared;
use crate::state::State;
use crate::{c_ptr, c_string, c_string_opt, owned_str};

/// Who a question is for (the tool's `question_target`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    User,
    Assistant,
}

/// A question for the host (`jpt_inquiry`). Answer it with
/// [`Inquiry::answer`] or decline it with [`Inquiry::cancel`]; until then
/// the call waits. Dropping it unanswered cancels it.
pub struct Inquiry {
    /// NULL once answered, cancelled, or freed with the registry.
    raw: *mut sys::jpt_inquiry,
    shared: Rc<Shared>,
    tool: Option<String>,
    call_id: Option<String>,
    handle_id: Option<String>,
    question_json: String,
    target: Target,
    context: Option<State>,
}

/// Called by the library inside dispatch; `ud` is the registry's Shared.
pub(crate) unsafe extern "C" fn trampoline(q: *mut sys::jpt_inquiry, ud: *mut c_void) {
    let shared_ptr = ud as *const Shared;
    // SAFETY: the registry holds a strong reference while it can dispatch.
    Rc::increment_strong_count(shared_ptr);
    let shared = Rc::from_raw(shared_ptr);
    let inquiry = Inquiry {
        raw: q,
        shared: shared.clone(),
        tool: owned_str(sys::jpt_inquiry_tool(q)),
        call_id: owned_str(sys::jpt_inquiry_call_id(q)),
        handle_id: owned_str(sys::jpt_inquiry_handle_id(q)),
        question_json: owned_str(sys::jpt_inquiry_question_json(q)).unwrap_or_default(),
        target: if sys::jpt_inquiry_target(q) == sys::JPT_TARGET_ASSISTANT {
            Target::Assistant
        } else {
            Target::User
        },
        context: State::from_borrowed(sys::jpt_inquiry_context(q)),
    };
    match shared.inquiry_handler() {
        // A panic drops the inquiry as it unwinds, which cancels it.
        Some(handler) => {
            panic::guard(move || handler(inquiry));
        }
        None => drop(inquiry),
    }
}

impl Inquiry {
    /// The tool that asks; None for the turn end's question.
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// The call the question belongs to (the one-shot call that asks, or
    /// the await that watched the handle when it asked); None for the turn
    /// end's.
    pub fn call_id(&self) -> Option<&str> {
        self.call_id.as_deref()
    }

    /// The handle whose question it is (a stateful handle asking while an
    /// await watches it), or None.
    pub fn handle_id(&self) -> Option<&str> {
        self.handle_id.as_deref()
    }

    /// RFD 058's `{"id","text","schema","default"}` JSON.
    pub fn question_json(&self) -> &str {
        &self.question_json
    }

    /// Whom to ask.
    pub fn target(&self) -> Target {
        self.target
    }

    /// The blocks the tool showed before its question (may be empty).
    pub fn context(&self) -> Option<&State> {
        self.context.as_ref()
    }

    /// Whether the question still waits for an answer.
    pub fn is_pending(&self) -> bool {
        !self.raw.is_null() && self.shared.alive()
    }

    fn pending_raw(&mut self) -> Result<*mut sys::jpt_inquiry> {
        if self.raw.is_null() {
            return Err(Error::new(
                ErrorKind::State,
                "the question was answered or cancelled already",
            ));
        }
        if !self.shared.alive() {
            self.raw = ptr::null_mut();
            return Err(Error::new(
                ErrorKind::Cancelled,
                "the registry that asked the question is gone",
            ));
        }
        Ok(self.raw)
    }

    /// Answers with JSON checked against the question's schema
    /// (`jpt_inquiry_answer`). [`ErrorKind::Invalid`] (not JSON, or it
    /// does not fit), `NoMem` and `State` leave the question pending for
    /// another try; [`ErrorKind::Cancelled`] means what it asked about
    /// has ended, and the question is gone.
    pub fn answer(&mut self, answer_json: &str) -> Result<()> {
        let raw = self.pending_raw()?;
        let answer = c_string(answer_json, "the answer")?;
        let rc = unsafe { sys::jpt_inquiry_answer(raw, answer.as_ptr()) };
        match rc {
            sys::JPT_OK => {
                self.raw = ptr::null_mut();
                Ok(())
            }
            sys::JPT_ERR_CANCELLED => {
                self.raw = ptr::null_mut();
                Err(Error::new(
                    ErrorKind::Cancelled,
                    "the question's call ended before the answer came",
                ))
            }
            _ => Err(Error::from_status(rc, unsafe {
                sys::jpt_inquiry_errmsg(raw)
            })),
        }
    }

    /// Declines the question (`jpt_inquiry_cancel`): a one-shot call ends
    /// with an error naming `reason`, a stateful handle is stopped, and
    /// the turn end treats its handles as "await".
    pub fn cancel(&mut self, reason: Option<&str>) -> Result<()> {
        let raw = self.pending_raw()?;
        let reason = c_string_opt(reason, "the reason")?;
        let rc = unsafe { sys::jpt_inquiry_cancel(raw, c_ptr(&reason)) };
        if rc < 0 {
            // Its one failure is memory, which leaves no message.
            return Err(Error::about(rc, "cancelling the question"));
        }
        self.raw = ptr::null_mut();
        Ok(())
    }
}

impl Drop for Inquiry {
    fn drop(&mut self) {
        if self.is_pending() {
            // Out of memory keeps it; the registry frees it in the end.
            let _ = self.cancel(Some("the host dropped the question unanswered"));
        }
    }
}

impl fmt::Debug for Inquiry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inquiry")
            .field("tool", &self.tool)
            .field("call_id", &self.call_id)
            .field("handle_id", &self.handle_id)
            .field("question_json", &self.question_json)
            .field("target", &self.target)
            .field("pending", &self.is_pending())
            .finish()
    }
}
