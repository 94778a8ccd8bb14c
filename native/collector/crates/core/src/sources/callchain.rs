//! User call chains of samples (`PERF_SAMPLE_CALLCHAIN` with `exclude_callchain_kernel`) and the
//! executable mappings that place their addresses in modules (`PERF_RECORD_MMAP2` with
//! `mmap` set, code mappings only).
//!
//! The kernel's user call chain is `PERF_CONTEXT_USER` followed by the interrupted user
//! instruction (`regs->ip`) and one return address per frame its frame-pointer walk found
//! (`perf_callchain_user`, arch/x86/events/core.c). Code built without frame pointers stops the
//! walk early or yields a wrong caller; the recorder says so per stack after symbolization.
//!
//! Chains are interned as they are read ([`CallStacks`]): a sample keeps a 32-bit id, and memory
//! grows with distinct stacks, not with samples. Both bounds are fixed; a chain past them is
//! counted and gets no stack.

use std::collections::HashMap;

/// Context markers (`PERF_CONTEXT_HV` … `PERF_CONTEXT_USER`, include/uapi/linux/perf_event.h)
/// are the values at or above `PERF_CONTEXT_MAX` = (u64)-4095.
pub const PERF_CONTEXT_MAX: u64 = (-4095i64) as u64;

/// A sample without a stack.
pub const NO_STACK: u32 = u32::MAX;

/// Most distinct stacks kept.
pub const MAX_STACKS: usize = 1_000_000;
/// Most addresses kept over all distinct stacks.
pub const MAX_STACK_ADDRESSES: usize = 4_000_000;
/// Most entries the kernel may put in one chain (a record claiming more is malformed).
pub const MAX_CHAIN_ENTRIES: u64 = 1024;

/// Distinct user call chains, innermost first: the sampled instruction, then return addresses;
/// each with the word at the user stack pointer ([`CallStacks::intern`]'s `leaf`), 0 when none.
#[derive(Debug, Default)]
pub struct CallStacks {
    index: HashMap<Box<[u64]>, u32>,
    chains: Vec<Box<[u64]>>,
    addresses: usize,
    /// Samples whose chain did not fit the bounds.
    pub dropped: u64,
    /// Samples whose chain held no user address (a fault taken in kernel code, or an empty walk).
    pub empty: u64,
    /// Chains that reached the requested depth (deeper frames were not asked for).
    pub at_depth_limit: u64,
}

impl CallStacks {
    /// The id of `ips` (user addresses, innermost first) with `leaf`, adding it if new;
    /// [`NO_STACK`] for an empty chain or past the bounds.
    ///
    /// `leaf` is the word at the user stack pointer when the sample was taken (0: not known). The
    /// kernel's frame-pointer walk starts at the frame-pointer register, so when the sampled
    /// instruction is in a function that keeps no frame of its own (a leaf such as glibc's
    /// hand-written memset), the walk skips that function's caller; the caller's return address
    /// is then the word at the stack pointer. [`crate::recorder`] checks it against the code
    /// (it must follow a call instruction) before it uses it.
    pub fn intern(&mut self, ips: &[u64], leaf: u64) -> u32 {
        if ips.is_empty() {
            self.empty += 1;
            return NO_STACK;
        }
        let mut key = Vec::with_capacity(ips.len() + 1);
        key.extend_from_slice(ips);
        key.push(leaf);
        if let Some(&id) = self.index.get(&key[..]) {
            return id;
        }
        if self.chains.len() >= MAX_STACKS || self.addresses + key.len() > MAX_STACK_ADDRESSES {
            self.dropped += 1;
            return NO_STACK;
        }
        let id = self.chains.len() as u32;
        let chain: Box<[u64]> = key.into();
        self.addresses += chain.len();
        self.index.insert(chain.clone(), id);
        self.chains.push(chain);
        id
    }

    /// Chain `id`, innermost first, and its word at the stack pointer (0 none).
    pub fn get(&self, id: u32) -> Option<(&[u64], u64)> {
        self.chains.get(id as usize).map(|c| (&c[..c.len() - 1], c[c.len() - 1]))
    }

    pub fn len(&self) -> usize {
        self.chains.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chains.is_empty()
    }
}

/// The user addresses of a raw chain (`entries`: the `nr` u64 values after `u64 nr`), into
/// `out`: what follows `PERF_CONTEXT_USER`, context markers and zero entries removed.
pub fn user_addresses(entries: &[u8], out: &mut Vec<u64>) {
    out.clear();
    let mut user = true;
    for w in entries.chunks_exact(8) {
        let v = u64::from_ne_bytes(w.try_into().expect("8 bytes"));
        if v >= PERF_CONTEXT_MAX {
            // PERF_CONTEXT_USER = -512; the kernel's markers are -32 (kernel), -128 (guest)…
            user = v == (-512i64) as u64;
            continue;
        }
        if user && v != 0 {
            out.push(v);
        }
    }
}

/// One executable mapping of the process (a `PERF_RECORD_MMAP2` record or a `/proc/PID/maps`
/// line with `x`): where a module's file bytes were mapped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeMapping {
    pub pid: u32,
    pub start: u64,
    pub end: u64,
    /// File offset mapped at `start`.
    pub pgoff: u64,
    pub path: String,
    /// CLOCK_MONOTONIC ns when it was seen (0: before the recording, from /proc).
    pub time_ns: u64,
}

