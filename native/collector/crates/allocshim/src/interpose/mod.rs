//! The shim's entry points: every exported (`#[no_mangle]`) function that a program calls in
//! place of the C library's. Each one decides as early as it can whether the call concerns the
//! shim at all, then calls the real function (real.rs); what happens around that call is in
//! record.rs and sampler.rs, and the shim's state in state.rs.

pub(crate) mod alloc;
mod mmap;
mod process;
mod threads;
