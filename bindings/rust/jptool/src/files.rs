//! ProjectFiles (vfs.h, "ProjectFiles"): the files a VFS tool reads and
//! writes, behind [`Files`], with three backends: a directory confined
//! beneath its root, memory, and the host's own, a [`FilesBackend`] whose
//! [`FilesRequest`]s it answers at once or later.
//!
//! A host-supplied backend's Rust side lives in a `BackendSlot`, shared by
//! the library (one reference in the C `ud`, given back by the `release`
//! callback once the backend is freed) and by each unanswered
//! FilesRequest, which therefore never outlives what it reports to.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::CStr;
use std::fmt;
use std::os::raw::{c_char, c_int, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::{self, NonNull};
use std::rc::Rc;

use jptool_sys as sys;

use crate::error::{check, check_new, Error, ErrorKind, Result};
use crate::panic;
use crate::{c_string, take_string};

/// What a path is (`JPT_FILES_KIND_*`, `JPT_VFS_TOOL_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symlink (only where symlinks are not followed: listings).
    Symlink,
    /// A FIFO, socket or device, or a kind this crate does not know.
    Other,
}

impl FileKind {
    pub(crate) fn from_raw(raw: c_int) -> FileKind {
        match raw {
            sys::JPT_FILES_KIND_FILE => FileKind::File,
            sys::JPT_FILES_KIND_DIR => FileKind::Dir,
            sys::JPT_FILES_KIND_SYMLINK => FileKind::Symlink,
            _ => FileKind::Other,
        }
    }
}

/// What [`Files::metadata`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Metadata {
    /// What the path is (symlinks followed).
    pub kind: FileKind,
    /// The size in bytes (0 for what is not a regular file).
    pub size: u64,
}

/// One entry of [`Files::list_dir`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DirEntry {
    /// The entry's name, not its path (invalid UTF-8 replaced by U+FFFD).
    pub name: String,
    /// What it is; symlinks are not followed.
    pub kind: FileKind,
}

/// What [`Files::read`] gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileData {
    /// The file's bytes.
    pub data: Vec<u8>,
    /// Whether they are text D11 sends as it is (valid UTF-8 without a
    /// NUL byte); otherwise D11 sends them in base64.
    pub utf8: bool,
}

/// Flags for [`Files::open_dir_with`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DirOptions {
    /// Read and write regular files that have more than one hard link
    /// (`JPT_FILES_ALLOW_HARDLINKS`; the policy's `"hardlinks": "allow"`).
    pub allow_hardlinks: bool,
    /// fs.write syncs the file before it replaces the old one
    /// (`JPT_FILES_FSYNC`).
    pub fsync: bool,
}

/// A ProjectFiles backend (`jpt_files`): for a [`VfsHost`](crate::VfsHost)
/// ([`VfsHostOptions::files`](crate::VfsHostOptions::files)) or a
/// [`Registry`](crate::Registry) ([`Registry::add_files`](crate::Registry::add_files)),
/// or used directly. Clones share the backend; the last one dropped
/// drops this program's reference, and the backend is freed once no host
/// uses it either. vfs.h gives the path rules and each method's errors;
/// the messages name the method and the path as requested, never the
/// root ("fs.read 'src/x.rs': not found").
///
/// Not `Send`: a backend is used from one thread at a time, and a host
/// that uses it does so from its own thread.
///
/// ```compile_fail,E0277
/// let files = jptool::Files::memory().unwrap();
/// std::thread::spawn(move || files.exists("a")); // a Files is not Send
/// ```
#[derive(Clone)]
pub struct Files {
    inner: Rc<RawFiles>,
}

struct RawFiles {
    raw: NonNull<sys::jpt_files>,
}

impl Drop for RawFiles {
    fn drop(&mut self) {
        // A host-supplied backend's release callback may run here.
        unsafe { sys::jpt_files_free(self.raw.as_ptr()) };
        panic::resume_unless_panicking();
    }
}

fn path_arg(path: &Path) -> Result<std::ffi::CString> {
    std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        Error::new(
            ErrorKind::Invalid,
            format!("the directory holds a NUL byte: {}", path.display()),
        )
    })
}