/// Decodes a `PERF_RECORD_MMAP2` record (header included): `u32 pid, tid; u64 addr, len, pgoff;
/// u32 maj, min; u64 ino, ino_generation; u32 prot, flags; char filename[]`, then the 24-byte
/// sample_id (TID, TIME, CPU) whose time is the record's. None when it is malformed or not an
/// executable file mapping.
pub fn decode_mmap2(bytes: &[u8], sample_id_len: usize) -> Option<CodeMapping> {
    const H: usize = 8;
    let size = u16::from_ne_bytes(bytes.get(6..8)?.try_into().ok()?) as usize;
    let rec = bytes.get(..size)?;
    let u32_at = |o: usize| rec.get(o..o + 4).map(|b| u32::from_ne_bytes(b.try_into().unwrap()));
    let u64_at = |o: usize| rec.get(o..o + 8).map(|b| u64::from_ne_bytes(b.try_into().unwrap()));
    let pid = u32_at(H)?;
    let start = u64_at(H + 8)?;
    let len = u64_at(H + 16)?;
    let pgoff = u64_at(H + 24)?;
    let prot = u32_at(H + 56)?;
    let id = size.checked_sub(sample_id_len)?;
    let name = rec.get(H + 64..id)?;
    let name = &name[..name.iter().position(|&b| b == 0)?];
    let time_ns = u64_at(id + 8)?;
    if prot & libc::PROT_EXEC as u32 == 0 || name.first() != Some(&b'/') || len == 0 {
        return None;
    }
    Some(CodeMapping {
        pid,
        start,
        end: start.checked_add(len)?,
        pgoff,
        path: String::from_utf8_lossy(name).into_owned(),
        time_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_dedups_and_bounds() {
        let mut s = CallStacks::default();
        let a = s.intern(&[1, 2, 3], 0);
        let b = s.intern(&[1, 2], 0);
        assert_eq!(s.intern(&[1, 2, 3], 0), a);
        assert_ne!(a, b);
        assert_ne!(s.intern(&[1, 2, 3], 9), a, "another leaf word is another stack");
        assert_eq!(s.get(a), Some((&[1u64, 2, 3][..], 0)));
        assert_eq!(s.intern(&[], 0), NO_STACK);
        assert_eq!(s.empty, 1);
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn user_addresses_drop_markers_and_kernel_entries() {
        let words: Vec<u64> = vec![(-128i64) as u64, 0xffff_ffff_8100_0000, (-512i64) as u64, 0x401000, 0x401234, 0];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let mut out = Vec::new();
        user_addresses(&bytes, &mut out);
        assert_eq!(out, vec![0x401000, 0x401234]);
    }

    fn mmap2(prot: u32, name: &[u8], time: u64) -> Vec<u8> {
        let mut body = Vec::new();
        for v in [7u32, 7] {
            body.extend_from_slice(&v.to_ne_bytes());
        }
        for v in [0x5555_0000_0000u64, 0x2000, 0x1000] {
            body.extend_from_slice(&v.to_ne_bytes());
        }
        body.extend_from_slice(&[0u8; 24]); // maj, min, ino, ino_generation
        body.extend_from_slice(&prot.to_ne_bytes());
        body.extend_from_slice(&2u32.to_ne_bytes());
        body.extend_from_slice(name);
        body.push(0);
        while body.len() % 8 != 0 {
            body.push(0);
        }
        let mut id = Vec::new();
        id.extend_from_slice(&[7u32, 7].map(u32::to_ne_bytes).concat());
        id.extend_from_slice(&time.to_ne_bytes());
        id.extend_from_slice(&[0u8; 8]);
        let mut v = Vec::new();
        v.extend_from_slice(&10u32.to_ne_bytes());
        v.extend_from_slice(&0u16.to_ne_bytes());
        v.extend_from_slice(&((8 + body.len() + id.len()) as u16).to_ne_bytes());
        v.extend_from_slice(&body);
        v.extend_from_slice(&id);
        v
    }

    #[test]
    fn mmap2_decodes_exec_file_mappings_only() {
        let r = mmap2(libc::PROT_READ as u32 | libc::PROT_EXEC as u32, b"/usr/bin/prog", 99);
        let m = decode_mmap2(&r, 24).unwrap();
        assert_eq!(
            (m.pid, m.start, m.end, m.pgoff, m.path.as_str(), m.time_ns),
            (7, 0x5555_0000_0000, 0x5555_0000_2000, 0x1000, "/usr/bin/prog", 99)
        );
        assert!(decode_mmap2(&mmap2(libc::PROT_READ as u32, b"/usr/bin/prog", 1), 24).is_none());
        assert!(decode_mmap2(&mmap2(libc::PROT_EXEC as u32, b"[vdso]", 1), 24).is_none());
        // Cut anywhere: never a panic, never a mapping with a cut name.
        for cut in 0..r.len() {
            let mut c = r[..cut].to_vec();
            if c.len() >= 8 {
                c[6..8].copy_from_slice(&(cut as u16).to_ne_bytes());
            }
            let _ = decode_mmap2(&c, 24);
        }
    }
}
