//! The tool side of D11 (vfs_tool.h): [`VfsTool`], a blocking client a
//! Rust program uses to be a VFS tool. It reads its context from the
//! host's `init`, asks the host for every file, URL and process, and ends
//! with a result.

use std::ffi::CString;
use std::fmt;
use std::marker::PhantomData;
use std::os::raw::{c_char, c_int, c_void};
use std::os::unix::io::{AsRawFd, BorrowedFd};
use std::ptr::{self, NonNull};

use jptool_sys as sys;

use crate::error::{check_new, Error, Result};
use crate::files::{take_bytes, FileKind, Metadata};
use crate::panic;
use crate::{c_ptr, c_string, c_string_opt, owned_str, take_string};

type PendingFn = Box<dyn FnMut(u64, &str) + Send>;

/// Options for [`VfsTool::connect_with`] and [`VfsTool::connect_fds`]
/// (`jpt_vfs_connect_options`).
#[derive(Default)]
pub struct ConnectOptions {
    /// The longest line accepted from the host (64 MiB).
    pub max_message: Option<usize>,
    /// The longest line sent to the host (what jptool's host takes by
    /// default); a longer request fails with [`ErrorKind::Limit`](crate::ErrorKind::Limit) before
    /// anything is sent.
    pub max_request: Option<usize>,
    on_pending: Option<PendingFn>,
}

impl ConnectOptions {
    /// Calls `f` from inside a blocking call whenever the host says a
    /// request waits (D11's `pending`: a policy prompt is open), with the
    /// request's id (as [`VfsTool::submit`] gave it; 0 if not ours) and
    /// the reason. A panic in `f` resumes when that call returns.
    pub fn on_pending<F: FnMut(u64, &str) + Send + 'static>(mut self, f: F) -> ConnectOptions {
        self.on_pending = Some(Box::new(f));
        self
    }
}

impl fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("max_message", &self.max_message)
            .field("max_request", &self.max_request)
            .field("on_pending", &self.on_pending.is_some())
            .finish()
    }
}

/// fs.grep's query (D11, plus issue 9's options): [`GrepQuery::new`] and
/// the fields to change.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GrepQuery {
    /// A regular expression, or a literal with `fixed_strings`.
    pub pattern: String,
    /// Paths to search; empty: all.
    pub paths: Vec<String>,
    /// File name extensions ("rs"); empty: all.
    pub extensions: Vec<String>,
    /// Lines before and after each match.
    pub context: u32,
    pub case_insensitive: bool,
    pub fixed_strings: bool,
    /// The most matching lines; None: the host's default cap.
    pub max_matches: Option<u64>,
}

impl GrepQuery {
    /// A query for `pattern` over every file.
    pub fn new(pattern: &str) -> GrepQuery {
        GrepQuery {
            pattern: pattern.to_owned(),
            ..GrepQuery::default()
        }
    }
}

/// An HTTP response as the host fetched it. An HTTP error status (404,
/// 500) is a response, not an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpResponse {
    /// 200, 404, …
    pub status: i32,
    /// The headers as D11 sends them: `[{"name": "Content-Type", "value":
    /// "…"}, …]`.
    pub headers_json: String,
    /// The body's bytes (base64 already decoded).
    pub body: Vec<u8>,
}

/// How a process that process.run ran ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Exit {
    /// Its exit status, 0 to 255.
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
    /// The host could not learn it (someone else reaped the process).
    Unknown,
}

/// What process.run gives: the process's end and its output (with every
/// forwarded secret replaced by "\[REDACTED\]", invalid UTF-8 by U+FFFD,
/// and each stream kept to the host's limit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessOutput {
    pub exit: Exit,
    pub stdout: String,
    pub stderr: String,
}