impl Files {
    /// Opens the directory `root` (`jpt_files_open_dir`): every path is
    /// resolved beneath it, never outside.
    pub fn open_dir(root: impl AsRef<Path>) -> Result<Files> {
        Files::open_dir_with(root, DirOptions::default())
    }

    /// [`Files::open_dir`] with `options`.
    pub fn open_dir_with(root: impl AsRef<Path>, options: DirOptions) -> Result<Files> {
        let root = path_arg(root.as_ref())?;
        let mut flags = 0u32;
        if options.allow_hardlinks {
            flags |= sys::JPT_FILES_ALLOW_HARDLINKS as u32;
        }
        if options.fsync {
            flags |= sys::JPT_FILES_FSYNC as u32;
        }
        let mut out = ptr::null_mut();
        check_new(unsafe { sys::jpt_files_open_dir(root.as_ptr(), flags, &mut out) })?;
        Ok(Files::from_raw(out))
    }

    /// An empty memory backend (`jpt_files_new_memory`): the same methods,
    /// path rules and errors as a directory, without symlinks, modes or
    /// hard links.
    pub fn memory() -> Result<Files> {
        let mut out = ptr::null_mut();
        check_new(unsafe { sys::jpt_files_new_memory(&mut out) })?;
        Ok(Files::from_raw(out))
    }

