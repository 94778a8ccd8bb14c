//! HTTP/1.1 and WebSocket plumbing for `numascope serve`: request heads and bodies read, and
//! responses and frames written, each within a limit and under a deadline the caller sets
//! (docs/live-api.md, "Connections and limits"). Nothing here knows the routes or the token.

use std::io::{self, Read};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

/// Most headers in one request head.
const MAX_HEADERS: usize = 64;
/// One chunk-size or trailer line of a chunked body.
const MAX_CHUNK_LINE: usize = 1024;
/// Bytes read from the socket or a file at a time.
const IO_CHUNK: usize = 64 * 1024;

/// A parsed request head.
#[derive(Debug)]
pub struct Head {
    pub method: String,
    /// The request target exactly as sent (path and query, not normalised).
    pub target: String,
    pub http10: bool,
    pub headers: Vec<(String, String)>,
}

/// How the request body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    None,
    Length(u64),
    Chunked,
}

impl Head {
    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn header_count(&self, name: &str) -> usize {
        self.headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name)).count()
    }

    fn connection_has(&self, token: &str) -> bool {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("connection"))
            .flat_map(|(_, v)| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }

    /// The client asked to close after this exchange (`Connection: close`, or HTTP/1.0 without
    /// `Connection: keep-alive`).
    pub fn wants_close(&self) -> bool {
        self.connection_has("close") || (self.http10 && !self.connection_has("keep-alive"))
    }

    /// The body framing (RFC 9112 §6): `Transfer-Encoding: chunked`, else `Content-Length`, else
    /// none. Both at once, several differing lengths, or another transfer coding are refused
    /// (the usual request-smuggling shapes).
    pub fn framing(&self) -> Result<Framing, &'static str> {
        let te: Vec<&str> = self
            .headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("transfer-encoding"))
            .flat_map(|(_, v)| v.split(','))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .collect();
        let lengths: Vec<&str> = self
            .headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .flat_map(|(_, v)| v.split(','))
            .map(str::trim)
            .collect();
        if !te.is_empty() {
            if !lengths.is_empty() {
                return Err("both Transfer-Encoding and Content-Length");
            }
            if te.len() == 1 && te[0].eq_ignore_ascii_case("chunked") {
                return Ok(Framing::Chunked);
            }
            return Err("unsupported Transfer-Encoding (only chunked)");
        }
        let Some(first) = lengths.first() else { return Ok(Framing::None) };
        if lengths.iter().any(|l| l != first) {
            return Err("differing Content-Length values");
        }
        if first.is_empty() || !first.bytes().all(|b| b.is_ascii_digit()) {
            return Err("Content-Length is not a number");
        }
        match first.parse::<u64>() {
            Ok(0) => Ok(Framing::None),
            Ok(n) => Ok(Framing::Length(n)),
            Err(_) => Err("Content-Length is too large"),
        }
    }
}

#[derive(Debug)]
pub enum HeadError {
    /// The connection closed (or failed) before a request began: nothing to answer.
    Closed,
    /// The head is larger than the limit, or has too many headers (431).
    TooLarge,
    /// Not HTTP/1.x (400).
    Bad(String),
}

#[derive(Debug)]
pub enum BodyError {
    TooLarge,
    Bad(&'static str),
    Io(io::Error),
}

/// A response: status, extra headers, and a body of bytes or an open file (streamed).
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Body,
}

pub enum Body {
    Bytes(Vec<u8>),
    /// An open file and the length announced (read at open).
    File(std::fs::File, u64),
}

impl Body {
    pub fn len(&self) -> u64 {
        match self {
            Body::Bytes(b) => b.len() as u64,
            Body::File(_, n) => *n,
        }
    }
}

impl Resp {
    pub fn new(status: u16, body: Body) -> Resp {
        Resp { status, headers: Vec::new(), body }
    }

