//! Thin wrappers over NUMA syscalls glibc does not wrap (`move_pages`).

use std::io;

/// Pages per `move_pages` call.
const BATCH: usize = 16_384;

/// Asks the kernel which node holds each page of process `pid` (`move_pages` with
/// `nodes = NULL`). Returns one status per address: a node id (>= 0) or a negative errno
/// (`-ENOENT`: not present/never touched, `-EFAULT`: not mapped, …).
///
/// Needs ptrace read access to the target (same user, or CAP_SYS_PTRACE/CAP_SYS_NICE).
pub fn query_page_nodes(pid: i32, addresses: &[u64]) -> io::Result<Vec<i32>> {
    let mut status = vec![0i32; addresses.len()];
    for (chunk, st) in addresses.chunks(BATCH).zip(status.chunks_mut(BATCH)) {
        let ptrs: Vec<*mut libc::c_void> = chunk.iter().map(|&a| a as usize as *mut libc::c_void).collect();
        // SAFETY: ptrs and st have chunk.len() elements; nodes = NULL means query only.
        let r = unsafe {
            libc::syscall(
                libc::SYS_move_pages,
                pid as libc::c_long,
                chunk.len() as libc::c_ulong,
                ptrs.as_ptr(),
                std::ptr::null::<libc::c_int>(),
                st.as_mut_ptr(),
                0 as libc::c_int,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(status)
}