    /// A backend whose methods `backend` serves (`jpt_files_new`): each
    /// method call is a [`FilesRequest`] it answers at once or later. The
    /// library checks every result for D11's shape. `backend` is dropped
    /// once the backend is freed (no host uses it, this program's clones
    /// are gone, and every request is answered).
    pub fn from_backend<B: FilesBackend + 'static>(backend: B) -> Result<Files> {
        let slot = Rc::new(BackendSlot {
            backend: Box::new(backend),
            next_id: Cell::new(1),
            pending: RefCell::new(HashMap::new()),
        });
        let ops = sys::jpt_files_ops {
            size: std::mem::size_of::<sys::jpt_files_ops>(),
            call: Some(call_trampoline),
            cancel: Some(cancel_trampoline),
            release: Some(release_trampoline),
        };
        let ud = Rc::into_raw(slot) as *mut c_void;
        let mut out = ptr::null_mut();
        let rc = unsafe { sys::jpt_files_new(&ops, ud, &mut out) };
        if rc < 0 {
            // The library took no reference: ours goes back.
            drop(unsafe { Rc::from_raw(ud as *const BackendSlot) });
        }
        check_new(rc)?;
        Ok(Files::from_raw(out))
    }

    fn from_raw(raw: *mut sys::jpt_files) -> Files {
        Files {
            inner: Rc::new(RawFiles {
                raw: NonNull::new(raw).expect("jptool returned no files backend"),
            }),
        }
    }

    /// The raw backend, owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::jpt_files {
        self.inner.raw.as_ptr()
    }

    /// A method's status as a Result, the backend's message on failure;
    /// first resumes a panic a host-supplied backend raised inside (the
    /// callers take what the call handed over before, so that it is freed
    /// then too).
    fn done(&self, rc: c_int) -> Result<()> {
        panic::resume();
        let raw = self.as_ptr();
        check(rc, || unsafe { sys::jpt_files_errmsg(raw) })
    }

    /// fs.read: the whole file, at most `limit` bytes (None: 10 MB,
    /// `JPT_FILES_READ_LIMIT`; larger is [`ErrorKind::Limit`]).
    pub fn read(&self, path: &str, limit: Option<usize>) -> Result<FileData> {
        let path = c_string(path, "the path")?;
        let (mut data, mut len, mut utf8) = (ptr::null_mut(), 0usize, 0 as c_int);
        let rc = unsafe {
            sys::jpt_files_read(
                self.as_ptr(),
                path.as_ptr(),
                limit.unwrap_or(0),
                &mut data,
                &mut len,
                &mut utf8,
            )
        };
        let data = take_bytes(data, len);
        self.done(rc)?;
        Ok(FileData {
            data,
            utf8: utf8 != 0,
        })
    }

    /// fs.write: replaces the file's content atomically, creating missing
    /// parent directories.
    pub fn write(&self, path: &str, data: &[u8]) -> Result<()> {
        let path = c_string(path, "the path")?;
        let rc = unsafe {
            sys::jpt_files_write(
                self.as_ptr(),
                path.as_ptr(),
                data.as_ptr() as *const c_void,
                data.len(),
            )
        };
        self.done(rc)
    }

    /// fs.exists: whether something is at `path` (symlinks followed: a
    /// dangling one is not).
    pub fn exists(&self, path: &str) -> Result<bool> {
        let path = c_string(path, "the path")?;
        let mut exists = 0 as c_int;
        let rc = unsafe { sys::jpt_files_exists(self.as_ptr(), path.as_ptr(), &mut exists) };
        self.done(rc)?;
        Ok(exists != 0)
    }

    /// fs.metadata: what `path` is and its size (symlinks followed).
    pub fn metadata(&self, path: &str) -> Result<Metadata> {
        let path = c_string(path, "the path")?;
        let (mut kind, mut size) = (0 as c_int, 0u64);
        let rc =
            unsafe { sys::jpt_files_metadata(self.as_ptr(), path.as_ptr(), &mut kind, &mut size) };
        self.done(rc)?;
        Ok(Metadata {
            kind: FileKind::from_raw(kind),
            size,
        })
    }

    /// fs.list_dir: the directory's entries (without "." and ".."),
    /// sorted by name bytewise.
    pub fn list_dir(&self, path: &str) -> Result<Vec<DirEntry>> {
        let path = c_string(path, "the path")?;
        let (mut entries, mut count) = (ptr::null_mut(), 0usize);
        let rc = unsafe {
            sys::jpt_files_list_dir(self.as_ptr(), path.as_ptr(), &mut entries, &mut count)
        };
        let list = if entries.is_null() {
            Vec::new()
        } else {
            // SAFETY: `count` entries in one block with their names.
            unsafe { std::slice::from_raw_parts(entries, count) }
                .iter()
                .map(|e| DirEntry {
                    name: unsafe { CStr::from_ptr(e.name) }
                        .to_string_lossy()
                        .into_owned(),
                    kind: FileKind::from_raw(e.kind),
                })
                .collect()
        };
        unsafe { sys::jpt_free(entries as *mut c_void) };
        self.done(rc)?;
        Ok(list)
    }

    /// fs.delete: removes the file at `path` (a symlink itself).
    pub fn delete(&self, path: &str) -> Result<()> {
        let path = c_string(path, "the path")?;
        let rc = unsafe { sys::jpt_files_delete(self.as_ptr(), path.as_ptr()) };
        self.done(rc)
    }

    /// fs.rename: moves `from` to `to`, creating the missing parents of
    /// `to`; an existing `to` is never replaced ([`ErrorKind::Exists`]).
    pub fn rename(&self, from: &str, to: &str) -> Result<()> {
        let from = c_string(from, "the path renamed")?;
        let to = c_string(to, "the new path")?;
        let rc = unsafe { sys::jpt_files_rename(self.as_ptr(), from.as_ptr(), to.as_ptr()) };
        self.done(rc)
    }

    /// fs.grep, blocking: `params_json` is D11's params (vfs.h lists
    /// them: pattern, paths, extensions, context, case_insensitive,
    /// fixed_strings, max_matches), the result D11's
    /// `{"matches": […], "truncated": false}` as JSON text.
    pub fn grep(&self, params_json: &str) -> Result<String> {
        let params = c_string(params_json, "the grep params")?;
        let mut out = ptr::null_mut();
        let rc = unsafe { sys::jpt_files_grep(self.as_ptr(), params.as_ptr(), &mut out) };
        let taken = take_string(out);
        self.done(rc)?;
        Ok(taken)
    }

    /// Any D11 filesystem method by name with its params as JSON text,
    /// the result as JSON text: what a VFS tool would get
    /// (`jpt_files_call`).
    pub fn call(&self, method: &str, params_json: &str) -> Result<String> {
        let method = c_string(method, "the method")?;
        let params = c_string(params_json, "the params")?;
        let mut out = ptr::null_mut();
        let rc = unsafe {
            sys::jpt_files_call(self.as_ptr(), method.as_ptr(), params.as_ptr(), &mut out)
        };
        let taken = take_string(out);
        self.done(rc)?;
        Ok(taken)
    }
}

