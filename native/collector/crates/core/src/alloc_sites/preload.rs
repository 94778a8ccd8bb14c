//! Whether the allocation-site shim can be preloaded into a program, checked before launch so
//! that `numascope record` can say why allocation sites will be missing instead of recording
//! silently without them.

use std::ffi::CString;
use std::fmt;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Why `LD_PRELOAD` cannot work for a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PreloadBlocked {
    /// The file does not exist or cannot be read.
    Unreadable { path: PathBuf, error: String },
    /// Neither an ELF file nor a `#!` script.
    NotElf { path: PathBuf },
    /// No program interpreter (PT_INTERP): statically linked, so no dynamic loader reads LD_PRELOAD.
    Static { path: PathBuf },
    /// Set-user-ID or set-group-ID to another user or group: the loader runs it in secure mode
    /// and ignores LD_PRELOAD entries with a slash.
    SetId { path: PathBuf, which: &'static str },
    /// File capabilities put the loader in secure mode too.
    FileCapabilities { path: PathBuf },
    /// An ELF for another word size or machine than the shim's.
    OtherArchitecture { path: PathBuf, what: String },
    /// A `#!` chain longer than the kernel follows.
    InterpreterLoop { path: PathBuf },
}

impl fmt::Display for PreloadBlocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tail = "allocation sites cannot be recorded for it (record with --no-alloc-sites to silence this)";
        match self {
            PreloadBlocked::Unreadable { path, error } => write!(f, "{}: cannot read the program ({error}); {tail}", path.display()),
            PreloadBlocked::NotElf { path } => write!(f, "{}: not an ELF executable or #! script; {tail}", path.display()),
            PreloadBlocked::Static { path } => write!(
                f,
                "{}: statically linked, so no dynamic loader runs and the allocation-site shim cannot be preloaded; {tail}, or link it dynamically",
                path.display()
            ),
            PreloadBlocked::SetId { path, which } => write!(
                f,
                "{}: {which} to another user, so the loader runs it in secure mode and ignores LD_PRELOAD; {tail}",
                path.display()
            ),
            PreloadBlocked::FileCapabilities { path } => write!(
                f,
                "{}: has file capabilities, so the loader runs it in secure mode and ignores LD_PRELOAD; {tail}",
                path.display()
            ),
            PreloadBlocked::OtherArchitecture { path, what } => write!(
                f,
                "{}: {what}, but the allocation-site shim is built for {}; {tail}",
                path.display(),
                std::env::consts::ARCH
            ),
            PreloadBlocked::InterpreterLoop { path } => {
                write!(f, "{}: #! interpreters nest more than 4 deep; {tail}", path.display())
            }
        }
    }
}

impl std::error::Error for PreloadBlocked {}

#[cfg(target_arch = "x86_64")]
const HOST_MACHINE: u16 = 62;
#[cfg(target_arch = "aarch64")]
const HOST_MACHINE: u16 = 183;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const HOST_MACHINE: u16 = 0;

const PT_INTERP: u32 = 3;
const MAX_PHNUM: usize = 4096;

/// Checks that the shim can be preloaded into `program` (a path; resolve a bare command name
/// against PATH first). A `#!` script is judged by its interpreter.
pub fn preload_possible(program: &Path) -> Result<(), PreloadBlocked> {
    check(program, 0)
}

