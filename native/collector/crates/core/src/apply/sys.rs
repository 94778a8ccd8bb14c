//! Syscalls Apply needs that are not in `numa_sys`: `move_pages` with target nodes, and raw
//! per-thread cpu affinity (kept to `libc::syscall` so static guest builds need nothing else).

use std::io;

/// `MPOL_MF_MOVE` (move pages mapped only by this process); not exported by `libc`.
pub const MPOL_MF_MOVE: libc::c_int = 1 << 1;

/// Largest cpu id the affinity masks hold (kernel `CONFIG_NR_CPUS` is at most 8192).
const MASK_WORDS: usize = 8192 / 64;

/// Moves `addrs[i]` of process `pid` to `nodes[i]`; fills `status` (node or negative errno per
/// page). Returns the number of pages the kernel reports as not migrated (>= 0) or the errno
/// of a failed call.
pub fn move_pages(pid: i32, addrs: &[u64], nodes: &[i32], status: &mut [i32]) -> io::Result<i64> {
    assert!(addrs.len() == nodes.len() && nodes.len() == status.len());
    let ptrs: Vec<*mut libc::c_void> = addrs.iter().map(|&a| a as usize as *mut libc::c_void).collect();
    // SAFETY: all three arrays have addrs.len() elements and live across the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid as libc::c_long,
            addrs.len() as libc::c_ulong,
            ptrs.as_ptr(),
            nodes.as_ptr(),
            status.as_mut_ptr(),
            MPOL_MF_MOVE,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as i64)
    }
}

/// Cpus thread `tid` may run on.
pub fn get_affinity(tid: i32) -> io::Result<Vec<u32>> {
    let mut mask = vec![0u64; MASK_WORDS];
    // SAFETY: mask is MASK_WORDS*8 bytes.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getaffinity,
            tid as libc::c_long,
            (MASK_WORDS * 8) as libc::c_ulong,
            mask.as_mut_ptr(),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut cpus = Vec::new();
    for (w, &bits) in mask.iter().enumerate() {
        for b in 0..64 {
            if bits & (1u64 << b) != 0 {
                cpus.push((w * 64 + b) as u32);
            }
        }
    }
    Ok(cpus)
}

/// Restricts thread `tid` to `cpus`.
pub fn set_affinity(tid: i32, cpus: &[u32]) -> io::Result<()> {
    let mut mask = vec![0u64; MASK_WORDS];
    for &c in cpus {
        let c = c as usize;
        if c >= MASK_WORDS * 64 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("cpu {c} is beyond the affinity mask")));
        }
        mask[c / 64] |= 1u64 << (c % 64);
    }
    // SAFETY: mask is MASK_WORDS*8 bytes.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_setaffinity,
            tid as libc::c_long,
            (MASK_WORDS * 8) as libc::c_ulong,
            mask.as_ptr(),
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Short name of an errno value (`EBUSY`), or its number.
pub fn errno_name(e: i32) -> String {
    match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::E2BIG => "E2BIG",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::EAGAIN => "EAGAIN",
        libc::EIO => "EIO",
        libc::ENOSPC => "ENOSPC",
        libc::EHOSTUNREACH => "EHOSTUNREACH",
        _ => return format!("errno{e}"),
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affinity_round_trip_on_self() {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
        let before = get_affinity(tid).unwrap();
        assert!(!before.is_empty());
        set_affinity(tid, &before[..1]).unwrap();
        assert_eq!(get_affinity(tid).unwrap(), before[..1].to_vec());
        set_affinity(tid, &before).unwrap();
        assert_eq!(get_affinity(tid).unwrap(), before);
    }
}
