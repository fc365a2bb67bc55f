//! A standalone VFS host: the `vfs_tool` example, a VFS tool written in
//! Rust, served from this program's own poll() loop over a workspace
//! directory, in the OS sandbox. Its access policy lets it read the
//! workspace; its write of TODO.md is not covered, so the policy closure
//! is asked: it keeps the request and answers it on the next turn of the
//! loop, as a host that shows the question to its user would.
//!
//!     cargo build --offline --examples
//!     cargo run --offline --example vfs_host [path/to/vfs_tool]
//!
//! (with JPTOOL_LIB_DIR naming a build tree's lib/ when jptool is not
//! installed: the sandboxed tool is allowed to read that directory;
//! `meson test rust` runs it so).

use std::cell::RefCell;
use std::os::raw::{c_int, c_short, c_ulong};
use std::os::unix::io::AsRawFd;
use std::path::PathBuf;
use std::rc::Rc;

use jptool::{Error, ErrorKind, PolicyRequest, VfsHost, VfsHostOptions};

#[repr(C)]
struct PollFd {
    fd: c_int,
    events: c_short,
    revents: c_short,
}

extern "C" {
    fn poll(fds: *mut PollFd, nfds: c_ulong, timeout: c_int) -> c_int;
}

fn main() -> jptool::Result<()> {
    let tool = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::current_exe()
                .expect("this program's path")
                .with_file_name("vfs_tool")
        });
    let workspace = std::env::temp_dir().join(format!("jptool-vfs-host-{}", std::process::id()));
    let io = |e: std::io::Error| Error::new(ErrorKind::Io, e.to_string());
    std::fs::create_dir_all(workspace.join("src")).map_err(io)?;
    std::fs::write(
        workspace.join("src/main.rs"),
        "fn main() {} // TODO: say hello\n",
    )
    .map_err(io)?;
    std::fs::write(
        workspace.join("notes.txt"),
        "FIXME: the build\nall else is fine\n",
    )
    .map_err(io)?;

    let host = VfsHost::with_options(&VfsHostOptions {
        root: Some(workspace.clone()),
        // D11's default is the workspace read-only; nothing to configure.
        sandbox_json: None,
        sandbox_read: std::env::var_os("JPTOOL_LIB_DIR")
            .filter(|d| !d.is_empty())
            .map(|d| vec![PathBuf::from(d)])
            .unwrap_or_default(),
        ..VfsHostOptions::default()
    })?;
    // The policy prompt: kept, and answered by the loop below.
    let asked: Rc<RefCell<Vec<PolicyRequest>>> = Rc::default();
    let keep = asked.clone();
    host.set_policy_handler(move |request| {
        println!(
            "policy asks: {} '{}': {}",
            request.method(),
            request.path(),
            request.reason()
        );
        keep.borrow_mut().push(request);
    });
    host.spawn(&[&tool], r#"{"name":"todo_scanner","arguments":{}}"#)?;
    let sandbox = host.sandbox()?;
    println!("sandbox: {:?}: {}", sandbox.enforced, sandbox.report);

    while !host.is_done() {
        let timeout = host
            .timeout()
            .map_or(-1, |d| d.as_millis().min(c_int::MAX as u128) as c_int);
        let mut p = PollFd {
            fd: host.as_raw_fd(),
            events: 1, // POLLIN
            revents: 0,
        };
        if unsafe { poll(&mut p, 1, timeout) } < 0 {
            return Err(Error::new(ErrorKind::Io, "poll failed"));
        }
        while host.dispatch()? {}
        // The user says yes to the report, no to anything else.
        for request in asked.borrow_mut().drain(..) {
            if request.path() == "TODO.md" {
                request.allow()?;
            } else {
                request.deny(Some("only TODO.md may be written"))?;
            }
        }
    }
    let state = host.state()?.expect("the tool ended");
    println!("result: {}", state.render(None)?);
    let report = std::fs::read_to_string(workspace.join("TODO.md")).map_err(io)?;
    print!("TODO.md:\n{}", report);
    std::fs::remove_dir_all(&workspace).map_err(io)?;
    if state.is_error() || !report.contains("src/main.rs:1:") {
        return Err(Error::new(ErrorKind::State, "the tool did not do its work"));
    }
    Ok(())
}
