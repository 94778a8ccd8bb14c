//! Random ids (the token, recording and run ids) and wall-clock timestamps.

use std::io::Read;
use std::time::{SystemTime, UNIX_EPOCH};

pub(super) fn random_hex(bytes: usize) -> std::io::Result<String> {
    let mut buf = vec![0u8; bytes];
    let mut got = 0;
    while got < bytes {
        // SAFETY: writing into our own buffer, within its length.
        let n = unsafe { libc::getrandom(buf[got..].as_mut_ptr() as *mut libc::c_void, bytes - got, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            // Kernels without getrandom(2): fall back to /dev/urandom.
            std::fs::File::open("/dev/urandom")?.read_exact(&mut buf[got..])?;
            break;
        }
        got += n as usize;
    }
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

pub(super) fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_length() {
        assert_eq!(random_hex(32).unwrap().len(), 64);
    }
}
