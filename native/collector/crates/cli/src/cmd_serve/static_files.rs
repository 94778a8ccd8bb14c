//! The built web UI's files: no token needed (they hold no data), never a path outside the web
//! directory, served with a CSP and the other headers of the security model.

use std::path::Path;

use super::http::{Body, Resp};
use super::respond::open_file;
use super::state::State;

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn content_type(p: &Path) -> &'static str {
    match p.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "wasm" => "application/wasm",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn static_error(status: u16, msg: &str) -> Resp {
    let r = Resp::new(status, Body::Bytes(msg.as_bytes().to_vec()));
    static_headers(r, 0).with_header("Content-Type", "text/plain; charset=utf-8")
}

/// The UI's Content-Security-Policy. `'wasm-unsafe-eval'` lets the trace reader compile its
/// zstd decoder (WebAssembly; `eval` and `new Function` stay refused) and `data:` in connect-src
/// lets it fetch that module, which is inlined in the bundle: nothing is fetched from elsewhere.
/// The desktop app's CSP (apps/desktop/src/main-logic/app-protocol.ts) is this one less the
/// WebSocket origins; apps/desktop/test/web-contract.test.ts reads this literal and compares.
fn static_headers(r: Resp, port: u16) -> Resp {
    let csp = format!(
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; \
         font-src 'self'; worker-src 'self' blob:; connect-src 'self' data: ws://127.0.0.1:{port} ws://localhost:{port}; \
         object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    );
    r.with_header("X-Content-Type-Options", "nosniff")
        .with_header("Referrer-Policy", "no-referrer")
        .with_header("X-Frame-Options", "DENY")
        .with_header("Cross-Origin-Opener-Policy", "same-origin")
        .with_header("Content-Security-Policy", &csp)
}

pub(super) fn serve_static(st: &State, method: &str, raw_path: &str) -> Resp {
    if !matches!(method, "GET" | "HEAD") {
        return static_error(405, "only GET and HEAD are allowed for UI files");
    }
    let Some(root) = &st.web_dir else {
        return static_error(
            404,
            "the web UI is not built here: run `npm run build` in apps/web, or start numascope serve with --web-dir DIR",
        );
    };
    let Some(path) = percent_decode(raw_path) else {
        return static_error(400, "bad path encoding");
    };
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if path.contains('\0') || path.contains('\\') || segs.iter().any(|s| *s == ".." || s.starts_with('.')) {
        return static_error(400, "path refused: no '..', hidden files or backslashes");
    }
    let mut file = root.clone();
    for s in &segs {
        file.push(s);
    }
    let mut resolved = file.canonicalize().ok();
    // Client-side routes (no file extension) get the app's index.html.
    if resolved.is_none() && segs.last().is_some_and(|s| !s.contains('.')) {
        resolved = root.join("index.html").canonicalize().ok();
    }
    let Some(mut resolved) = resolved else {
        return static_error(404, "not found");
    };
    if !resolved.starts_with(root) {
        return static_error(404, "not found");
    }
    if resolved.is_dir() {
        resolved.push("index.html");
        if !resolved.is_file() {
            return static_error(404, "not found (directories are not listed)");
        }
    }
    // Regular files only (opening a FIFO would wait for a writer).
    let Some((f, len)) = resolved.is_file().then(|| open_file(&resolved).ok()).flatten() else {
        return static_error(404, "not found");
    };
    let cache = if segs.first() == Some(&"assets") { "public, max-age=31536000, immutable" } else { "no-cache" };
    static_headers(Resp::new(200, Body::File(f, len)), st.port)
        .with_header("Content-Type", content_type(&resolved))
        .with_header("Cache-Control", cache)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding() {
        assert_eq!(percent_decode("/a%2e%2E/b").as_deref(), Some("/a../b"));
        assert_eq!(percent_decode("/%zz"), None);
        assert_eq!(percent_decode("/%2"), None);
    }
}
