//! The allocator hook (`jpt_set_allocator`, common.h): route every
//! allocation of the library, and of the jansson library it uses, through
//! Rust's global allocator, so a program's `#[global_allocator]` (a
//! counting one, jemalloc) sees jptool's memory too.
//!
//! The C hook's `free` gets no size, which Rust's `dealloc` needs: each
//! block carries its size in a header of [`HEADER`] bytes in front of
//! what the library gets, which keeps the library's alignment (that of
//! `max_align_t`).

use std::alloc::{self, Layout};
use std::os::raw::c_void;
use std::ptr;

use jptool_sys as sys;

use crate::error::{check_new, Result};

/// The size header, as large as the strictest alignment C asks for.
const HEADER: usize = 16;

fn layout(n: usize) -> Option<Layout> {
    Layout::from_size_align(n.checked_add(HEADER)?, HEADER).ok()
}

/// The block's start and layout, from the pointer the library holds.
unsafe fn block(p: *mut c_void) -> (*mut u8, Layout) {
    let base = (p as *mut u8).sub(HEADER);
    let n = (base as *const usize).read();
    (base, layout(n).expect("a size that was allocated"))
}

unsafe extern "C" fn rust_malloc(n: usize, _ud: *mut c_void) -> *mut c_void {
    let layout = match layout(n) {
        Some(layout) => layout,
        None => return ptr::null_mut(),
    };
    let base = alloc::alloc(layout);
    if base.is_null() {
        return ptr::null_mut();
    }
    (base as *mut usize).write(n);
    base.add(HEADER) as *mut c_void
}

unsafe extern "C" fn rust_realloc(p: *mut c_void, n: usize, ud: *mut c_void) -> *mut c_void {
    if p.is_null() {
        return rust_malloc(n, ud);
    }
    if layout(n).is_none() {
        return ptr::null_mut();
    }
    let (base, old) = block(p);
    // On failure the old block stays as it was, as C's realloc leaves it.
    let grown = alloc::realloc(base, old, n + HEADER);
    if grown.is_null() {
        return ptr::null_mut();
    }
    (grown as *mut usize).write(n);
    grown.add(HEADER) as *mut c_void
}

unsafe extern "C" fn rust_free(p: *mut c_void, _ud: *mut c_void) {
    if !p.is_null() {
        let (base, layout) = block(p);
        alloc::dealloc(base, layout);
    }
}

/// Routes jptool's allocations (and jansson's: its hook is process-wide,
/// so a program's own use of jansson too) through Rust's global
/// allocator (`jpt_set_allocator`). [`ErrorKind::State`](crate::ErrorKind::State)
/// once the library has allocated anything: memory from one allocator
/// must never be freed by another.
///
/// # Safety
/// As `jpt_set_allocator`: call it before any other call into jptool, and
/// while no other thread calls into it (it is not thread-safe).
pub unsafe fn use_rust_allocator() -> Result<()> {
    let allocator = sys::jpt_allocator {
        size: std::mem::size_of::<sys::jpt_allocator>(),
        malloc: Some(rust_malloc),
        realloc: Some(rust_realloc),
        free: Some(rust_free),
        ud: ptr::null_mut(),
    };
    check_new(sys::jpt_set_allocator(&allocator))
}

/// Restores the C library's allocator (`jpt_set_allocator(NULL)`), under
/// the same rule as [`use_rust_allocator`].
///
/// # Safety
/// As [`use_rust_allocator`].
pub unsafe fn use_c_allocator() -> Result<()> {
    check_new(sys::jpt_set_allocator(ptr::null()))
}
