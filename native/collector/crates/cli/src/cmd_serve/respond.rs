//! The API's answers: JSON bodies with the API headers, the error body, a file to send, and the
//! duplicate-key check every JSON request body goes through.

use std::path::Path;

use serde_json::{json, Value};

use super::http::{Body, Resp};

pub(super) fn with_api_headers(r: Resp) -> Resp {
    r.with_header("X-Content-Type-Options", "nosniff")
        .with_header("Cache-Control", "no-store")
        .with_header("Referrer-Policy", "no-referrer")
        .with_header("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
}

pub(super) fn json_response(status: u16, v: &Value) -> Resp {
    let body = serde_json::to_vec_pretty(v).unwrap_or_default();
    with_api_headers(
        Resp::new(status, Body::Bytes(body)).with_header("Content-Type", "application/json; charset=utf-8"),
    )
}

pub(super) fn api_error(status: u16, code: &str, message: &str) -> Resp {
    json_response(status, &error_json(code, message))
}

/// The body of every API error (packages/protocol `apiError`).
pub(super) fn error_json(code: &str, message: &str) -> Value {
    json!({ "error": { "code": code, "message": message } })
}

/// Refuses a JSON text with a key twice in one object (at any depth), which serde_json would
/// otherwise accept, keeping the last. `Err` names the key and where its second copy is. A text
/// that is not JSON passes (the handler's parse reports that).
pub(super) fn check_duplicate_keys(body: &[u8]) -> Result<(), String> {
    use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

    struct Unique;
    struct UniqueVisitor;
    impl<'de> Deserialize<'de> for Unique {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Unique, D::Error> {
            d.deserialize_any(UniqueVisitor)
        }
    }
    impl<'de> Visitor<'de> for UniqueVisitor {
        type Value = Unique;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_str<E>(self, _: &str) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_unit<E>(self) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Unique, A::Error> {
            while seq.next_element::<Unique>()?.is_some() {}
            Ok(Unique)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Unique, A::Error> {
            let mut seen = std::collections::HashSet::new();
            while let Some(key) = map.next_key::<String>()? {
                if seen.contains(&key) {
                    return Err(de::Error::custom(format!("duplicate key {key:?}")));
                }
                map.next_value::<Unique>()?;
                seen.insert(key);
            }
            Ok(Unique)
        }
    }

    let mut de = serde_json::Deserializer::from_slice(body);
    match Unique::deserialize(&mut de).and_then(|_| de.end()) {
        Err(e) if e.classify() == serde_json::error::Category::Data => Err(e.to_string()),
        _ => Ok(()),
    }
}

pub(super) fn duplicate_key_error(detail: &str) -> Resp {
    api_error(
        400,
        "duplicate-key",
        &format!("the request body has a {detail}: each key may appear only once in an object"),
    )
}

pub(super) fn open_file(p: &Path) -> std::io::Result<(std::fs::File, u64)> {
    let f = std::fs::File::open(p)?;
    let len = f.metadata()?.len();
    Ok((f, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys() {
        assert_eq!(check_duplicate_keys(br#"{"pid":1,"command":["a"]}"#), Ok(()));
        let e = check_duplicate_keys(br#"{"pid":1,"pid":2}"#).unwrap_err();
        assert!(e.starts_with("duplicate key \"pid\" at line 1 column"), "{e}");
        // At any depth, in arrays too; the same key in sibling objects is fine.
        let e = check_duplicate_keys(br#"{"plan":{"pageRanges":[{"start":1},{"start":2,"start":3}]}}"#).unwrap_err();
        assert!(e.contains("\"start\""), "{e}");
        assert_eq!(check_duplicate_keys(br#"[{"a":1},{"a":2}]"#), Ok(()));
        // Escapes are decoded before comparing.
        assert!(check_duplicate_keys(br#"{"pid":1,"p\u0069d":2}"#).is_err());
        // Not JSON, or too deep: left to the handler's own parse (bad-json).
        assert_eq!(check_duplicate_keys(b"{not json"), Ok(()));
        assert_eq!(check_duplicate_keys(&[b'['; 100_000]), Ok(()));
        assert_eq!(check_duplicate_keys(br#"{"a":1} trailing"#), Ok(()));
    }
}
