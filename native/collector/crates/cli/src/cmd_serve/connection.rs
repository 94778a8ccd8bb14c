//! Connections: the accept loop, one task per connection reading request heads within their
//! deadlines, and each request sent on as unauthenticated (a UI file or a refusal, capped) or
//! authenticated (the API, not evictable while it is served).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::auth::{host_ok, origin_ok, token_ok};
use super::http::{Body, Conn, Framing, Head, HeadError, Resp};
use super::limits::{
    HEAD_TIMEOUT, IDLE_TIMEOUT, LINGER, MAX_ACTIVE_REQUESTS, MAX_HEAD_BYTES, UNAUTH_MIN_BYTES_PER_S,
    UNAUTH_RESPONSE_TIMEOUT, UNAUTH_SNDBUF_BYTES, WRITE_STALL_TIMEOUT,
};
use super::recordings::{find, unknown_recording};
use super::request::{set_send_buffer, Next};
use super::respond::api_error;
use super::routes::route;
use super::state::{CountGuard, State};
use super::static_files::serve_static;
use super::websocket::live_socket;

pub(super) async fn accept_loop(listener: tokio::net::TcpListener, st: Arc<State>) {
    loop {
        match listener.accept().await {
            Ok((sock, _)) => {
                let _ = sock.set_nodelay(true);
                let (id, evict) = st.idle.register();
                let st = st.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = evict.notified() => {}
                        _ = connection(&st, sock, id, &evict) => {}
                    }
                    st.idle.forget(id);
                });
            }
            // Out of file descriptors, or a connection reset before it was accepted: back off a
            // little instead of spinning.
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

async fn connection(st: &Arc<State>, sock: tokio::net::TcpStream, id: u64, evict: &Arc<Notify>) {
    let mut conn = Conn::new(sock);
    let mut wait = HEAD_TIMEOUT;
    loop {
        let head = match tokio::time::timeout(wait, conn.read_head(MAX_HEAD_BYTES)).await {
            Ok(Ok(head)) => head,
            Err(_) | Ok(Err(HeadError::Closed)) => return,
            Ok(Err(HeadError::TooLarge)) => {
                let msg =
                    format!("the request head is larger than {} KiB or has too many headers", MAX_HEAD_BYTES / 1024);
                let _ = conn.send(api_error(431, "head-too-large", &msg), false, true, WRITE_STALL_TIMEOUT).await;
                conn.linger_close(LINGER).await;
                return;
            }
            Ok(Err(HeadError::Bad(msg))) => {
                let _ = conn.send(api_error(400, "bad-request", &msg), false, true, WRITE_STALL_TIMEOUT).await;
                conn.linger_close(LINGER).await;
                return;
            }
        };
        wait = IDLE_TIMEOUT;
        match request(st, &mut conn, head, id, evict).await {
            Next::KeepAlive => {}
            Next::Close => return,
            Next::Linger => return conn.linger_close(LINGER).await,
        }
    }
}

async fn request(st: &Arc<State>, conn: &mut Conn, head: Head, id: u64, evict: &Arc<Notify>) -> Next {
    let target = head.target.clone();
    let (path, query) = target.split_once('?').unwrap_or((target.as_str(), ""));
    let is_api = path == "/api" || path.starts_with("/api/");
    // DNS rebinding: a page of another site that resolves to 127.0.0.1 sends its own Host.
    let refusal = if head.header_count("host") > 1 {
        Some(api_error(400, "bad-request", "more than one Host header"))
    } else if let Some(host) = head.header("host").filter(|h| !host_ok(h, st.port)) {
        Some(api_error(
            403,
            "forbidden-host",
            &format!("Host {host:?} is not this server (127.0.0.1:{0} or localhost:{0})", st.port),
        ))
    } else if !is_api {
        None
    } else {
        token_ok(st, &head, query).err().map(|msg| {
            api_error(
                401,
                "unauthorized",
                &format!(
                    "{msg}: every /api/ request needs the token from the URL `numascope serve` printed, as ?token=TOKEN or Authorization: Bearer TOKEN"
                ),
            )
        })
    };
    if refusal.is_some() || !is_api {
        return unauthenticated(st, conn, &head, path, refusal).await;
    }
    // The token holder's request: this connection may not be evicted while it is served.
    if !st.idle.claim(id) {
        return Next::Close;
    }
    let next = authenticated(st, conn, &head, path).await;
    if !matches!(next, Next::Close) {
        st.idle.release(id, evict);
    }
    next
}

