//! Syscalls Apply needs that are not in `numa_sys`: `move_pages` with target nodes, and raw
//! per-thread cpu affinity (kept to `libc::syscall` so static guest builds need nothing else).

use std::io;

/// `MPOL_MF_MOVE` (move pages mapped only by this process); not exported by `libc`.
pub const MPOL_MF_MOVE: libc::c_int = 1 << 1;

/// Largest cpu id the affinity masks hold (kernel `CONFIG_NR_CPUS` is at most 8192).
const MASK_WORDS: usize = 8192 / 64;

// `move_pages` takes an array of pointers; on the 64-bit targets numascope supports a `u64`
// address has the size and representation of a pointer, so address slices are passed as they
// are, without a copy per call.
const _: () = assert!(std::mem::size_of::<*mut libc::c_void>() == std::mem::size_of::<u64>());

/// What a `status` entry holds when the kernel did not write it: after a call that returned a
/// positive count (some pages could not be migrated), the kernel stops and leaves the statuses
/// of the pages it had queued and of those after them unwritten.
pub const STATUS_UNSET: i32 = i32::MIN;

/// Moves `addrs[i]` of process `pid` to `nodes[i]`; fills `status` (node or negative errno per
/// page, [`STATUS_UNSET`] where the kernel wrote nothing). Returns the number of pages the
/// kernel reports as not migrated (>= 0) or the errno of a failed call. Allocates nothing.
pub fn move_pages(pid: i32, addrs: &[u64], nodes: &[i32], status: &mut [i32]) -> io::Result<i64> {
    assert!(addrs.len() == nodes.len() && nodes.len() == status.len());
    status.fill(STATUS_UNSET);
    // SAFETY: all three arrays have addrs.len() elements and live across the call; a u64 is a
    // pointer-sized address (checked above), which is what the kernel reads.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid as libc::c_long,
            addrs.len() as libc::c_ulong,
            addrs.as_ptr(),
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

/// Which node holds each of `addrs` in process `pid` (`move_pages` with `nodes = NULL`): fills
/// `status` with a node id or a negative errno per page. Allocates nothing.
pub fn query_nodes(pid: i32, addrs: &[u64], status: &mut [i32]) -> io::Result<()> {
    assert!(addrs.len() == status.len());
    status.fill(STATUS_UNSET);
    // SAFETY: addrs and status have the same length and live across the call; nodes = NULL
    // asks only where the pages are.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid as libc::c_long,
            addrs.len() as libc::c_ulong,
            addrs.as_ptr(),
            std::ptr::null::<libc::c_int>(),
            status.as_mut_ptr(),
            0 as libc::c_int,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
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
    fn query_and_move_own_pages() {
        let page = 4096usize;
        let mut buf = vec![1u8; page * 8];
        let base = (buf.as_mut_ptr() as usize).next_multiple_of(page) as u64;
        let addrs: Vec<u64> = (0..4).map(|i| base + i * page as u64).collect();
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() };
        let mut st = vec![0; 4];
        query_nodes(me, &addrs, &mut st).unwrap();
        assert!(st.iter().all(|&n| n >= 0), "{st:?}");
        // moving to the node they are on is a no-op that reports that node
        let nodes = st.clone();
        let mut moved = vec![0; 4];
        assert_eq!(move_pages(me, &addrs, &nodes, &mut moved).unwrap(), 0);
        assert_eq!(moved, st);
        // an unmapped address reports an error in its status, not a failed call
        query_nodes(me, &[0x1000], &mut st[..1]).unwrap();
        assert!(st[0] < 0 && st[0] != STATUS_UNSET, "{st:?}");
        drop(buf);
    }

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
