//! The thread rules the headers state, as the types encode them (the
//! negative ones, a Registry, VfsHost, Files, PolicyRequest that is not
//! Send and a VfsTool that is not Sync, are compile_fail doc tests).

use jptool::{Policy, State, VfsTool, Waker};

fn send_sync_static<T: Send + Sync + 'static>() {}
fn send<T: Send>() {}

#[test]
fn shareable_types_are_send_and_sync() {
    // A registry's one thread-safe function, usable past the registry.
    send_sync_static::<Waker>();
    // Atomic reference count, immutable once shared.
    send_sync_static::<State>();
    // Never changes once made.
    send_sync_static::<Policy>();
    // One thread at a time.
    send::<VfsTool<'static>>();
}
