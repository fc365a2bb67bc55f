//! The library's log hook (`jpt_set_log`): jptool never prints; its
//! diagnostics go to the function installed here. The hook is
//! process-wide and not thread-safe in C, hence `unsafe` here.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{self, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use jptool_sys as sys;

/// A message's importance (`JPT_LOG_*`), most important first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    Error,
    Warning,
    Info,
    Debug,
}

impl LogLevel {
    fn raw(self) -> c_int {
        match self {
            LogLevel::Error => sys::JPT_LOG_ERROR,
            LogLevel::Warning => sys::JPT_LOG_WARNING,
            LogLevel::Info => sys::JPT_LOG_INFO,
            LogLevel::Debug => sys::JPT_LOG_DEBUG,
        }
    }

    fn from_raw(raw: c_int) -> LogLevel {
        match raw {
            sys::JPT_LOG_ERROR => LogLevel::Error,
            sys::JPT_LOG_WARNING => LogLevel::Warning,
            sys::JPT_LOG_INFO => LogLevel::Info,
            _ => LogLevel::Debug,
        }
    }
}

type LogFn = Box<dyn Fn(LogLevel, &str) + Send + Sync>;

/// The installed function, boxed twice for a thin pointer.
static CURRENT: AtomicPtr<LogFn> = AtomicPtr::new(ptr::null_mut());

unsafe extern "C" fn trampoline(level: c_int, msg: *const c_char, ud: *mut c_void) {
    let f = &*(ud as *const LogFn);
    let msg = CStr::from_ptr(msg).to_string_lossy();
    // A panic cannot cross into C, and a log line has no caller to fail.
    if panic::catch_unwind(AssertUnwindSafe(|| f(LogLevel::from_raw(level), &msg))).is_err() {
        std::process::abort();
    }
}

/// Installs `f` for messages of `min_level` or more important (registry.h
/// and common.h say what each level carries). A panic in `f` aborts the
/// process.
///
/// # Safety
/// As `jpt_set_log`: call it before any other jptool call, or while no
/// other thread uses jptool, since the library reads the hook without
/// synchronisation.
pub unsafe fn set_log<F>(f: F, min_level: LogLevel)
where
    F: Fn(LogLevel, &str) + Send + Sync + 'static,
{
    let new: *mut LogFn = Box::into_raw(Box::new(Box::new(f) as LogFn));
    sys::jpt_set_log(Some(trampoline), new as *mut c_void, min_level.raw());
    free(CURRENT.swap(new, Ordering::AcqRel));
}

/// Removes the log function.
///
/// # Safety
/// As [`set_log`].
pub unsafe fn clear_log() {
    sys::jpt_set_log(None, ptr::null_mut(), sys::JPT_LOG_ERROR);
    free(CURRENT.swap(ptr::null_mut(), Ordering::AcqRel));
}

unsafe fn free(old: *mut LogFn) {
    if !old.is_null() {
        drop(Box::from_raw(old));
    }
}