impl fmt::Debug for Files {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Files")
            .field("raw", &self.as_ptr())
            .finish()
    }
}

/// Copies `len` bytes the library handed over and frees them.
pub(crate) fn take_bytes(p: *mut c_char, len: usize) -> Vec<u8> {
    if p.is_null() {
        return Vec::new();
    }
    // SAFETY: the library returned `len` bytes it allocated.
    let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, len) }.to_vec();
    unsafe { sys::jpt_free(p as *mut c_void) };
    bytes
}

/// A host-supplied files backend: the host's own store (a database, a
/// remote one) serving D11's filesystem methods. Its methods run inside
/// the dispatch of the host or registry whose tool asks (or inside a
/// direct [`Files`] method call), on that thread.
pub trait FilesBackend {
    /// A request: answer it with [`FilesRequest::reply`] or
    /// [`FilesRequest::fail`], now or later (keep it, and answer it from
    /// this thread). A request dropped unanswered fails with
    /// [`ErrorKind::Cancelled`]; if `call` panics, the request it was
    /// given fails with [`ErrorKind::Io`] ("the host's files backend
    /// panicked") and the panic resumes when the dispatching call returns.
    fn call(&self, request: FilesRequest);

    /// Request `id`'s answer is no longer wanted (its tool went away, or
    /// a direct [`Files`] call returned without it): the backend may stop
    /// the work, but must still answer it ([`FilesRequest::is_cancelled`]
    /// is then true). The default does nothing.
    fn cancel(&self, id: u64) {
        let _ = id;
    }
}

/// The Rust side of a host-supplied backend.
struct BackendSlot {
    backend: Box<dyn FilesBackend>,
    next_id: Cell<u64>,
    /// The unanswered requests' shared parts, by the C request's address.
    pending: RefCell<HashMap<usize, Rc<RequestShared>>>,
}

struct RequestShared {
    id: u64,
    cancelled: Cell<bool>,
}

/// One D11 method call to a host-supplied backend (`jpt_files_request`),
/// given to [`FilesBackend::call`]. Answering consumes it, so it is
/// answered once; it is neither `Send` nor `Sync` (vfs.h: answered from
/// the thread that got it).
pub struct FilesRequest {
    /// NULL once answered.
    raw: *mut sys::jpt_files_request,
    shared: Rc<RequestShared>,
    slot: Rc<BackendSlot>,
    method: String,
    params_json: String,
}

impl FilesRequest {
    /// This backend's number for the request, as [`FilesBackend::cancel`]
    /// names it.
    pub fn id(&self) -> u64 {
        self.shared.id
    }

    /// The D11 method: "fs.read", "fs.write", "fs.exists", "fs.list_dir",
    /// "fs.metadata", "fs.delete", "fs.rename" or "fs.grep".
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The params object as JSON text, its paths checked and in their
    /// normal form.
    pub fn params_json(&self) -> &str {
        &self.params_json
    }

    /// Whether the answer is no longer wanted (it must still be given).
    pub fn is_cancelled(&self) -> bool {
        self.shared.cancelled.get()
    }

    /// Forgets the request on the Rust side and gives the C request to
    /// answer.
    fn take(&mut self) -> *mut sys::jpt_files_request {
        let raw = std::mem::replace(&mut self.raw, ptr::null_mut());
        self.slot.pending.borrow_mut().remove(&(raw as usize));
        raw
    }

