//! State: a tool's output as typed content blocks (state.h), reference
//! counted; and the helpers state.h exports on their own (URI
//! canonicalisation, fence languages, the schema check).

use std::borrow::Cow;
use std::ffi::CStr;
use std::fmt;
use std::os::raw::c_char;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, Ordering};

use jptool_sys as sys;

use crate::error::{check, check_new, Error, ErrorKind, Result};
use crate::{borrowed_str, c_ptr, c_string, c_string_opt, take_string};

/// A lifecycle state (RFD 009): `JPT_STATE_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Running,
    Waiting,
    Stopped,
}

impl Kind {
    pub(crate) fn from_raw(raw: i32) -> Option<Kind> {
        match raw {
            sys::JPT_STATE_RUNNING => Some(Kind::Running),
            sys::JPT_STATE_WAITING => Some(Kind::Waiting),
            sys::JPT_STATE_STOPPED => Some(Kind::Stopped),
            _ => None,
        }
    }

    pub(crate) fn raw(self) -> i32 {
        match self {
            Kind::Running => sys::JPT_STATE_RUNNING,
            Kind::Waiting => sys::JPT_STATE_WAITING,
            Kind::Stopped => sys::JPT_STATE_STOPPED,
        }
    }
}

/// A content block's type (RFD 058, MCP): `JPT_BLOCK_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockType {
    Text,
    Resource,
    Question,
    Image,
    Audio,
    ResourceLink,
}

impl BlockType {
    fn from_raw(raw: i32) -> Option<BlockType> {
        match raw {
            sys::JPT_BLOCK_TEXT => Some(BlockType::Text),
            sys::JPT_BLOCK_RESOURCE => Some(BlockType::Resource),
            sys::JPT_BLOCK_QUESTION => Some(BlockType::Question),
            sys::JPT_BLOCK_IMAGE => Some(BlockType::Image),
            sys::JPT_BLOCK_AUDIO => Some(BlockType::Audio),
            sys::JPT_BLOCK_RESOURCE_LINK => Some(BlockType::ResourceLink),
            _ => None,
        }
    }
}

/// A field of a content block (`JPT_FIELD_*`); state.h says which block
/// types carry which.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    Text,
    Uri,
    MimeType,
    Blob,
    Formatted,
    Name,
    Title,
    Description,
    Annotations,
    Id,
    Schema,
    Default,
    BlobSize,
}

impl Field {
    fn raw(self) -> i32 {
        match self {
            Field::Text => sys::JPT_FIELD_TEXT,
            Field::Uri => sys::JPT_FIELD_URI,
            Field::MimeType => sys::JPT_FIELD_MIME_TYPE,
            Field::Blob => sys::JPT_FIELD_BLOB,
            Field::Formatted => sys::JPT_FIELD_FORMATTED,
            Field::Name => sys::JPT_FIELD_NAME,
            Field::Title => sys::JPT_FIELD_TITLE,
            Field::Description => sys::JPT_FIELD_DESCRIPTION,
            Field::Annotations => sys::JPT_FIELD_ANNOTATIONS,
            Field::Id => sys::JPT_FIELD_ID,
            Field::Schema => sys::JPT_FIELD_SCHEMA,
            Field::Default => sys::JPT_FIELD_DEFAULT,
            Field::BlobSize => sys::JPT_FIELD_BLOB_SIZE,
        }
    }
}

/// A JSON form for [`State::to_json`] (`JPT_JSON_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JsonForm {
    /// RFD 058 / MCP CallToolResult.
    Envelope,
    /// RFD 009 ToolState.
    ToolState,
    /// JP's legacy Outcome.
    Outcome,
}

/// A resource block for [`State::add_resource`]: `uri` and exactly one of
/// `text` or `blob` (base64); `annotations_json` a JSON object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resource {
    pub uri: String,
    pub mime_type: Option<String>,
    pub text: Option<String>,
    pub blob: Option<String>,
    pub formatted: Option<String>,
    pub name: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    pub annotations_json: Option<String>,
}

