//! The allocator hook: jptool's allocations go through Rust's global
//! allocator (here a counting one) once `use_rust_allocator` is called
//! first; later it is refused, as memory from one allocator must never be
//! freed by another. Its own test program: the hook must come before any
//! other call into jptool in the process.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use jptool::{ErrorKind, Kind, State};

/// Counts the blocks aligned as the hook asks (16, C's max_align_t): the
/// library's. The Rust side's strings and byte vectors are aligned to 1.
struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

fn count(layout: Layout) {
    if layout.align() == 16 {
        ALLOCATED.fetch_add(1, Ordering::SeqCst);
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        System.dealloc(p, layout)
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, n: usize) -> *mut u8 {
        count(layout);
        System.realloc(p, layout, n)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn the_library_allocates_through_rust_until_it_is_too_late_to_change() {
    let before = ALLOCATED.load(Ordering::SeqCst);
    unsafe { jptool::use_rust_allocator() }.unwrap();
    let mut state = State::new(Kind::Stopped).unwrap();
    for i in 0..100 {
        state.add_text(&format!("block {}", i)).unwrap();
    }
    let json = state.to_json(jptool::JsonForm::Envelope, false).unwrap();
    assert!(json.contains("block 99"));
    // 100 blocks and a JSON document, each at least one block.
    let during = ALLOCATED.load(Ordering::SeqCst) - before;
    assert!(during > 100, "{} allocations", during);
    drop(state);

    // The library has allocated: no other allocator now.
    let e = unsafe { jptool::use_c_allocator() }.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::State);
    assert_eq!(e.message(), jptool::last_error());
    assert!(!e.message().is_empty());
}
