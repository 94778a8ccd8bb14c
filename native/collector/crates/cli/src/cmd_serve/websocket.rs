//! `GET /api/recordings/:id/live`: the WebSocket upgrade, and the stream of a recording's live
//! windows to one client (a slow one skips ahead or is dropped), then how the recording ended.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::http::{self, Conn, Framing, Head};
use super::limits::{
    LIVE_SNDBUF_BYTES, MAX_LIVE_SOCKETS, WRITE_STALL_TIMEOUT, WS_MAX_BACKLOG, WS_MAX_CLIENT_FRAME,
    WS_MAX_CLIENT_MESSAGE,
};
use super::request::{set_send_buffer, Next};
use super::respond::api_error;
use super::state::{CountGuard, RecInner, Recording, State, Status};

/// `GET /api/recordings/:id/live`: upgrades to a WebSocket and streams the recording's windows.
pub(super) async fn live_socket(st: &Arc<State>, conn: &mut Conn, head: &Head, rec: Arc<Recording>) -> Next {
    let upgrade = head.header("upgrade").is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
    let key = head.header("sec-websocket-key");
    let refusal = match (upgrade, key) {
        (true, Some(_)) if st.live_sockets.fetch_add(1, Ordering::SeqCst) >= MAX_LIVE_SOCKETS => {
            st.live_sockets.fetch_sub(1, Ordering::SeqCst);
            Some(
                api_error(503, "busy", &format!("{MAX_LIVE_SOCKETS} live clients are connected (at most); try again"))
                    .with_header("Retry-After", "1"),
            )
        }
        (true, Some(_)) => None,
        _ => Some(api_error(
            400,
            "websocket-required",
            "this endpoint is a WebSocket: connect with ws://…/live?token=TOKEN (Upgrade: websocket)",
        )),
    };
    if let Some(r) = refusal {
        let unread = head.framing() != Ok(Framing::None);
        let close = unread || head.wants_close();
        return match conn.send(r, false, close, WRITE_STALL_TIMEOUT).await {
            Ok(()) if unread => Next::Linger,
            Ok(()) if !close => Next::KeepAlive,
            _ => Next::Close,
        };
    }
    let _live = CountGuard(&st.live_sockets);
    let accept = tungstenite::handshake::derive_accept_key(key.unwrap_or("").trim().as_bytes());
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let switching = format!(
        "HTTP/1.1 101 Switching Protocols\r\nDate: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n",
        http::http_date(now)
    );
    set_send_buffer(conn, LIVE_SNDBUF_BYTES);
    if conn.write_timed(switching.as_bytes(), WRITE_STALL_TIMEOUT).await.is_ok() {
        stream_windows(conn, &rec).await;
    }
    Next::Close
}

/// Which kept windows a client gets next: it has had every window before `next_seq`, and the
/// ring holds `len` windows from `first_seq`. Answers the index of the first window to send and
/// the client's new `next_seq`. The first round replays every kept window (history for a late
/// subscriber); after that a client more than `WS_MAX_BACKLOG` windows behind gets only the
/// latest one (the windows' totals are cumulative, so the latest says where things stand).
fn windows_to_send(first_seq: u64, len: usize, next_seq: u64, first_round: bool) -> (usize, u64) {
    let from = (next_seq.max(first_seq) - first_seq) as usize;
    let from = from.min(len);
    let from = if !first_round && len - from > WS_MAX_BACKLOG { len - 1 } else { from };
    (from, first_seq + len as u64)
}

/// A live window as the WebSocket's `window` message of recording `id`.
pub(super) fn window_message(id: &str, w: &numascope_core::live::LiveWindow) -> Value {
    let mut v = serde_json::to_value(w).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.insert("type".into(), json!("window"));
        m.insert("recording".into(), json!(id));
    }
    v
}

/// The WebSocket's last message: how the recording ended.
pub(super) fn end_message(id: &str, inner: &RecInner) -> Value {
    json!({
        "type": "end",
        "recording": id,
        "status": inner.status.as_str(),
        "summary": inner.summary,
        "error": inner.error.as_ref().map(|(c, m)| json!({ "code": c, "message": m })),
    })
}