    /// Answers with `result_json`, D11's result for the method
    /// (`jpt_files_request_reply`): `{"content": "…"}` for fs.read (with
    /// `"encoding": "base64"` for bytes that are not text), `{}` for
    /// fs.write, fs.delete and fs.rename, `{"exists": true}`,
    /// `{"kind": "file", "size": 13}`, `{"entries": [{"path": name,
    /// "kind": "file"}]}`, `{"matches": […]}`. A result not of that shape
    /// is [`ErrorKind::Invalid`], and the request then fails with
    /// [`ErrorKind::Protocol`] saying what was expected.
    pub fn reply(mut self, result_json: &str) -> Result<()> {
        let result = match c_string(result_json, "the result") {
            Ok(result) => result,
            Err(e) => {
                let raw = self.take();
                let message = b"the host's result holds a NUL byte\0";
                unsafe {
                    sys::jpt_files_request_fail(
                        raw,
                        sys::JPT_ERR_IO,
                        message.as_ptr() as *const c_char,
                    )
                };
                return Err(e);
            }
        };
        let raw = self.take();
        match unsafe { sys::jpt_files_request_reply(raw, result.as_ptr()) } {
            sys::JPT_OK => Ok(()),
            sys::JPT_ERR_INVALID => Err(Error::new(
                ErrorKind::Invalid,
                format!(
                    "{}: the result is not of D11's shape for the method (or not a JSON \
                     object); the request failed with JPT_ERR_PROTOCOL",
                    self.method
                ),
            )),
            rc => Err(Error::about(rc, format_args!("{}: the reply", self.method))),
        }
    }

    /// Fails the request (`jpt_files_request_fail`) with `kind` (NotFound,
    /// Denied, …) and `message`; the tool is told "<method> '<path>':
    /// <message>".
    pub fn fail(mut self, kind: ErrorKind, message: &str) -> Result<()> {
        let raw = self.take();
        let fallback;
        let message = match c_string(message, "the message") {
            Ok(message) => message,
            Err(_) => {
                fallback = String::from_utf8_lossy(message.as_bytes()).replace('\0', " ");
                std::ffi::CString::new(fallback).expect("NUL bytes replaced")
            }
        };
        let rc = unsafe { sys::jpt_files_request_fail(raw, kind.code(), message.as_ptr()) };
        if rc < 0 {
            return Err(Error::about(
                rc,
                format_args!("{}: failing the request", self.method),
            ));
        }
        Ok(())
    }
}

impl Drop for FilesRequest {
    fn drop(&mut self) {
        if self.raw.is_null() {
            return;
        }
        let (code, message): (c_int, &[u8]) = if std::thread::panicking() {
            (sys::JPT_ERR_IO, b"the host's files backend panicked\0")
        } else {
            (
                sys::JPT_ERR_CANCELLED,
                b"the host dropped the request unanswered\0",
            )
        };
        let raw = self.take();
        unsafe { sys::jpt_files_request_fail(raw, code, message.as_ptr() as *const c_char) };
    }
}

impl fmt::Debug for FilesRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilesRequest")
            .field("id", &self.shared.id)
            .field("method", &self.method)
            .field("params_json", &self.params_json)
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

/// `ud` is the BackendSlot the library holds a reference to.
unsafe fn slot_of(ud: *mut c_void) -> Rc<BackendSlot> {
    let p = ud as *const BackendSlot;
    Rc::increment_strong_count(p);
    Rc::from_raw(p)
}

unsafe extern "C" fn call_trampoline(
    req: *mut sys::jpt_files_request,
    method: *const c_char,
    params_json: *const c_char,
    ud: *mut c_void,
) -> c_int {
    let slot = slot_of(ud);
    let id = slot.next_id.get();
    slot.next_id.set(id + 1);
    let shared = Rc::new(RequestShared {
        id,
        cancelled: Cell::new(false),
    });
    slot.pending
        .borrow_mut()
        .insert(req as usize, shared.clone());
    let request = FilesRequest {
        raw: req,
        shared,
        slot: slot.clone(),
        method: CStr::from_ptr(method).to_string_lossy().into_owned(),
        params_json: CStr::from_ptr(params_json).to_string_lossy().into_owned(),
    };
    // A panic drops the request as it unwinds, which fails it.
    panic::guard(|| slot.backend.call(request));
    sys::JPT_OK
}

unsafe extern "C" fn cancel_trampoline(req: *mut sys::jpt_files_request, ud: *mut c_void) {
    let slot = slot_of(ud);
    let shared = slot.pending.borrow().get(&(req as usize)).cloned();
    if let Some(shared) = shared {
        shared.cancelled.set(true);
        panic::guard(|| slot.backend.cancel(shared.id));
    }
}

unsafe extern "C" fn release_trampoline(ud: *mut c_void) {
    // The library's reference goes; the backend with it, unless a request
    // answering right now still holds the slot.
    let slot = Rc::from_raw(ud as *const BackendSlot);
    panic::guard(move || drop(slot));
}