/// A tool's output: a lifecycle [`Kind`], an optional error, and content
/// blocks (`jpt_state`). Cloning adds a reference (`jpt_state_ref`), after
/// which the state is immutable: the builders then fail with
/// [`ErrorKind::State`]. Dropping the last clone frees it.
///
/// `Send` and `Sync`, as state.h allows: the reference count is atomic and
/// a shared state is immutable, so clones may be read and dropped on any
/// threads. (The one thing state.h excepts, the message a refused builder
/// leaves on a shared state, this crate never asks for: a builder on a
/// shared state fails here without calling the library.)
pub struct State {
    raw: NonNull<sys::jpt_state>,
    /// Set once the state has (or may have) another reference: builders
    /// then fail before they reach the library.
    shared: AtomicBool,
}

// SAFETY: state.h: the count is atomic and a state with more than one
// reference is immutable, so it may be read from several threads; the
// builders, which write, take `&mut self` and refuse a shared state
// without calling the library (see `State::shared`).
unsafe impl Send for State {}
unsafe impl Sync for State {}

impl State {
    /// Takes ownership of the one reference to a state nobody else holds
    /// (a new or parsed one).
    pub(crate) unsafe fn from_raw(raw: *mut sys::jpt_state) -> State {
        State {
            raw: NonNull::new(raw).expect("jptool returned a NULL state"),
            shared: AtomicBool::new(false),
        }
    }

    /// Takes ownership of a reference to a state the library holds too
    /// (a VFS host's): immutable.
    pub(crate) unsafe fn from_shared(raw: *mut sys::jpt_state) -> State {
        State {
            raw: NonNull::new(raw).expect("jptool returned a NULL state"),
            shared: AtomicBool::new(true),
        }
    }

    /// Adds a reference to a state the library owns (an inquiry's
    /// context) and wraps it.
    pub(crate) unsafe fn from_borrowed(raw: *const sys::jpt_state) -> Option<State> {
        if raw.is_null() {
            None
        } else {
            Some(State::from_shared(sys::jpt_state_ref(
                raw as *mut sys::jpt_state,
            )))
        }
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::jpt_state {
        self.raw.as_ptr()
    }

    /// Parses a tool's output, in any of the formats state.h lists
    /// (`jpt_state_parse`). Malformed output is never an error: it is
    /// text, and skipped blocks are [`State::warnings`].
    pub fn parse(output: &[u8]) -> Result<State> {
        State::parse_with(output, 0)
    }

    /// Parses the output as raw text even if it looks like JSON
    /// (`JPT_PARSE_RAW`).
    pub fn parse_raw(output: &[u8]) -> Result<State> {
        State::parse_with(output, sys::JPT_PARSE_RAW as u32)
    }

    fn parse_with(output: &[u8], flags: u32) -> Result<State> {
        let mut out = ptr::null_mut();
        let rc = unsafe {
            sys::jpt_state_parse(
                output.as_ptr() as *const c_char,
                output.len(),
                flags,
                &mut out,
            )
        };
        check_new(rc)?;
        Ok(unsafe { State::from_raw(out) })
    }

    /// A new empty state of `kind`, to build (`jpt_state_new`).
    pub fn new(kind: Kind) -> Result<State> {
        let mut out = ptr::null_mut();
        check_new(unsafe { sys::jpt_state_new(kind.raw(), &mut out) })?;
        Ok(unsafe { State::from_raw(out) })
    }

    /// A new state of `kind` holding one text block.
    pub fn with_text(kind: Kind, text: &str) -> Result<State> {
        let mut s = State::new(kind)?;
        s.add_text(text)?;
        Ok(s)
    }

    /// The lifecycle state.
    pub fn kind(&self) -> Kind {
        Kind::from_raw(unsafe { sys::jpt_state_kind(self.as_ptr()) }).unwrap_or(Kind::Stopped)
    }

    /// Whether the tool stopped with an error.
    pub fn is_error(&self) -> bool {
        unsafe { sys::jpt_state_is_error(self.as_ptr()) != 0 }
    }

    /// The error message ("" when the state is not an error).
    pub fn error_message(&self) -> Cow<'_, str> {
        self.lossy(unsafe { sys::jpt_state_error_message(self.as_ptr()) })
    }