/// Streams the windows, then the end message and a Close frame. Every message must be written
/// within `WRITE_STALL_TIMEOUT`, else the client is dropped; it never holds up the recording or
/// the other clients (they all read the recording's shared ring of windows). The WebSocket
/// protocol after the handshake is tokio-tungstenite's (frames, masking, fragmented messages,
/// UTF-8 of text, pings and the Close reply), with the frame and message limits of
/// [`live_config`]; a client that breaks the protocol gets a Close with the matching code.
async fn stream_windows(conn: &mut Conn, rec: &Recording) {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let read_ahead = std::mem::take(&mut conn.buf);
    let io = http::Halves { rd: &mut conn.rd, wr: &mut conn.wr };
    let mut ws = tokio_tungstenite::WebSocketStream::from_partially_read(
        io,
        read_ahead,
        tokio_tungstenite::tungstenite::protocol::Role::Server,
        Some(live_config()),
    )
    .await;
    let mut wake = rec.wake.subscribe();
    let mut next_seq: u64 = 0;
    let mut first_round = true;
    loop {
        wake.mark_unchanged();
        let (msgs, done) = {
            let inner = rec.inner.lock().unwrap();
            let (from, next) = windows_to_send(inner.first_seq, inner.windows.len(), next_seq, first_round);
            next_seq = next;
            let msgs: Vec<Arc<String>> = inner.windows.iter().skip(from).cloned().collect();
            let done = (inner.status != Status::Running).then(|| end_message(&rec.id, &inner).to_string());
            (msgs, done)
        };
        first_round = false;
        for m in msgs.iter().map(|m| m.as_str().to_owned()).chain(done.clone()) {
            match tokio::time::timeout(WRITE_STALL_TIMEOUT, ws.send(Message::text(m))).await {
                Ok(Ok(())) => {}
                _ => return,
            }
        }
        if done.is_some() {
            // The Close, then a moment for the client's answer.
            let _ = tokio::time::timeout(WRITE_STALL_TIMEOUT, ws.send(Message::Close(None))).await;
            let _ = tokio::time::timeout(Duration::from_secs(1), async { while let Some(Ok(_)) = ws.next().await {} })
                .await;
            return;
        }
        tokio::select! {
            changed = wake.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            got = ws.next() => {
                // Pings are answered and a Close is echoed by the library (on the next write or
                // flush: flushed here); data messages are not expected and are dropped.
                let close = match got {
                    None => return,
                    Some(Ok(Message::Close(_))) => {
                        let _ = tokio::time::timeout(WRITE_STALL_TIMEOUT, ws.flush()).await;
                        return;
                    }
                    Some(Ok(_)) => None,
                    Some(Err(e)) => refusal_close(&e),
                };
                match close {
                    None => {
                        if !matches!(tokio::time::timeout(WRITE_STALL_TIMEOUT, ws.flush()).await, Ok(Ok(()))) {
                            return;
                        }
                    }
                    Some(frame) => {
                        let _ = tokio::time::timeout(WRITE_STALL_TIMEOUT, ws.close(Some(frame))).await;
                        return;
                    }
                }
            }
        }
    }
}

/// The live WebSocket's limits: clients send only control frames and small messages.
fn live_config() -> tokio_tungstenite::tungstenite::protocol::WebSocketConfig {
    tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_frame_size(Some(WS_MAX_CLIENT_FRAME))
        .max_message_size(Some(WS_MAX_CLIENT_MESSAGE))
}

/// The Close frame for a client that broke the protocol (RFC 6455 §7.4.1): 1007 for a text
/// message that is not UTF-8, 1009 for a frame or message over the limits, 1002 otherwise;
/// `None` when the connection is gone (nothing to send).
fn refusal_close(
    e: &tokio_tungstenite::tungstenite::Error,
) -> Option<tokio_tungstenite::tungstenite::protocol::CloseFrame> {
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
    use tokio_tungstenite::tungstenite::Error as E;
    let (code, reason) = match e {
        E::Utf8(_) => (CloseCode::Invalid, "text message is not UTF-8"),
        E::Capacity(_) => (CloseCode::Size, "frame or message too large"),
        E::Protocol(_) => (CloseCode::Protocol, "WebSocket protocol violation"),
        _ => return None,
    };
    Some(tokio_tungstenite::tungstenite::protocol::CloseFrame { code, reason: reason.into() })
}

// ---- processes --------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_clients_skip_to_the_latest_window() {
        // First round: the whole kept history, whatever its length.
        assert_eq!(windows_to_send(0, 240, 0, true), (0, 240));
        assert_eq!(windows_to_send(100, 240, 0, true), (0, 340));
        // Later rounds: what is new, while within the backlog.
        assert_eq!(windows_to_send(0, 10, 9, false), (9, 10));
        assert_eq!(windows_to_send(0, 10, 10, false), (10, 10));
        assert_eq!(windows_to_send(0, 30, 30 - WS_MAX_BACKLOG as u64, false), (30 - WS_MAX_BACKLOG, 30));
        // Further behind: the latest window only.
        assert_eq!(windows_to_send(0, 30, 30 - WS_MAX_BACKLOG as u64 - 1, false), (29, 30));
        assert_eq!(windows_to_send(500, 240, 3, false), (239, 740));
    }
}
