//! What every handler of a request uses: what becomes of the connection after it, reading its
//! body, the bounded pool for blocking work, and the socket's send buffer.

use super::http::{BodyError, Conn, Framing, Head, Resp};
use super::limits::{BODY_TIMEOUT, WRITE_STALL_TIMEOUT};
use super::respond::api_error;

/// What becomes of a connection after a request.
pub(super) enum Next {
    /// Ready for the next request.
    KeepAlive,
    Close,
    /// Close, after letting the client finish sending a body that was not read.
    Linger,
}

pub(super) fn set_send_buffer(conn: &Conn, bytes: libc::c_int) {
    use std::os::fd::AsRawFd;
    let fd = conn.wr.as_ref().as_raw_fd();
    // SAFETY: setsockopt on our own open socket with a pointer to a c_int and its size.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            &bytes as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Reads a request body of at most `limit` bytes within `BODY_TIMEOUT`; `Err` is the answer.
pub(super) async fn read_request_body(conn: &mut Conn, head: &Head, limit: u64) -> Result<Vec<u8>, Resp> {
    let too_large = || {
        let size = if limit >= 1024 * 1024 { format!("{} MiB", limit >> 20) } else { format!("{} KiB", limit >> 10) };
        api_error(413, "body-too-large", &format!("the request body is larger than {size}"))
    };
    let framing =
        head.framing().map_err(|e| api_error(400, "bad-request", &format!("the request body cannot be read: {e}")))?;
    match framing {
        Framing::None => return Ok(Vec::new()),
        Framing::Length(n) if n > limit => return Err(too_large()),
        _ => {}
    }
    if head.header("expect").is_some_and(|e| e.eq_ignore_ascii_case("100-continue")) {
        let _ = conn.write_timed(b"HTTP/1.1 100 Continue\r\n\r\n", WRITE_STALL_TIMEOUT).await;
    }
    match tokio::time::timeout(BODY_TIMEOUT, conn.read_body(framing, limit)).await {
        Ok(Ok(body)) => Ok(body),
        Ok(Err(BodyError::TooLarge)) => Err(too_large()),
        Ok(Err(BodyError::Bad(m))) => {
            Err(api_error(400, "bad-request", &format!("could not read the request body: {m}")))
        }
        Ok(Err(BodyError::Io(e))) => {
            Err(api_error(400, "bad-request", &format!("could not read the request body: {e}")))
        }
        Err(_) => Err(api_error(
            408,
            "body-timeout",
            &format!("the request body did not arrive within {} s", BODY_TIMEOUT.as_secs()),
        )),
    }
}

/// Runs blocking work (files, /proc, perf, apply) on the bounded blocking pool.
pub(super) async fn blocking(f: impl FnOnce() -> Resp + Send + 'static) -> Resp {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|_| api_error(500, "internal", "the request handler failed (see the server's log)"))
}