/// Answers a request that came without the token (a UI file, or a refusal): one of at most
/// `MAX_UNAUTH_RESPONSES` at once, else a small 503 before anything large is sent; the whole
/// answer within `UNAUTH_RESPONSE_TIMEOUT` plus a second per `UNAUTH_MIN_BYTES_PER_S`. Its
/// body, if any, is never read.
async fn unauthenticated(st: &Arc<State>, conn: &mut Conn, head: &Head, path: &str, refusal: Option<Resp>) -> Next {
    let head_only = head.method == "HEAD";
    let has_body = head.framing() != Ok(Framing::None);
    let Ok(_permit) = st.unauth.clone().try_acquire_owned() else {
        let r = api_error(503, "busy", "too many requests without the token in progress; try again")
            .with_header("Retry-After", "1");
        let _ = conn.send(r, head_only, true, WRITE_STALL_TIMEOUT).await;
        return if has_body { Next::Linger } else { Next::Close };
    };
    let resp = match refusal {
        Some(r) => r,
        None => serve_static(st, &head.method, path),
    };
    if matches!(resp.body, Body::File(..)) && !head_only {
        set_send_buffer(conn, UNAUTH_SNDBUF_BYTES);
    }
    let close = has_body || head.wants_close();
    let body_bytes = if head_only { 0 } else { resp.body.len() };
    let deadline = UNAUTH_RESPONSE_TIMEOUT + Duration::from_secs(body_bytes / UNAUTH_MIN_BYTES_PER_S);
    let sent = tokio::time::timeout(deadline, conn.send(resp, head_only, close, WRITE_STALL_TIMEOUT));
    match sent.await {
        Ok(Ok(())) if has_body => Next::Linger,
        Ok(Ok(())) if !close => Next::KeepAlive,
        _ => Next::Close,
    }
}

/// Serves a request that carries the token.
async fn authenticated(st: &Arc<State>, conn: &mut Conn, head: &Head, path: &str) -> Next {
    let head_only = head.method == "HEAD";
    let origin_refusal = if head.header_count("origin") > 1 {
        Some("more than one Origin header".to_string())
    } else {
        head.header("origin").filter(|o| !origin_ok(o, st.port)).map(|origin| {
            format!(
                "Origin {origin:?} is not this server: only pages from http://127.0.0.1:{0} or http://localhost:{0} may call the API",
                st.port
            )
        })
    };
    let segs: Vec<&str> = path.trim_start_matches("/api").split('/').filter(|s| !s.is_empty()).collect();
    let (resp, body_read) = if let Some(msg) = origin_refusal {
        (api_error(403, "forbidden-origin", &msg), false)
    } else if let (["recordings", id, "live"], "GET") = (segs.as_slice(), head.method.as_str()) {
        match find(st, id) {
            Some(rec) => return live_socket(st, conn, head, rec).await,
            None => (unknown_recording(id), false),
        }
    } else if st.active.fetch_add(1, Ordering::SeqCst) >= MAX_ACTIVE_REQUESTS {
        st.active.fetch_sub(1, Ordering::SeqCst);
        (api_error(503, "busy", "too many requests in progress; try again"), false)
    } else {
        let _active = CountGuard(&st.active);
        route(st, conn, head, path, &segs).await
    };
    let has_body = head.framing() != Ok(Framing::None);
    let unread = has_body && !body_read;
    let close = unread || head.wants_close();
    match conn.send(resp, head_only, close, WRITE_STALL_TIMEOUT).await {
        Ok(()) if unread => Next::Linger,
        Ok(()) if !close => Next::KeepAlive,
        _ => Next::Close,
    }
}