/// A VFS tool's connection to its host (`jpt_vfs_tool`): a Rust program
/// that a host starts (jptool's registry with `"runtime": "vfs"`, a
/// [`VfsHost`](crate::VfsHost), or any D11 host) with its stdin and stdout
/// as the protocol's pipes.
///
/// ```no_run
/// use jptool::VfsTool;
///
/// fn main() {
///     let mut tool = match VfsTool::connect() {
///         Ok(tool) => tool,
///         Err(e) => {
///             eprintln!("{}", e); // stdout is the protocol: never print to it
///             std::process::exit(1);
///         }
///     };
///     let done = match tool.read("src/main.rs") {
///         Ok(bytes) => tool.result_text(&format!("{} bytes", bytes.len())),
///         Err(e) => tool.error(e.message(), &[], false),
///     };
///     std::process::exit(if done.is_ok() { 0 } else { 1 });
/// }
/// ```
///
/// Every call blocks until its answer has arrived; requests may also be
/// pipelined ([`VfsTool::submit`], [`VfsTool::collect`]). An error carries
/// the host's message, and the JSON-RPC code and data it answered with
/// ([`Error::rpc_code`], [`Error::rpc_data`]; vfs_tool.h maps each code to
/// an [`ErrorKind`](crate::ErrorKind)). While connected the fds are in non-blocking mode:
/// a tool on stdin and stdout must not print to stdout (`println!` would
/// fail); write diagnostics to stderr.
///
/// `Send`, not `Sync`: used from one thread at a time. `'fd` is the
/// lifetime of the fds of [`VfsTool::connect_fds`] (`'static` for stdin
/// and stdout).
///
/// ```compile_fail,E0277
/// fn share(tool: &jptool::VfsTool<'static>) {
///     std::thread::scope(|s| {
///         s.spawn(|| tool.is_cancelled()); // &VfsTool is not Send: not Sync
///     });
/// }
/// ```
pub struct VfsTool<'fd> {
    raw: NonNull<sys::jpt_vfs_tool>,
    /// Where the C on_pending callback's `ud` points (from Box::into_raw,
    /// so the callback's `&mut` is the only reference while it runs);
    /// freed after the tool.
    pending: Option<NonNull<PendingFn>>,
    name: String,
    arguments: String,
    answers: String,
    options: String,
    protocol_version: String,
    _fds: PhantomData<BorrowedFd<'fd>>,
}

// SAFETY: vfs_tool.h: a jpt_vfs_tool is used from one thread at a time,
// which `&mut self` on every call guarantees; it keeps nothing
// thread-bound, and its callback (on_pending) is Send.
unsafe impl Send for VfsTool<'_> {}

unsafe extern "C" fn pending_trampoline(id: u64, reason: *const c_char, ud: *mut c_void) {
    let f = &mut *(ud as *mut PendingFn);
    let reason = std::ffi::CStr::from_ptr(reason).to_string_lossy();
    panic::guard(|| f(id, &reason));
}

/// `len` C strings' pointers for a call taking `const char *const *`.
fn c_strings(items: &[&str], what: &str) -> Result<(Vec<CString>, Vec<*const c_char>)> {
    let owned: Vec<CString> = items
        .iter()
        .map(|s| c_string(s, what))
        .collect::<Result<_>>()?;
    let ptrs = owned.iter().map(|s| s.as_ptr()).collect();
    Ok((owned, ptrs))
}

impl VfsTool<'static> {
    /// Connects over stdin and stdout and reads the host's `init`
    /// (`jpt_vfs_tool_connect`).
    pub fn connect() -> Result<VfsTool<'static>> {
        let mut out = ptr::null_mut();
        let rc = unsafe { sys::jpt_vfs_tool_connect(&mut out) };
        VfsTool::connected(rc, out, None)
    }

    /// [`VfsTool::connect`] with `options`.
    pub fn connect_with(options: ConnectOptions) -> Result<VfsTool<'static>> {
        // SAFETY: stdin and stdout stay open for the process's life.
        let (input, output) = unsafe { (BorrowedFd::borrow_raw(0), BorrowedFd::borrow_raw(1)) };
        VfsTool::connect_fds(input, output, options)
    }
}