fn check(path: &Path, depth: u32) -> Result<(), PreloadBlocked> {
    if depth > 4 {
        return Err(PreloadBlocked::InterpreterLoop { path: path.to_path_buf() });
    }
    let unreadable = |e: std::io::Error| PreloadBlocked::Unreadable { path: path.to_path_buf(), error: e.to_string() };
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    let uid = unsafe { libc::geteuid() };
    let gid = unsafe { libc::getegid() };
    if meta.mode() & libc::S_ISUID != 0 && meta.uid() != uid {
        return Err(PreloadBlocked::SetId { path: path.to_path_buf(), which: "set-user-ID" });
    }
    // Set-group-ID without group execute marks mandatory locking, not a gid change.
    if meta.mode() & libc::S_ISGID != 0 && meta.mode() & libc::S_IXGRP != 0 && meta.gid() != gid {
        return Err(PreloadBlocked::SetId { path: path.to_path_buf(), which: "set-group-ID" });
    }
    if has_file_caps(path) {
        return Err(PreloadBlocked::FileCapabilities { path: path.to_path_buf() });
    }
    let mut head = Vec::with_capacity(512);
    std::fs::File::open(path).map_err(unreadable)?.take(512).read_to_end(&mut head).map_err(unreadable)?;
    if head.starts_with(b"#!") {
        let line = head[2..].split(|&b| b == b'\n').next().unwrap_or(&[]);
        let interp = line
            .split(|&b| b == b' ' || b == b'\t')
            .find(|s| !s.is_empty())
            .ok_or_else(|| PreloadBlocked::NotElf { path: path.to_path_buf() })?;
        return check(Path::new(std::ffi::OsStr::from_bytes(interp)), depth + 1);
    }
    if !head.starts_with(b"\x7fELF") || head.len() < 64 {
        return Err(PreloadBlocked::NotElf { path: path.to_path_buf() });
    }
    let other = |what: String| PreloadBlocked::OtherArchitecture { path: path.to_path_buf(), what };
    if head[4] != 2 {
        return Err(other("a 32-bit ELF".into()));
    }
    if head[5] != 1 {
        return Err(other("a big-endian ELF".into()));
    }
    let machine = u16::from_le_bytes([head[18], head[19]]);
    if machine != HOST_MACHINE {
        return Err(other(format!("an ELF for machine {machine}")));
    }
    let phoff = u64::from_le_bytes(head[32..40].try_into().unwrap_or([0; 8]));
    let phentsize = u16::from_le_bytes([head[54], head[55]]) as usize;
    let phnum = u16::from_le_bytes([head[56], head[57]]) as usize;
    if phentsize < 56 || phnum > MAX_PHNUM {
        return Err(PreloadBlocked::NotElf { path: path.to_path_buf() });
    }
    let mut f = std::fs::File::open(path).map_err(unreadable)?;
    use std::io::Seek;
    f.seek(std::io::SeekFrom::Start(phoff)).map_err(unreadable)?;
    let mut ph = Vec::with_capacity(phentsize * phnum);
    f.take((phentsize * phnum) as u64).read_to_end(&mut ph).map_err(unreadable)?;
    let interp = ph.chunks_exact(phentsize).any(|p| u32::from_le_bytes([p[0], p[1], p[2], p[3]]) == PT_INTERP);
    if !interp {
        return Err(PreloadBlocked::Static { path: path.to_path_buf() });
    }
    Ok(())
}

fn has_file_caps(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: a size query (null buffer) on a NUL-terminated path.
    let r = unsafe { libc::getxattr(c.as_ptr(), c"security.capability".as_ptr(), std::ptr::null_mut(), 0) };
    r > 0
}

/// Where the shim library is: [`find_shim`], None when it is not found.
pub fn shim_path() -> Option<PathBuf> {
    find_shim().ok()
}

/// Finds the shim library, in this order:
/// 1. `NUMASCOPE_ALLOC_SHIM`, when set (an error if it does not name a file);
/// 2. `libnumascope_allocshim.so` beside the running executable (cargo puts the `numascope`
///    binary and the shim in the same target directory), or one directory up (test binaries run
///    from target/<profile>/deps);
/// 3. beside the shared object holding this code (the Node addon, when numascope runs inside
///    Node or Electron), or one directory up;
/// 4. `../lib/numascope/` from the executable's directory (an installed layout:
///    /usr/local/bin/numascope and /usr/local/lib/numascope/libnumascope_allocshim.so).
///
/// The error lists the places looked at and how to fix it.
pub fn find_shim() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("NUMASCOPE_ALLOC_SHIM") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("NUMASCOPE_ALLOC_SHIM={} is not a file; point it at {SHIM_FILE_NAME} or unset it", p.display()))
        };
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut near = |file: Option<PathBuf>| {
        if let Some(dir) = file.as_deref().and_then(Path::parent) {
            dirs.push(dir.to_path_buf());
            if let Some(up) = dir.parent() {
                dirs.push(up.to_path_buf());
            }
        }
    };
    let exe = std::env::current_exe().ok();
    near(exe.clone());
    near(this_object());
    if let Some(bin) = exe.as_deref().and_then(Path::parent) {
        dirs.push(bin.join("../lib/numascope"));
    }
    dirs.dedup();
    for d in &dirs {
        let p = d.join(SHIM_FILE_NAME);
        if p.is_file() {
            return Ok(std::fs::canonicalize(&p).unwrap_or(p));
        }
    }
    Err(format!(
        "{SHIM_FILE_NAME} was not found (looked in {}); build it with `cargo build -p numascope-allocshim` in native/collector, or set NUMASCOPE_ALLOC_SHIM to its path",
        dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
    ))
}

/// The file of the shared object (or executable) this code was loaded from.
fn this_object() -> Option<PathBuf> {
    // SAFETY: dladdr only reads the loader's tables; dli_fname points into them and is copied
    // before returning.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(find_shim as *const () as *const libc::c_void, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        let name = std::ffi::CStr::from_ptr(info.dli_fname);
        Some(PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes())))
    }
}

pub const SHIM_FILE_NAME: &str = "libnumascope_allocshim.so";