    /// Whether the error is transient (retrying may succeed).
    pub fn error_transient(&self) -> bool {
        unsafe { sys::jpt_state_error_transient(self.as_ptr()) != 0 }
    }

    /// The error's source chain, outermost first.
    pub fn error_trace(&self) -> Vec<String> {
        let n = unsafe { sys::jpt_state_error_trace_count(self.as_ptr()) };
        (0..n)
            .map(|i| {
                self.lossy(unsafe { sys::jpt_state_error_trace(self.as_ptr(), i) })
                    .into_owned()
            })
            .collect()
    }

    /// MCP `structuredContent` as compact JSON text.
    pub fn structured_content(&self) -> Option<&str> {
        unsafe { borrowed_str(sys::jpt_state_structured_content(self.as_ptr())) }
    }

    /// The number of content blocks.
    pub fn block_count(&self) -> usize {
        unsafe { sys::jpt_state_block_count(self.as_ptr()) }
    }

    /// The type of block `i`, None when out of range.
    pub fn block_type(&self, i: usize) -> Option<BlockType> {
        BlockType::from_raw(unsafe { sys::jpt_state_block_type(self.as_ptr(), i) })
    }

    /// A field of block `i`, byte-exact (text from tool output may hold
    /// NUL bytes or invalid UTF-8), or None when the block lacks it.
    pub fn block_field(&self, i: usize, field: Field) -> Option<&[u8]> {
        let mut len = 0usize;
        let p = unsafe { sys::jpt_state_block_field(self.as_ptr(), i, field.raw(), &mut len) };
        if p.is_null() {
            return None;
        }
        // SAFETY: `len` bytes owned by the state, alive while `self` is.
        Some(unsafe { std::slice::from_raw_parts(p as *const u8, len) })
    }