    pub fn with_header(mut self, name: &'static str, value: &str) -> Resp {
        self.headers.push((name, value.to_string()));
        self
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) for the `Date` header.
pub fn http_date(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let secs = unix_s % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    format!(
        "{}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize],
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// One connection: the two halves of the socket and the bytes read but not yet consumed (the
/// start of a body, or of the next pipelined request).
pub struct Conn {
    pub rd: OwnedReadHalf,
    pub wr: OwnedWriteHalf,
    pub buf: Vec<u8>,
}

impl Conn {
    pub fn new(sock: TcpStream) -> Conn {
        let (rd, wr) = sock.into_split();
        Conn { rd, wr, buf: Vec::new() }
    }

    /// Reads more bytes into `buf`; 0 at end of stream. `buf` grows by what arrived only (an
    /// idle or slow connection holds no more than it was sent).
    async fn fill(&mut self) -> io::Result<usize> {
        let mut chunk = [0u8; 8 * 1024];
        let n = self.rd.read(&mut chunk).await?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// Reads one request head of at most `limit` bytes. Leading empty lines are skipped (RFC
    /// 9112 §2.2). No deadline here: the caller wraps this in one.
    pub async fn read_head(&mut self, limit: usize) -> Result<Head, HeadError> {
        loop {
            let blank = self.buf.iter().take_while(|b| **b == b'\r' || **b == b'\n').count();
            self.buf.drain(..blank);
            if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                if end + 4 > limit {
                    return Err(HeadError::TooLarge);
                }
                let head = parse_head(&self.buf[..end + 4])?;
                self.buf.drain(..end + 4);
                return Ok(head);
            }
            if self.buf.len() >= limit {
                return Err(HeadError::TooLarge);
            }
            match self.fill().await {
                Ok(0) | Err(_) => return Err(HeadError::Closed),
                Ok(_) => {}
            }
        }
    }

    /// Takes exactly `n` bytes (from `buf`, then the socket) and appends them to `out`.
    async fn take_into(&mut self, n: usize, out: &mut Vec<u8>) -> Result<(), BodyError> {
        let mut left = n;
        loop {
            let k = left.min(self.buf.len());
            out.extend_from_slice(&self.buf[..k]);
            self.buf.drain(..k);
            left -= k;
            if left == 0 {
                return Ok(());
            }
            match self.fill().await {
                Ok(0) => return Err(BodyError::Io(io::ErrorKind::UnexpectedEof.into())),
                Ok(_) => {}
                Err(e) => return Err(BodyError::Io(e)),
            }
        }
    }

    /// One CRLF-terminated line of at most `MAX_CHUNK_LINE` bytes, without the CRLF.
    async fn line(&mut self) -> Result<String, BodyError> {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                if i > MAX_CHUNK_LINE {
                    return Err(BodyError::Bad("chunk line too long"));
                }
                let l = String::from_utf8_lossy(&self.buf[..i]).into_owned();
                self.buf.drain(..i + 2);
                return Ok(l);
            }
            if self.buf.len() > MAX_CHUNK_LINE {
                return Err(BodyError::Bad("chunk line too long"));
            }
            match self.fill().await {
                Ok(0) => return Err(BodyError::Io(io::ErrorKind::UnexpectedEof.into())),
                Ok(_) => {}
                Err(e) => return Err(BodyError::Io(e)),
            }
        }
    }

    /// Reads a body of at most `limit` bytes. A declared length over the limit is refused
    /// before anything is read; a chunked body as soon as it passes the limit. No deadline here:
    /// the caller wraps this in one.
    pub async fn read_body(&mut self, framing: Framing, limit: u64) -> Result<Vec<u8>, BodyError> {
        match framing {
            Framing::None => Ok(Vec::new()),
            Framing::Length(n) if n > limit => Err(BodyError::TooLarge),
            Framing::Length(n) => {
                let mut out = Vec::with_capacity((n as usize).min(1 << 20));
                self.take_into(n as usize, &mut out).await?;
                Ok(out)
            }
            Framing::Chunked => {
                let mut out = Vec::new();
                loop {
                    let line = self.line().await?;
                    let hex = line.split(';').next().unwrap_or("").trim();
                    let size = u64::from_str_radix(hex, 16).map_err(|_| BodyError::Bad("bad chunk size"))?;
                    if size == 0 {
                        // Trailers, up to an empty line (bounded like the head).
                        let mut trailer_bytes = 0;
                        loop {
                            let t = self.line().await?;
                            if t.is_empty() {
                                return Ok(out);
                            }
                            trailer_bytes += t.len();
                            if trailer_bytes > 16 * 1024 {
                                return Err(BodyError::Bad("trailers too large"));
                            }
                        }
                    }
                    if out.len() as u64 + size > limit {
                        return Err(BodyError::TooLarge);
                    }
                    self.take_into(size as usize, &mut out).await?;
                    let mut crlf = Vec::with_capacity(2);
                    self.take_into(2, &mut crlf).await?;
                    if crlf != b"\r\n" {
                        return Err(BodyError::Bad("chunk not followed by CRLF"));
                    }
                }
            }
        }
    }

    /// Writes `bytes`; every write must make progress within `stall`, else `TimedOut`.
    pub async fn write_timed(&mut self, bytes: &[u8], stall: Duration) -> io::Result<()> {
        for piece in bytes.chunks(IO_CHUNK) {
            match tokio::time::timeout(stall, self.wr.write_all(piece)).await {
                Ok(r) => r?,
                Err(_) => return Err(io::ErrorKind::TimedOut.into()),
            }
        }
        Ok(())
    }

    /// Writes a response: status line, `Date`, the response's headers, `Content-Length`
    /// (always, never chunked), `Connection: close` when `close`, then the body unless
    /// `head_only` (HEAD). Every write must make progress within `stall`.
    pub async fn send(&mut self, resp: Resp, head_only: bool, close: bool, stall: Duration) -> io::Result<()> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let mut head = format!("HTTP/1.1 {} {}\r\nDate: {}\r\n", resp.status, reason(resp.status), http_date(now));
        for (k, v) in &resp.headers {
            // Header values come from this program; a CR or LF would split the response.
            let v: String = v.chars().filter(|c| *c != '\r' && *c != '\n').collect();
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n", resp.body.len()));
        if close {
            head.push_str("Connection: close\r\n");
        }
        head.push_str("\r\n");
        match resp.body {
            Body::Bytes(b) => {
                let mut all = head.into_bytes();
                if !head_only {
                    all.extend_from_slice(&b);
                }
                self.write_timed(&all, stall).await?;
            }
            Body::File(mut f, len) => {
                self.write_timed(head.as_bytes(), stall).await?;
                if !head_only {
                    let mut left = len;
                    let mut chunk = vec![0u8; IO_CHUNK];
                    while left > 0 {
                        // A page-cache read of at most 64 KiB: short enough to do on this thread.
                        let want = (left as usize).min(IO_CHUNK);
                        let n = f.read(&mut chunk[..want])?;
                        if n == 0 {
                            // The file shrank: the announced length cannot be met.
                            return Err(io::ErrorKind::UnexpectedEof.into());
                        }
                        self.write_timed(&chunk[..n], stall).await?;
                        left -= n as u64;
                    }
                }
            }
        }
        self.wr.flush().await
    }

    /// Closes after an answer to a request whose body was not read: half-closes (so the client
    /// sees the answer and the end), then reads and drops what the client still sends for at
    /// most `linger`, so that the kernel does not reset the connection (which can destroy the
    /// answer before the client reads it).
    pub async fn linger_close(mut self, linger: Duration) {
        let _ = self.wr.shutdown().await;
        let mut sink = vec![0u8; IO_CHUNK];
        let _ = tokio::time::timeout(linger, async {
            while let Ok(n) = self.rd.read(&mut sink).await {
                if n == 0 {
                    break;
                }
            }
        })
        .await;
    }
}

fn parse_head(bytes: &[u8]) -> Result<Head, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(bytes) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(HeadError::Bad("incomplete request head".into())),
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooLarge),
        Err(e) => return Err(HeadError::Bad(format!("malformed request head: {e}"))),
    }
    let (Some(method), Some(target), Some(version)) = (req.method, req.path, req.version) else {
        return Err(HeadError::Bad("incomplete request line".into()));
    };
    let headers =
        req.headers.iter().map(|h| (h.name.to_string(), String::from_utf8_lossy(h.value).trim().to_string())).collect();
    Ok(Head { method: method.to_string(), target: target.to_string(), http10: version == 0, headers })
}

