//! A host-supplied files backend: the host's own store, here files kept
//! in memory with a journal of every request, implemented as a
//! `jptool::FilesBackend`. Reads are answered at once; writes are kept and
//! committed by the host's loop, later, as a store that writes to a
//! database would. A Registry's "vfs" tool (the `vfs_tool` example, in
//! the OS sandbox) reads and writes through it.
//!
//!     cargo build --offline --examples
//!     cargo run --offline --example files_backend [path/to/vfs_tool]
//!
//! (with JPTOOL_LIB_DIR naming a build tree's lib/ when jptool is not
//! installed; `meson test rust` runs it so).

use std::cell::RefCell;
use std::os::raw::{c_int, c_short, c_ulong};
use std::os::unix::io::AsRawFd;
use std::path::PathBuf;
use std::rc::Rc;

use jptool::{Error, ErrorKind, Files, FilesBackend, FilesRequest, Registry};

/// The store: its files, its journal, and the writes not yet committed.
struct Journal {
    files: Files,
    log: RefCell<Vec<String>>,
    uncommitted: RefCell<Vec<FilesRequest>>,
}

impl Journal {
    /// Serves a request from the files (D11's result, or its error).
    fn serve(&self, request: FilesRequest) {
        let outcome = match self.files.call(request.method(), request.params_json()) {
            Ok(result) => request.reply(&result),
            Err(e) => request.fail(e.kind(), e.message()),
        };
        if let Err(e) = outcome {
            eprintln!("answering: {}", e);
        }
    }

    /// The host's loop commits the writes kept since its last turn.
    fn commit(&self) {
        let writes: Vec<FilesRequest> = self.uncommitted.borrow_mut().drain(..).collect();
        for request in writes {
            self.log.borrow_mut().push(format!(
                "commit #{} {}",
                request.id(),
                request.params_json().len()
            ));
            self.serve(request);
        }
    }
}

/// The FilesBackend the library calls: the store is shared with the host.
struct JournalBackend(Rc<Journal>);

impl FilesBackend for JournalBackend {
    fn call(&self, request: FilesRequest) {
        self.0.log.borrow_mut().push(format!(
            "#{} {} {}",
            request.id(),
            request.method(),
            request.params_json()
        ));
        if request.method() == "fs.write" {
            self.0.uncommitted.borrow_mut().push(request); // answered later
        } else {
            self.0.serve(request); // answered now
        }
    }

    fn cancel(&self, id: u64) {
        self.0.log.borrow_mut().push(format!("#{} cancelled", id));
    }
}

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
    let journal = Rc::new(Journal {
        files: Files::memory()?,
        log: RefCell::default(),
        uncommitted: RefCell::default(),
    });
    journal
        .files
        .write("src/lib.rs", b"// TODO: document\npub fn f() {}\n")?;
    journal.files.write("README", b"FIXME: write me\n")?;

    let registry = Registry::new()?;
    registry.add_files(
        "journal",
        &Files::from_backend(JournalBackend(journal.clone()))?,
    )?;
    // The OS sandbox lets the tool read a build tree's library too.
    let read = match std::env::var("JPTOOL_LIB_DIR") {
        Ok(dir) if !dir.is_empty() => format!("[{:?}]", dir),
        _ => "[]".to_owned(),
    };
    registry.load_tools(&format!(
        r#"{{"tools":[{{"name":"todo_scanner","description":"Lists the open items",
            "runtime":"vfs","files":"journal","command":[{:?}],
            "sandbox":{{"filesystem":{{"writable":["TODO.md"]}}}},
            "os_sandbox":{{"read":{}}}}}]}}"#,
        tool.display().to_string(),
        read
    ))?;
    let batch = registry.submit(r#"[{"id":"call_1","name":"todo_scanner","arguments":{}}]"#)?;
    while !batch.is_done() {
        let timeout = registry
            .timeout()
            .map_or(-1, |d| d.as_millis().min(c_int::MAX as u128) as c_int);
        let mut p = PollFd {
            fd: registry.as_raw_fd(),
            events: 1, // POLLIN
            revents: 0,
        };
        if unsafe { poll(&mut p, 1, timeout) } < 0 {
            return Err(Error::new(ErrorKind::Io, "poll failed"));
        }
        while registry.dispatch()? {}
        journal.commit();
    }
    println!("results: {}", batch.results_json()?);
    for line in journal.log.borrow().iter() {
        println!("journal: {}", line);
    }
    let report = journal.files.read("TODO.md", None)?;
    print!("TODO.md:\n{}", String::from_utf8_lossy(&report.data));
    if !String::from_utf8_lossy(&report.data).contains("README:1:") {
        return Err(Error::new(ErrorKind::State, "the tool did not do its work"));
    }
    Ok(())
}
