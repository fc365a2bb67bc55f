//! Panics in callbacks: a Rust panic must not unwind into C, so every
//! `extern "C"` trampoline of the crate runs its Rust code under
//! [`guard`], which catches the panic and keeps it in this thread's slot;
//! the crate function that entered C (a dispatch, a wait, a files method,
//! a drop) calls [`resume`] once C has returned, and the panic goes on
//! from there. Callbacks run only inside such calls, on the caller's
//! thread (the objects that call back are `!Send`), so a thread-local slot
//! is exactly the call's.

use std::any::Any;
use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};

thread_local! {
    /// The first panic caught since the last [`resume`]; later ones are
    /// dropped (their messages were printed by the panic hook already).
    static CAUGHT: RefCell<Option<Box<dyn Any + Send>>> = RefCell::new(None);
}

/// Runs `f`, catching a panic instead of letting it unwind into C: None if
/// it panicked (the caller then fails what the callback was serving).
pub(crate) fn guard<T>(f: impl FnOnce() -> T) -> Option<T> {
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => Some(value),
        Err(payload) => {
            CAUGHT.with(|slot| {
                let mut slot = slot.borrow_mut();
                if slot.is_none() {
                    *slot = Some(payload);
                }
            });
            None
        }
    }
}

/// Resumes the panic a callback raised inside the C call that just
/// returned, if any.
pub(crate) fn resume() {
    if let Some(payload) = CAUGHT.with(|slot| slot.borrow_mut().take()) {
        panic::resume_unwind(payload);
    }
}

/// [`resume`] from a `Drop`: not while the thread is unwinding already
/// (a second panic would abort); the caught panic is then dropped.
pub(crate) fn resume_unless_panicking() {
    if std::thread::panicking() {
        CAUGHT.with(|slot| slot.borrow_mut().take());
    } else {
        resume();
    }
}
