//! The server's limits and deadlines in one place (docs/live-api.md, "Connections and limits"):
//! request sizes, how many of each kind of work at once, and how long each step may take.

use std::time::Duration;

pub(super) const MAX_BODY: u64 = 64 * 1024;
/// Plans and rollback records can list many page ranges.
pub(super) const MAX_PLAN_BODY: u64 = 16 * 1024 * 1024;
/// Authenticated requests served at once (WebSockets not counted); 503 `busy` beyond.
pub(super) const MAX_ACTIVE_REQUESTS: usize = 64;
pub(super) const MAX_RUNNING_RECORDINGS: usize = 4;
/// Live windows kept per recording for late WebSocket subscribers (one minute at 4 Hz).
pub(super) const KEEP_WINDOWS: usize = 240;

/// Connections not serving an authenticated request (waiting for a request, reading one, or
/// answering one without the token). At the cap the oldest of them is closed to make room, so
/// that a flood of idle or slow connections cannot keep the token holder out.
pub(super) const MAX_IDLE_CONNECTIONS: usize = 256;
/// Unauthenticated responses (UI files, 401/403s) being written at once; 503 `busy` beyond.
pub(super) const MAX_UNAUTH_RESPONSES: usize = 32;
/// Open WebSocket clients; 503 `busy` beyond.
pub(super) const MAX_LIVE_SOCKETS: usize = 128;
/// A request head (request line and headers).
pub(super) const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The first request head on a connection must arrive within this.
pub(super) const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// An idle keep-alive connection is closed when no complete request head arrives within this.
pub(super) const IDLE_TIMEOUT: Duration = Duration::from_secs(15);
/// A request body must arrive within this.
pub(super) const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Every write (a response, a WebSocket frame) must make progress within this.
pub(super) const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(10);
/// A whole unauthenticated response must be written within this, plus a second per
/// `UNAUTH_MIN_BYTES_PER_S` of its body (a UI bundle of 8 MiB: 158 s, enough for a 512 kbit/s
/// forwarded port; a client that trickles cannot hold its slot longer).
pub(super) const UNAUTH_RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);
pub(super) const UNAUTH_MIN_BYTES_PER_S: u64 = 64 * 1024;
/// After an answer to a request whose body was not read, what the client still sends is read
/// and dropped for at most this long before the connection closes.
pub(super) const LINGER: Duration = Duration::from_secs(2);
/// Kernel send buffer for unauthenticated responses with a file body: what a client that never
/// reads can hold of this server's memory per connection.
pub(super) const UNAUTH_SNDBUF_BYTES: libc::c_int = 256 * 1024;
/// Kernel send buffer of a WebSocket connection: with the write deadline, what a client that
/// never reads can hold (windows are a few KiB, a few per second).
pub(super) const LIVE_SNDBUF_BYTES: libc::c_int = 64 * 1024;
/// A WebSocket client more than this many windows behind skips to the latest window.
pub(super) const WS_MAX_BACKLOG: usize = 16;
/// Largest frame a WebSocket client may send (the server expects none but control frames).
pub(super) const WS_MAX_CLIENT_FRAME: usize = 64 * 1024;
/// Largest message (all its fragments) a WebSocket client may send.
pub(super) const WS_MAX_CLIENT_MESSAGE: usize = 64 * 1024;
/// Threads for blocking work (probe, /proc, apply, starting recordings).
pub(super) const MAX_BLOCKING_THREADS: usize = 16;