impl<'fd> VfsTool<'fd> {
    /// Connects over `input` (the host's messages) and `output` (to the
    /// host) and blocks until `init` has arrived
    /// (`jpt_vfs_tool_connect_fds`). Both are in non-blocking mode while
    /// the tool lives (their flags are restored when it drops); they are
    /// not closed.
    pub fn connect_fds(
        input: BorrowedFd<'fd>,
        output: BorrowedFd<'fd>,
        options: ConnectOptions,
    ) -> Result<VfsTool<'fd>> {
        let pending = options
            .on_pending
            .map(|f| NonNull::from(Box::leak(Box::new(f))));
        let opts = sys::jpt_vfs_connect_options {
            size: std::mem::size_of::<sys::jpt_vfs_connect_options>(),
            max_message: options.max_message.unwrap_or(0),
            max_request: options.max_request.unwrap_or(0),
            on_pending: pending.map(|_| {
                pending_trampoline as unsafe extern "C" fn(u64, *const c_char, *mut c_void)
            }),
            ud: pending.map_or(ptr::null_mut(), |f| f.as_ptr() as *mut c_void),
        };
        let mut out = ptr::null_mut();
        let rc = unsafe {
            sys::jpt_vfs_tool_connect_fds(input.as_raw_fd(), output.as_raw_fd(), &opts, &mut out)
        };
        VfsTool::connected(rc, out, pending)
    }

    fn connected(
        rc: c_int,
        out: *mut sys::jpt_vfs_tool,
        pending: Option<NonNull<PendingFn>>,
    ) -> Result<VfsTool<'fd>> {
        let free_pending = || {
            if let Some(f) = pending {
                // SAFETY: from Box::leak above; the tool that called it is gone.
                drop(unsafe { Box::from_raw(f.as_ptr()) });
            }
        };
        if rc < 0 && !out.is_null() {
            // vfs_tool.h: connecting itself failed; the tool says why.
            let error = Error::from_status(rc, unsafe { sys::jpt_vfs_tool_errmsg(out) });
            unsafe { sys::jpt_vfs_tool_free(out) };
            free_pending();
            panic::resume();
            return Err(error);
        }
        if let Err(e) = check_new(rc) {
            free_pending();
            panic::resume();
            return Err(e);
        }
        let init = |p| unsafe { owned_str(p) }.unwrap_or_default();
        let tool = VfsTool {
            raw: NonNull::new(out).expect("jpt_vfs_tool_connect gave no tool"),
            pending,
            name: init(unsafe { sys::jpt_vfs_tool_name(out) }),
            arguments: init(unsafe { sys::jpt_vfs_tool_arguments(out) }),
            answers: init(unsafe { sys::jpt_vfs_tool_answers(out) }),
            options: init(unsafe { sys::jpt_vfs_tool_options(out) }),
            protocol_version: init(unsafe { sys::jpt_vfs_tool_protocol_version(out) }),
            _fds: PhantomData,
        };
        // A panic of on_pending while connecting drops the tool as it goes.
        panic::resume();
        Ok(tool)
    }

    /// The raw tool, owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::jpt_vfs_tool {
        self.raw.as_ptr()
    }

    /// A call's status as a Result: the tool's message, and the host's
    /// JSON-RPC code and data when it answered with an error. First
    /// resumes a panic of the on_pending closure: the callers take what
    /// the call handed over before, so that it is freed then too.
    fn done(&mut self, rc: c_int) -> Result<()> {
        panic::resume();
        if rc >= 0 {
            return Ok(());
        }
        let raw = self.as_ptr();
        let error = Error::from_status(rc, unsafe { sys::jpt_vfs_tool_errmsg(raw) });
        match unsafe { sys::jpt_vfs_tool_error_code(raw) } {
            0 => Err(error),
            code => {
                let data = unsafe { owned_str(sys::jpt_vfs_tool_error_data(raw)) };
                Err(error.with_rpc(code, data))
            }
        }
    }

    /// The tool's name as the host knows it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The call's arguments as JSON text ("{}" when the host sent none).
    pub fn arguments(&self) -> &str {
        &self.arguments
    }

    /// The answers to earlier questions as JSON text.
    pub fn answers(&self) -> &str {
        &self.answers
    }

    /// The tool's options as JSON text.
    pub fn options(&self) -> &str {
        &self.options
    }

    /// The host's protocol version, e.g. "0.1.0" ("" when it sent none).
    pub fn protocol_version(&self) -> &str {
        &self.protocol_version
    }

    /// fs.read: the file's bytes.
    pub fn read(&mut self, path: &str) -> Result<Vec<u8>> {
        let path = c_string(path, "the path")?;
        let (mut data, mut len) = (ptr::null_mut(), 0usize);
        let rc =
            unsafe { sys::jpt_vfs_tool_read(self.as_ptr(), path.as_ptr(), &mut data, &mut len) };
        let taken = take_bytes(data, len);
        self.done(rc)?;
        Ok(taken)
    }

    /// fs.write: creates or replaces the file (and its parent
    /// directories) with `data`.
    pub fn write(&mut self, path: &str, data: &[u8]) -> Result<()> {
        let path = c_string(path, "the path")?;
        let rc = unsafe {
            sys::jpt_vfs_tool_write(
                self.as_ptr(),
                path.as_ptr(),
                data.as_ptr() as *const c_void,
                data.len(),
            )
        };
        self.done(rc)
    }

    /// fs.exists.
    pub fn exists(&mut self, path: &str) -> Result<bool> {
        let path = c_string(path, "the path")?;
        let mut exists = 0 as c_int;
        let rc = unsafe { sys::jpt_vfs_tool_exists(self.as_ptr(), path.as_ptr(), &mut exists) };
        self.done(rc)?;
        Ok(exists != 0)
    }

    /// fs.list_dir: D11's array as JSON text,
    /// `[{"path":"main.rs","kind":"file"}, …]`.
    pub fn list_dir(&mut self, path: &str) -> Result<String> {
        let path = c_string(path, "the path")?;
        let mut out = ptr::null_mut();
        let rc = unsafe { sys::jpt_vfs_tool_list_dir(self.as_ptr(), path.as_ptr(), &mut out) };
        let taken = take_string(out);
        self.done(rc)?;
        Ok(taken)
    }

    /// fs.metadata: what the path is and its size (0 when the host sent
    /// none).
    pub fn metadata(&mut self, path: &str) -> Result<Metadata> {
        let path = c_string(path, "the path")?;
        let (mut kind, mut size) = (0 as c_int, 0u64);
        let rc = unsafe {
            sys::jpt_vfs_tool_metadata(self.as_ptr(), path.as_ptr(), &mut kind, &mut size)
        };
        self.done(rc)?;
        Ok(Metadata {
            kind: FileKind::from_raw(kind),
            size,
        })
    }

    /// fs.delete.
    pub fn delete(&mut self, path: &str) -> Result<()> {
        let path = c_string(path, "the path")?;
        let rc = unsafe { sys::jpt_vfs_tool_delete(self.as_ptr(), path.as_ptr()) };
        self.done(rc)
    }

    /// fs.rename.
    pub fn rename(&mut self, from: &str, to: &str) -> Result<()> {
        let from = c_string(from, "the path renamed")?;
        let to = c_string(to, "the new path")?;
        let rc = unsafe { sys::jpt_vfs_tool_rename(self.as_ptr(), from.as_ptr(), to.as_ptr()) };
        self.done(rc)
    }

    /// fs.grep: the result's JSON text, `{"matches":[{"path","lines":[{
    /// "line_number","content","is_match"}]}], …}` as the host sent it.
    pub fn grep(&mut self, query: &GrepQuery) -> Result<String> {
        let pattern = c_string(&query.pattern, "the pattern")?;
        let paths: Vec<&str> = query.paths.iter().map(String::as_str).collect();
        let extensions: Vec<&str> = query.extensions.iter().map(String::as_str).collect();
        let (_paths, path_ptrs) = c_strings(&paths, "a grep path")?;
        let (_extensions, extension_ptrs) = c_strings(&extensions, "a grep extension")?;
        let q = sys::jpt_vfs_grep_query {
            size: std::mem::size_of::<sys::jpt_vfs_grep_query>(),
            pattern: pattern.as_ptr(),
            paths: path_ptrs.as_ptr(),
            npaths: path_ptrs.len(),
            extensions: extension_ptrs.as_ptr(),
            nextensions: extension_ptrs.len(),
            context: query.context,
            case_insensitive: query.case_insensitive as c_int,
            fixed_strings: query.fixed_strings as c_int,
            max_matches: query.max_matches.unwrap_or(0),
        };
        let mut out = ptr::null_mut();
        let rc = unsafe { sys::jpt_vfs_tool_grep(self.as_ptr(), &q, &mut out) };
        let taken = take_string(out);
        self.done(rc)?;
        Ok(taken)
    }

    /// http.get of `url` with `headers` (name, value); a value may hold
    /// `${NAME}`, which the host fills from its own environment where the
    /// policy allows it (the tool never sees the value).
    pub fn http_get(&mut self, url: &str, headers: &[(&str, &str)]) -> Result<HttpResponse> {
        self.http(url, headers, None)
    }

    /// http.post of `body` (sent as text when it is UTF-8 without NUL
    /// bytes, else base64), otherwise as [`VfsTool::http_get`].
    pub fn http_post(
        &mut self,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<HttpResponse> {
        self.http(url, headers, Some(body))
    }

    fn http(
        &mut self,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Result<HttpResponse> {
        let url = c_string(url, "the URL")?;
        let names: Vec<&str> = headers.iter().map(|h| h.0).collect();
        let values: Vec<&str> = headers.iter().map(|h| h.1).collect();
        let (_names, name_ptrs) = c_strings(&names, "a header name")?;
        let (_values, value_ptrs) = c_strings(&values, "a header value")?;
        let list: Vec<sys::jpt_vfs_http_header> = name_ptrs
            .iter()
            .zip(&value_ptrs)
            .map(|(&name, &value)| sys::jpt_vfs_http_header { name, value })
            .collect();
        // SAFETY: a C struct of a size, an int, pointers and a length:
        // zero is its documented starting value.
        let mut response: sys::jpt_vfs_http_response = unsafe { std::mem::zeroed() };
        response.size = std::mem::size_of::<sys::jpt_vfs_http_response>();
        let rc = unsafe {
            match body {
                None => sys::jpt_vfs_tool_http_get(
                    self.as_ptr(),
                    url.as_ptr(),
                    list.as_ptr(),
                    list.len(),
                    &mut response,
                ),
                Some(body) => sys::jpt_vfs_tool_http_post(
                    self.as_ptr(),
                    url.as_ptr(),
                    list.as_ptr(),
                    list.len(),
                    body.as_ptr() as *const c_void,
                    body.len(),
                    &mut response,
                ),
            }
        };
        let copied = HttpResponse {
            status: response.status,
            headers_json: unsafe { owned_str(response.headers_json) }.unwrap_or_default(),
            body: if response.body.is_null() {
                Vec::new()
            } else {
                unsafe { std::slice::from_raw_parts(response.body as *const u8, response.body_len) }
                    .to_vec()
            },
        };
        unsafe { sys::jpt_vfs_http_response_clear(&mut response) };
        self.done(rc)?;
        Ok(copied)
    }

    /// Sends `method` with `params_json` (None: no params) and waits: the
    /// result as JSON text, as the host sent it. For methods this crate
    /// has no function for.
    pub fn call(&mut self, method: &str, params_json: Option<&str>) -> Result<String> {
        let method = c_string(method, "the method")?;
        let params = c_string_opt(params_json, "the params")?;
        let mut out = ptr::null_mut();
        let rc = unsafe {
            sys::jpt_vfs_tool_call(self.as_ptr(), method.as_ptr(), c_ptr(&params), &mut out)
        };
        let taken = take_string(out);
        self.done(rc)?;
        Ok(taken)
    }

    /// Sends a request without waiting for its response, and gives its id
    /// for [`VfsTool::collect`]. Collect every id submitted, in any order.
    pub fn submit(&mut self, method: &str, params_json: Option<&str>) -> Result<u64> {
        let method = c_string(method, "the method")?;
        let params = c_string_opt(params_json, "the params")?;
        let mut id = 0u64;
        let rc = unsafe {
            sys::jpt_vfs_tool_submit(self.as_ptr(), method.as_ptr(), c_ptr(&params), &mut id)
        };
        self.done(rc)?;
        Ok(id)
    }

    /// Submits an fs.read; collect it with [`VfsTool::collect_read`].
    pub fn submit_read(&mut self, path: &str) -> Result<u64> {
        let path = c_string(path, "the path")?;
        let mut id = 0u64;
        let rc = unsafe { sys::jpt_vfs_tool_submit_read(self.as_ptr(), path.as_ptr(), &mut id) };
        self.done(rc)?;
        Ok(id)
    }

    /// Submits an fs.write of `data`.
    pub fn submit_write(&mut self, path: &str, data: &[u8]) -> Result<u64> {
        let path = c_string(path, "the path")?;
        let mut id = 0u64;
        let rc = unsafe {
            sys::jpt_vfs_tool_submit_write(
                self.as_ptr(),
                path.as_ptr(),
                data.as_ptr() as *const c_void,
                data.len(),
                &mut id,
            )
        };
        self.done(rc)?;
        Ok(id)
    }

    /// Waits for the response to request `id` and forgets the id: the
    /// result's JSON text. [`ErrorKind::NotFound`](crate::ErrorKind::NotFound) when `id` is not an
    /// outstanding request.
    pub fn collect(&mut self, id: u64) -> Result<String> {
        let mut out = ptr::null_mut();
        let rc = unsafe { sys::jpt_vfs_tool_collect(self.as_ptr(), id, &mut out) };
        let taken = take_string(out);
        self.done(rc)?;
        Ok(taken)
    }

    /// [`VfsTool::collect`] of an fs.read: the file's bytes.
    pub fn collect_read(&mut self, id: u64) -> Result<Vec<u8>> {
        let (mut data, mut len) = (ptr::null_mut(), 0usize);
        let rc = unsafe { sys::jpt_vfs_tool_collect_read(self.as_ptr(), id, &mut data, &mut len) };
        let taken = take_bytes(data, len);
        self.done(rc)?;
        Ok(taken)
    }

    /// process.run: asks the host to run `program` with `args`,
    /// forwarding the host's variables named in `envs` (each must be in
    /// the policy's commands.<program>.envs), and waits until it ended.
    pub fn process_run(
        &mut self,
        program: &str,
        args: &[&str],
        envs: &[&str],
    ) -> Result<ProcessOutput> {
        let program = c_string(program, "the program")?;
        let (_args, arg_ptrs) = c_strings(args, "an argument")?;
        let (_envs, env_ptrs) = c_strings(envs, "a variable name")?;
        let (mut exit, mut stdout, mut stderr) = (0 as c_int, ptr::null_mut(), ptr::null_mut());
        let rc = unsafe {
            sys::jpt_vfs_tool_process_run(
                self.as_ptr(),
                program.as_ptr(),
                arg_ptrs.as_ptr(),
                arg_ptrs.len(),
                env_ptrs.as_ptr(),
                env_ptrs.len(),
                &mut exit,
                &mut stdout,
                &mut stderr,
            )
        };
        let output = ProcessOutput {
            exit: match exit {
                sys::JPT_VFS_TOOL_EXIT_UNKNOWN => Exit::Unknown,
                n if n < 0 => Exit::Signal(-n),
                n => Exit::Code(n),
            },
            stdout: take_string(stdout),
            stderr: take_string(stderr),
        };
        self.done(rc)?;
        Ok(output)
    }

    /// Sends a `state` notification: RFD 009 ToolState JSON text whose
    /// "type" is "running", "waiting" or "stopped".
    pub fn state(&mut self, state_json: &str) -> Result<()> {
        let state = c_string(state_json, "the state")?;
        let rc = unsafe { sys::jpt_vfs_tool_state(self.as_ptr(), state.as_ptr()) };
        self.done(rc)
    }

    /// Waits for the host's next `apply` and gives its input as JSON
    /// text. [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) once the host sent `cancel`,
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) when it closed the tool's stdin.
    pub fn next_input(&mut self) -> Result<String> {
        let mut out = ptr::null_mut();
        let rc = unsafe { sys::jpt_vfs_tool_next_input(self.as_ptr(), &mut out) };
        let taken = take_string(out);
        self.done(rc)?;
        Ok(taken)
    }

    /// Whether the host has sent `cancel` (the tool should then clean up
    /// and exit promptly).
    pub fn is_cancelled(&self) -> bool {
        unsafe { sys::jpt_vfs_tool_cancelled(self.as_ptr()) != 0 }
    }

    /// Ends with a `result` whose content is `content_json`: RFD 058
    /// content blocks (a JSON array) or a JSON string. Then the tool
    /// should exit.
    pub fn result(&mut self, content_json: &str) -> Result<()> {
        let content = c_string(content_json, "the content")?;
        let rc = unsafe { sys::jpt_vfs_tool_result(self.as_ptr(), content.as_ptr()) };
        self.done(rc)
    }

    /// Ends with a `result` of plain text.
    pub fn result_text(&mut self, text: &str) -> Result<()> {
        let text = c_string(text, "the text")?;
        let rc = unsafe { sys::jpt_vfs_tool_result_text(self.as_ptr(), text.as_ptr()) };
        self.done(rc)
    }

    /// Ends with an `error` (RFD 009 ToolError): the message, trace lines
    /// (outermost first), and whether retrying may succeed.
    pub fn error(&mut self, message: &str, trace: &[&str], transient: bool) -> Result<()> {
        let message = c_string(message, "the message")?;
        let (_trace, trace_ptrs) = c_strings(trace, "a trace line")?;
        let rc = unsafe {
            sys::jpt_vfs_tool_error(
                self.as_ptr(),
                message.as_ptr(),
                trace_ptrs.as_ptr(),
                trace_ptrs.len(),
                transient as c_int,
            )
        };
        self.done(rc)
    }
}

impl Drop for VfsTool<'_> {
    fn drop(&mut self) {
        // Restores the fds' flags; the on_pending closure goes after.
        unsafe { sys::jpt_vfs_tool_free(self.as_ptr()) };
        if let Some(f) = self.pending.take() {
            // SAFETY: from Box::leak in connect_fds; no call runs it now.
            drop(unsafe { Box::from_raw(f.as_ptr()) });
        }
    }
}

impl fmt::Debug for VfsTool<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VfsTool")
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .field("protocol_version", &self.protocol_version)
            .finish()
    }
}
