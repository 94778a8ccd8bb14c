//! Node-bound buffers for the benchmark: anonymous mappings bound to one memory node with
//! `mbind(MPOL_BIND)` before first touch, verified with `move_pages`, and thread pinning.

use std::io;

use crate::numa_sys::query_page_nodes;

/// `MPOL_BIND` from linux/mempolicy.h.
const MPOL_BIND: libc::c_int = 2;
/// `MPOL_MF_STRICT`: fail when existing pages do not follow the policy (there are none yet).
const MPOL_MF_STRICT: libc::c_uint = 1;

/// An anonymous mapping whose pages come from one memory node. Unmapped on drop.
pub struct NodeBuffer {
    ptr: *mut u8,
    len: usize,
    /// Whether `MADV_HUGEPAGE` was accepted for the mapping.
    pub huge_pages: bool,
}

// SAFETY: the mapping is plain memory owned by this value; threads get disjoint slices of it.
unsafe impl Send for NodeBuffer {}
unsafe impl Sync for NodeBuffer {}

impl NodeBuffer {
    /// Maps `len` bytes bound to `node` (not touched yet). `huge` asks for transparent huge pages.
    pub fn new(len: usize, node: u32, huge: bool) -> io::Result<NodeBuffer> {
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty buffer"));
        }
        // SAFETY: a fresh private anonymous mapping; the result is checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // Owned from here on: dropped (unmapped) if binding fails.
        let mut buf = NodeBuffer { ptr: ptr.cast(), len, huge_pages: false };
        buf.bind(node)?;
        // SAFETY: advice on our own mapping; failure only means no huge pages.
        buf.huge_pages = huge && unsafe { libc::madvise(ptr, len, libc::MADV_HUGEPAGE) } == 0;
        Ok(buf)
    }

    fn bind(&self, node: u32) -> io::Result<()> {
        let bits = 8 * std::mem::size_of::<libc::c_ulong>();
        let mut mask = vec![0 as libc::c_ulong; node as usize / bits + 1];
        mask[node as usize / bits] |= 1 << (node as usize % bits);
        // SAFETY: the mask has room for `maxnode` bits; the range is our mapping.
        let r = unsafe {
            libc::syscall(
                libc::SYS_mbind,
                self.ptr as libc::c_ulong,
                self.len as libc::c_ulong,
                MPOL_BIND as libc::c_ulong,
                mask.as_ptr(),
                (mask.len() * bits) as libc::c_ulong,
                MPOL_MF_STRICT as libc::c_ulong,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The buffer as f64 elements (whole elements only).
    #[allow(clippy::mut_from_ref)]
    pub fn f64s(&self) -> &mut [f64] {
        // SAFETY: page-aligned mapping of `len` bytes; callers split it into disjoint slices.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<f64>(), self.len / 8) }
    }

    /// The buffer as usize slots.
    #[allow(clippy::mut_from_ref)]
    pub fn words(&self) -> &mut [usize] {
        // SAFETY: as for f64s.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<usize>(), self.len / std::mem::size_of::<usize>()) }
    }

    /// Share of up to `samples` evenly spread pages that the kernel reports on `node`
    /// (call after first touch).
    pub fn share_on_node(&self, node: u32, samples: usize) -> io::Result<f64> {
        let page = crate::topology::page_size() as usize;
        let pages = self.len.div_ceil(page).max(1);
        let step = (pages / samples.max(1)).max(1);
        let addrs: Vec<u64> = (0..pages).step_by(step).map(|p| self.ptr as u64 + (p * page) as u64).collect();
        let status = query_page_nodes(0, &addrs)?;
        let on = status.iter().filter(|&&s| s == node as i32).count();
        Ok(on as f64 / status.len() as f64)
    }
}

impl Drop for NodeBuffer {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping we made.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// Pins the calling thread to one cpu.
pub fn pin_to_cpu(cpu: u32) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds-checks against its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu as usize >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("cpu {cpu} beyond the affinity mask")));
        }
        libc::CPU_SET(cpu as usize, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether transparent huge pages can be had with `madvise` (`always` or `madvise` mode).
pub fn thp_available(sys: &std::path::Path) -> bool {
    std::fs::read_to_string(sys.join("kernel/mm/transparent_hugepage/enabled"))
        .map(|s| s.contains("[always]") || s.contains("[madvise]"))
        .unwrap_or(false)
}

/// `MemAvailable` from /proc/meminfo, bytes.
pub fn mem_available(proc_root: &std::path::Path) -> Option<u64> {
    let text = std::fs::read_to_string(proc_root.join("meminfo")).ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|k| k * 1024)
}
