//! The Svix verifier (`/hooks/resend`: Resend signs with Svix): the `svix-id`,
//! `svix-timestamp` and `svix-signature` headers as the route reads them (trimmed, the
//! timestamp a decimal number of seconds), several secrets during rotation
//! (`KAIROS_RESEND_WEBHOOK_SECRET` is a comma-separated list), several signatures per header.
//! Input lines: the secrets, svix-id, svix-timestamp, svix-signature, then the body.
//!
//! Beyond "no panic": a header verifies only if one of its entries is exactly the signature of
//! one of the secrets; each secret's own signature verifies among the fuzzer's entries, under
//! the whole list; a key outside the list never verifies.
#![no_main]

use kairos_channels::signing::{VerifyError, WebhookSecret, sign, verify};
use kairos_fuzz::fields;
use libfuzzer_sys::fuzz_target;

const TOLERANCE: i64 = 300;
/// Svix's documentation example secret.
const SVIX_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fuzz_target!(|data: &[u8]| {
    let f = fields(data, 5);
    // As the configuration reads the list: comma-separated, blanks skipped.
    let mut secrets: Vec<WebhookSecret> = f[0]
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .filter_map(|s| WebhookSecret::parse(s).ok())
        .take(4)
        .collect();
    if secrets.is_empty() {
        secrets.push(WebhookSecret::parse(SVIX_SECRET).expect("the example secret parses"));
    }
    let id = f[1].trim();
    let header = f[3].trim();
    let body = f[4].as_bytes();
    // As the route reads the timestamp: a decimal number, else 401 before any MAC is computed.
    let Ok(ts) = f[2].trim().parse::<i64>() else {
        return;
    };

    let result = verify(&secrets, id, ts, body, header, ts, TOLERANCE);
    let sigs: Vec<String> = secrets.iter().map(|s| sign(s, id, ts, body)).collect();
    let carries_one = header
        .split_ascii_whitespace()
        .any(|e| sigs.iter().any(|s| s == e));
    assert_eq!(
        result.is_ok(),
        carries_one,
        "header {header:?} → {result:?}"
    );
    if !carries_one {
        let has_v1 = header
            .split_ascii_whitespace()
            .filter_map(|e| e.split_once(','))
            .any(|(v, _)| v == "v1");
        if !has_v1 {
            assert_eq!(result, Err(VerifyError::NoSignature));
        }
    }

    for sig in &sigs {
        let h = format!("v1a,{} {header} {sig}", &sig[3..]);
        assert_eq!(verify(&secrets, id, ts, body, &h, ts, TOLERANCE), Ok(()));
    }
    // A key that is not in the list never verifies what the list signed (unless it is in it).
    let stranger = WebhookSecret::generate([0xA5; 32]);
    if !secrets.contains(&stranger) {
        let all = sigs.join(" ");
        assert_eq!(
            verify(
                std::slice::from_ref(&stranger),
                id,
                ts,
                body,
                &all,
                ts,
                TOLERANCE
            ),
            Err(VerifyError::Mismatch)
        );
    }
});
