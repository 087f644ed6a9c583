//! An independent Standard Webhooks verifier for tests.

use crate::Received;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// How far `webhook-timestamp` may be from `now_unix`, in seconds (the specification's
/// recommended tolerance).
pub const TOLERANCE_SECS: i64 = 300;

/// Whether `received` carries a valid Standard Webhooks signature for `secret`
/// (`whsec_<base64>`; a bare base64 key is accepted too): `webhook-id`, `webhook-timestamp`
/// within five minutes of `now_unix`, and at least one `v1,<base64>` entry in
/// `webhook-signature` equal to HMAC-SHA256 over `"{id}.{timestamp}.{body}"`.
///
/// Written without kairos-channels on purpose: it is the reference the sender is tested
/// against.
pub fn verify_standard_webhook(secret: &str, received: &Received, now_unix: i64) -> bool {
    let b64 = secret.strip_prefix("whsec_").unwrap_or(secret);
    let Ok(key) = STANDARD.decode(b64) else {
        return false;
    };
    let (Some(id), Some(ts), Some(sigs)) = (
        received.header("webhook-id"),
        received.header("webhook-timestamp"),
        received.header("webhook-signature"),
    ) else {
        return false;
    };
    let Ok(ts_num) = ts.parse::<i64>() else {
        return false;
    };
    if (i128::from(now_unix) - i128::from(ts_num)).abs() > i128::from(TOLERANCE_SECS) {
        return false;
    }
    let signed: Vec<u8> = [id.as_bytes(), b".", ts.as_bytes(), b".", &received.body].concat();
    sigs.split(' ')
        .filter_map(|entry| entry.strip_prefix("v1,"))
        .any(|sig| {
            let Ok(sig) = STANDARD.decode(sig) else {
                return false;
            };
            let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&key) else {
                return false;
            };
            mac.update(&signed);
            mac.verify_slice(&sig).is_ok()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::time::Instant;

    fn received(sig: &str, ts: &str, body: &[u8]) -> Received {
        let headers: HashMap<String, String> = [
            ("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek"),
            ("webhook-timestamp", ts),
            ("webhook-signature", sig),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        Received {
            method: "POST".into(),
            path: "/".into(),
            query: None,
            headers,
            body: body.to_vec(),
            at: Instant::now(),
        }
    }

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    const BODY: &[u8] = br#"{"test": 2432232314}"#;

    #[test]
    fn accepts_the_official_vector() {
        let r = received(SIG, "1614265330", BODY);
        assert!(verify_standard_webhook(SECRET, &r, 1614265330));
        assert!(verify_standard_webhook(SECRET, &r, 1614265330 + 300));
        let rotated = received(&format!("v1,bm9wZQ== {SIG}"), "1614265330", BODY);
        assert!(verify_standard_webhook(SECRET, &rotated, 1614265330));
    }

    #[test]
    fn rejects_tampering_and_stale_timestamps() {
        assert!(!verify_standard_webhook(
            SECRET,
            &received(SIG, "1614265330", b"{}"),
            1614265330
        ));
        assert!(!verify_standard_webhook(
            SECRET,
            &received(SIG, "1614265331", BODY),
            1614265331
        ));
        assert!(!verify_standard_webhook(
            SECRET,
            &received(SIG, "1614265330", BODY),
            1614265330 + 301
        ));
        assert!(!verify_standard_webhook(
            "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            &received(SIG, "1614265330", BODY),
            1614265330
        ));
    }
}
