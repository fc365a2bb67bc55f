//! The OS sandbox (vfs.h, "The OS sandbox"): its modes, and what a spawn
//! enforced on this system, as [`VfsHost::sandbox`](crate::VfsHost::sandbox)
//! and [`Registry::tool_sandbox`](crate::Registry::tool_sandbox) report it.

use std::fmt;

use jptool_sys as sys;

/// How a tool process's OS sandbox is applied (`JPT_SANDBOX_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SandboxMode {
    /// The library's default: [`SandboxMode::Required`] (or, for a
    /// registry's tool, the registry's mode).
    #[default]
    Default,
    /// A spawn fails with [`ErrorKind::Sandbox`](crate::ErrorKind::Sandbox),
    /// the message naming what the system lacks, where Landlock or the
    /// seccomp filter is missing.
    Required,
    /// The tool runs with what there is; the report says what is missing.
    BestEffort,
    /// No OS sandbox (a VFS tool's environment stays clean).
    Off,
}

impl SandboxMode {
    pub(crate) fn raw(self) -> i32 {
        match self {
            SandboxMode::Default => sys::JPT_SANDBOX_DEFAULT,
            SandboxMode::Required => sys::JPT_SANDBOX_REQUIRED,
            SandboxMode::BestEffort => sys::JPT_SANDBOX_BEST_EFFORT,
            SandboxMode::Off => sys::JPT_SANDBOX_OFF,
        }
    }
}

/// What a sandbox enforced: a set of `JPT_SANDBOX_ENFORCED_*` bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Enforced(u32);

impl Enforced {
    /// no_new_privs: no set-user-ID gains.
    pub const NO_NEW_PRIVS: Enforced = Enforced(sys::JPT_SANDBOX_ENFORCED_NO_NEW_PRIVS as u32);
    /// The seccomp system-call filter.
    pub const SECCOMP: Enforced = Enforced(sys::JPT_SANDBOX_ENFORCED_SECCOMP as u32);
    /// Landlock: files.
    pub const FILES: Enforced = Enforced(sys::JPT_SANDBOX_ENFORCED_FILES as u32);
    /// Truncation by path.
    pub const TRUNCATE: Enforced = Enforced(sys::JPT_SANDBOX_ENFORCED_TRUNCATE as u32);
    /// Landlock: TCP bind and connect.
    pub const TCP: Enforced = Enforced(sys::JPT_SANDBOX_ENFORCED_TCP as u32);
    /// Landlock: device ioctls.
    pub const DEVICE_IOCTL: Enforced = Enforced(sys::JPT_SANDBOX_ENFORCED_DEVICE_IOCTL as u32);
    /// Landlock: signals and abstract Unix sockets.
    pub const SCOPES: Enforced = Enforced(sys::JPT_SANDBOX_ENFORCED_SCOPES as u32);
    /// Every capability dropped (bounding, ambient, effective, permitted,
    /// inheritable; securebits locked).
    pub const CAPABILITIES: Enforced = Enforced(sys::JPT_SANDBOX_ENFORCED_CAPABILITIES as u32);
    /// No change of a file's mode, owner, times or extended attributes
    /// outside what the tool may write.
    pub const METADATA: Enforced = Enforced(sys::JPT_SANDBOX_ENFORCED_METADATA as u32);
    /// A mount namespace: read-only but the writable areas, secrets
    /// covered.
    pub const MOUNTS: Enforced = Enforced(sys::JPT_SANDBOX_ENFORCED_MOUNTS as u32);
    /// A PID namespace: its processes end with it.
    pub const PROCESSES: Enforced = Enforced(sys::JPT_SANDBOX_ENFORCED_PROCESSES as u32);

    const NAMES: [(Enforced, &'static str); 11] = [
        (Enforced::NO_NEW_PRIVS, "NO_NEW_PRIVS"),
        (Enforced::SECCOMP, "SECCOMP"),
        (Enforced::FILES, "FILES"),
        (Enforced::TRUNCATE, "TRUNCATE"),
        (Enforced::TCP, "TCP"),
        (Enforced::DEVICE_IOCTL, "DEVICE_IOCTL"),
        (Enforced::SCOPES, "SCOPES"),
        (Enforced::CAPABILITIES, "CAPABILITIES"),
        (Enforced::METADATA, "METADATA"),
        (Enforced::MOUNTS, "MOUNTS"),
        (Enforced::PROCESSES, "PROCESSES"),
    ];

    /// The set of the C bits.
    pub fn from_bits(bits: u32) -> Enforced {
        Enforced(bits)
    }

    /// The C bits.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: Enforced) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether nothing is enforced.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl std::ops::BitOr for Enforced {
    type Output = Enforced;
    fn bitor(self, other: Enforced) -> Enforced {
        Enforced(self.0 | other.0)
    }
}

impl fmt::Debug for Enforced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut set = f.debug_set();
        let mut known = 0;
        for (bit, name) in Enforced::NAMES {
            if self.contains(bit) {
                set.entry(&format_args!("{}", name));
                known |= bit.0;
            }
        }
        if self.0 & !known != 0 {
            set.entry(&format_args!("{:#x}", self.0 & !known));
        }
        set.finish()
    }
}

/// What the OS sandbox of a tool's processes enforces on this system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxReport {
    /// The enforced parts (empty for a tool without a sandbox).
    pub enforced: Enforced,
    /// A sentence saying so and naming what is missing ("vfs profile,
    /// Landlock ABI 7: enforced files, …"), or why there is none.
    pub report: String,
}