// ---- WebSocket transport ------------------------------------------------------------------------

/// The two halves of a connection as one stream, for tokio-tungstenite after the handshake
/// (the connection stays the caller's).
pub struct Halves<'a> {
    pub rd: &'a mut OwnedReadHalf,
    pub wr: &'a mut OwnedWriteHalf,
}

impl tokio::io::AsyncRead for Halves<'_> {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut *self.get_mut().rd).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for Halves<'_> {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        std::pin::Pin::new(&mut *self.get_mut().wr).poll_write(cx, buf)
    }

    fn poll_flush(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut *self.get_mut().wr).poll_flush(cx)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut *self.get_mut().wr).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(http_date(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(http_date(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
    }

    fn head(headers: &[(&str, &str)]) -> Head {
        Head {
            method: "POST".into(),
            target: "/".into(),
            http10: false,
            headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    #[test]
    fn framing() {
        assert_eq!(head(&[]).framing(), Ok(Framing::None));
        assert_eq!(head(&[("Content-Length", "0")]).framing(), Ok(Framing::None));
        assert_eq!(head(&[("content-length", "12")]).framing(), Ok(Framing::Length(12)));
        assert_eq!(head(&[("Content-Length", "12"), ("Content-Length", "12")]).framing(), Ok(Framing::Length(12)));
        assert!(head(&[("Content-Length", "12"), ("Content-Length", "13")]).framing().is_err());
        assert!(head(&[("Content-Length", "-1")]).framing().is_err());
        assert!(head(&[("Content-Length", "99999999999999999999999")]).framing().is_err());
        assert_eq!(head(&[("Transfer-Encoding", "chunked")]).framing(), Ok(Framing::Chunked));
        assert!(head(&[("Transfer-Encoding", "gzip, chunked")]).framing().is_err());
        assert!(head(&[("Transfer-Encoding", "chunked"), ("Content-Length", "3")]).framing().is_err());
        assert!(head(&[("Connection", "keep-alive, Close")]).wants_close());
        let mut h = head(&[]);
        assert!(!h.wants_close());
        h.http10 = true;
        assert!(h.wants_close());
    }
}