    /// A field of block `i` as text, invalid UTF-8 replaced with U+FFFD.
    pub fn block_field_str(&self, i: usize, field: Field) -> Option<Cow<'_, str>> {
        self.block_field(i, field).map(String::from_utf8_lossy)
    }

    /// Problems found while parsing, one sentence each.
    pub fn warnings(&self) -> Vec<String> {
        let n = unsafe { sys::jpt_state_warning_count(self.as_ptr()) };
        (0..n)
            .map(|i| {
                self.lossy(unsafe { sys::jpt_state_warning(self.as_ptr(), i) })
                    .into_owned()
            })
            .collect()
    }

    fn lossy(&self, p: *const c_char) -> Cow<'_, str> {
        if p.is_null() {
            Cow::Borrowed("")
        } else {
            // SAFETY: owned by the state, alive while `self` is.
            unsafe { CStr::from_ptr(p) }.to_string_lossy()
        }
    }

    /// Runs a builder call, unless the state is shared: state.h makes a
    /// shared state immutable, and its refusal would write the message of
    /// a state other threads may be reading.
    fn build(&mut self, call: impl FnOnce(*mut sys::jpt_state) -> i32) -> Result<()> {
        if *self.shared.get_mut() {
            return Err(Error::new(
                ErrorKind::State,
                "the state is shared (cloned, or held by the library) and can no longer change",
            ));
        }
        let raw = self.as_ptr();
        check(call(raw), || unsafe { sys::jpt_state_errmsg(raw) })
    }

    /// Appends a text block.
    pub fn add_text(&mut self, text: &str) -> Result<()> {
        let text = c_string(text, "the text")?;
        self.build(|s| unsafe { sys::jpt_state_add_text(s, text.as_ptr()) })
    }

    /// Appends a resource block.
    pub fn add_resource(&mut self, resource: &Resource) -> Result<()> {
        let uri = c_string(&resource.uri, "the uri")?;
        let mime_type = c_string_opt(resource.mime_type.as_deref(), "the mime type")?;
        let text = c_string_opt(resource.text.as_deref(), "the text")?;
        let blob = c_string_opt(resource.blob.as_deref(), "the blob")?;
        let formatted = c_string_opt(resource.formatted.as_deref(), "the formatted text")?;
        let name = c_string_opt(resource.name.as_deref(), "the name")?;
        let title = c_string_opt(resource.title.as_deref(), "the title")?;
        let description = c_string_opt(resource.description.as_deref(), "the description")?;
        let annotations = c_string_opt(resource.annotations_json.as_deref(), "the annotations")?;
        let r = sys::jpt_resource {
            size: std::mem::size_of::<sys::jpt_resource>(),
            uri: uri.as_ptr(),
            mime_type: c_ptr(&mime_type),
            text: c_ptr(&text),
            blob: c_ptr(&blob),
            formatted: c_ptr(&formatted),
            name: c_ptr(&name),
            title: c_ptr(&title),
            description: c_ptr(&description),
            annotations_json: c_ptr(&annotations),
        };
        self.build(|s| unsafe { sys::jpt_state_add_resource(s, &r) })
    }

    /// Appends a question block: `schema_json` a JSON Schema (None: any
    /// answer), `default_json` any JSON value (None: no default).
    pub fn add_question(
        &mut self,
        id: &str,
        text: &str,
        schema_json: Option<&str>,
        default_json: Option<&str>,
    ) -> Result<()> {
        let id = c_string(id, "the question id")?;
        let text = c_string(text, "the question text")?;
        let schema = c_string_opt(schema_json, "the schema")?;
        let default = c_string_opt(default_json, "the default")?;
        self.build(|s| unsafe {
            sys::jpt_state_add_question(
                s,
                id.as_ptr(),
                text.as_ptr(),
                c_ptr(&schema),
                c_ptr(&default),
            )
        })
    }

    /// Appends one content block given as RFD 058 / MCP JSON.
    pub fn add_block_json(&mut self, block_json: &str) -> Result<()> {
        let block = c_string(block_json, "the block")?;
        self.build(|s| unsafe { sys::jpt_state_add_block_json(s, block.as_ptr()) })
    }

    /// Sets MCP `structuredContent` (any JSON value).
    pub fn set_structured_content(&mut self, json: &str) -> Result<()> {
        let json = c_string(json, "the structured content")?;
        self.build(|s| unsafe { sys::jpt_state_set_structured_content(s, json.as_ptr()) })
    }

    /// Marks the state as a stopped error; a non-empty `message` becomes a
    /// text block. Content can no longer be added afterwards.
    pub fn set_error(&mut self, message: &str, transient: bool) -> Result<()> {
        let message = c_string(message, "the error message")?;
        self.build(|s| unsafe { sys::jpt_state_set_error(s, message.as_ptr(), transient as i32) })
    }

    /// Appends a line to the error's trace.
    pub fn add_error_trace(&mut self, line: &str) -> Result<()> {
        let line = c_string(line, "the trace line")?;
        self.build(|s| unsafe { sys::jpt_state_add_error_trace(s, line.as_ptr()) })
    }

    /// The state as JSON text in `form` (`jpt_state_to_json`).
    /// [`ErrorKind::Invalid`] for [`JsonForm::Outcome`] of a running
    /// state, which the legacy format cannot express.
    pub fn to_json(&self, form: JsonForm, pretty: bool) -> Result<String> {
        let outcome_of_running = form == JsonForm::Outcome && self.kind() == Kind::Running;
        let form = match form {
            JsonForm::Envelope => sys::JPT_JSON_ENVELOPE,
            JsonForm::ToolState => sys::JPT_JSON_TOOL_STATE,
            JsonForm::Outcome => sys::JPT_JSON_OUTCOME,
        };
        let flags = if pretty {
            sys::JPT_JSON_PRETTY as u32
        } else {
            0
        };
        let mut out = ptr::null_mut();
        let rc = unsafe { sys::jpt_state_to_json(self.as_ptr(), form, flags, &mut out) };
        if rc == sys::JPT_ERR_INVALID && outcome_of_running {
            return Err(Error::new(
                ErrorKind::Invalid,
                "to_json: the legacy Outcome form cannot express a running state",
            ));
        }
        if rc < 0 {
            return Err(Error::about(rc, "to_json"));
        }
        Ok(take_string(out))
    }

    /// The text the model reads (`jpt_state_render`); file resources
    /// beneath `root` (an absolute path or file:// URI) are named
    /// relative to it.
    pub fn render(&self, root: Option<&str>) -> Result<String> {
        let root = c_string_opt(root, "the root")?;
        let opts = sys::jpt_render_options {
            size: std::mem::size_of::<sys::jpt_render_options>(),
            root: c_ptr(&root),
        };
        let mut out = ptr::null_mut();
        let rc = unsafe { sys::jpt_state_render(self.as_ptr(), &opts, &mut out) };
        match (rc, root) {
            (sys::JPT_ERR_INVALID, Some(root)) => Err(Error::new(
                ErrorKind::Invalid,
                format!(
                    "render: the root '{}' is not an absolute path or file:// URI",
                    root.to_string_lossy()
                ),
            )),
            (rc, _) if rc < 0 => Err(Error::about(rc, "render")),
            _ => Ok(take_string(out)),
        }
    }
}

