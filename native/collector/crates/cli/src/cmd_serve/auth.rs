//! Who may call: the token of every `/api/` request, and the `Host` and `Origin` checks (the
//! security model in cmd_serve/mod.rs).

use super::http::Head;
use super::state::State;

/// Constant-time comparison (the token must not leak through timing).
fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn query_param<'a>(query: &'a str, key: &str) -> Option<&'a str> {
    query.split('&').find_map(|kv| kv.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

/// Whether the token came with the request (`?token=` or `Authorization: Bearer`); `Err` says
/// why not.
pub(super) fn token_ok(st: &State, head: &Head, query: &str) -> Result<(), &'static str> {
    let bearer = head.header("authorization").and_then(|v| v.strip_prefix("Bearer ")).map(str::trim);
    let given = query_param(query, "token").or(bearer);
    match given {
        Some(t) if same_secret(t, &st.token) => Ok(()),
        Some(_) => Err("wrong token"),
        None => Err("missing token"),
    }
}

pub(super) fn host_ok(host: &str, port: u16) -> bool {
    host == format!("127.0.0.1:{port}") || host == format!("localhost:{port}")
}

pub(super) fn origin_ok(origin: &str, port: u16) -> bool {
    origin == format!("http://127.0.0.1:{port}") || origin == format!("http://localhost:{port}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_and_tokens() {
        assert!(origin_ok("http://127.0.0.1:80", 80));
        assert!(origin_ok("http://localhost:80", 80));
        assert!(!origin_ok("http://localhost:81", 80));
        assert!(!origin_ok("https://127.0.0.1:80", 80));
        assert!(!origin_ok("null", 80));
        assert!(same_secret("abc", "abc") && !same_secret("abc", "abd") && !same_secret("abc", "ab"));
        assert_eq!(query_param("a=1&token=xyz", "token"), Some("xyz"));
        assert_eq!(query_param("tokenx=1", "token"), None);
    }
}
