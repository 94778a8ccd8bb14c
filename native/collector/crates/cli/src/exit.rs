//! The `numascope` binary's exit statuses, each defined once. The
//! four the launcher (`numascope_core::apply::launch`) also returns are its definitions:
//! `EXIT_RUNTIME` 1 (the command could not do what it was asked; the message says why, an
//! import's or export's input or output error included), `EXIT_USAGE` 2 (bad arguments or
//! options; clap's own errors exit 2 too), `EXIT_CANNOT_EXECUTE` 126 and `EXIT_NOT_FOUND` 127 (as
//! env(1): a launched command, or Node for `analyze`, cannot be executed or is not found).

pub use numascope_core::apply::launch::{EXIT_CANNOT_EXECUTE, EXIT_NOT_FOUND, EXIT_RUNTIME, EXIT_USAGE};

/// `apply`: the plan was applied in part (the report says what moved and what did not).
pub const EXIT_PARTIAL: u8 = 3;
/// A bug (a caught panic): sysexits' EX_SOFTWARE.
pub const EXIT_INTERNAL: u8 = 70;
/// `run`: numascope run's own failure (a bad plan or arguments, a refusal, cannot set up), as
/// env(1), timeout(1) and docker run use it: 126 and 127 are the command's (cannot execute, not
/// found), everything else is the program's own exit status.
pub const EXIT_RUN_FAILED: u8 = 125;