impl Clone for State {
    /// Another reference to the same state; both are immutable from now on.
    fn clone(&self) -> State {
        self.shared.store(true, Ordering::Relaxed);
        unsafe { State::from_shared(sys::jpt_state_ref(self.as_ptr())) }
    }
}

impl Drop for State {
    fn drop(&mut self) {
        unsafe { sys::jpt_state_unref(self.as_ptr()) }
    }
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("State")
            .field("kind", &self.kind())
            .field("is_error", &self.is_error())
            .field("blocks", &self.block_count())
            .finish()
    }
}

/// Canonicalises a URI for identity (RFD 058, `jpt_uri_canonicalize`):
/// a file beneath `root` comes back relative to it.
pub fn uri_canonicalize(uri: &str, root: Option<&str>) -> Result<String> {
    let uri = c_string(uri, "the uri")?;
    let root = c_string_opt(root, "the root")?;
    let mut out = ptr::null_mut();
    let rc = unsafe { sys::jpt_uri_canonicalize(uri.as_ptr(), c_ptr(&root), &mut out) };
    check_new(rc)?;
    Ok(take_string(out))
}

/// The code fence language for a mime type ("text/rust" -> "rs"), or None.
pub fn mime_fence_lang(mime_type: &str) -> Option<&'static str> {
    let mime_type = c_string(mime_type, "the mime type").ok()?;
    // SAFETY: static storage.
    unsafe { borrowed_str(sys::jpt_mime_fence_lang(mime_type.as_ptr())) }
}

/// Checks the JSON value against a JSON Schema in the subset questions use
/// (`jpt_schema_check`). A mismatch is [`ErrorKind::Invalid`] whose
/// message says what did not match and where ("at /files/2: expected
/// string, got integer").
pub fn schema_check(schema_json: &str, value_json: &str) -> Result<()> {
    let schema = c_string(schema_json, "the schema")?;
    let value = c_string(value_json, "the value")?;
    let mut why = ptr::null_mut();
    let rc = unsafe { sys::jpt_schema_check(schema.as_ptr(), value.as_ptr(), &mut why) };
    if rc >= 0 {
        return Ok(());
    }
    let why = take_string(why);
    if why.is_empty() {
        Err(Error::from_code(rc))
    } else {
        Err(Error::new(ErrorKind::from_code(rc), why))
    }
}
