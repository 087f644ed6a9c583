//! The Standard Webhooks verifier (`/hooks/standard/{source}`, and what kairos's own
//! deliveries are signed with). Input lines: secret (`whsec_…`), webhook-id, webhook-timestamp,
//! a webhook-signature header, then the body.
//!
//! Beyond "no panic": a secret that parses prints back to itself; a signature made by the
//! signer verifies, and does not once a byte of it, of the body, of the id or of the timestamp
//! changes; the timestamp is accepted exactly within the tolerance; a header the fuzzer made
//! verifies only if it carries the signer's exact signature (no forgery, no alternative
//! encoding of the MAC).
#![no_main]

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use kairos_channels::signing::{VerifyError, WebhookSecret, sign, verify};
use kairos_fuzz::{fields, pick};
use libfuzzer_sys::fuzz_target;

/// The Standard Webhooks specification's example secret.
const SPEC_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const TOLERANCE: i64 = 300;

fuzz_target!(|data: &[u8]| {
    let f = fields(data, 5);
    let secret = match WebhookSecret::parse(&f[0]) {
        Ok(s) => {
            assert_eq!(
                WebhookSecret::parse(&s.expose_whsec()).ok(),
                Some(s.clone())
            );
            s
        }
        Err(e) => {
            assert_eq!(e.field(), "secret");
            WebhookSecret::parse(SPEC_SECRET).expect("the spec's secret parses")
        }
    };
    let id = f[1].as_str();
    let ts: i64 = f[2].trim().parse().unwrap_or(1_614_265_330);
    let header = f[3].as_str();
    let body = f[4].as_bytes();
    let keys = std::slice::from_ref(&secret);
    let h = pick(data);

    let good = sign(&secret, id, ts, body);
    assert_eq!(verify(keys, id, ts, body, &good, ts, TOLERANCE), Ok(()));

    // Any change to the MAC, the body, the id or the timestamp is a mismatch.
    let mut mac = STANDARD
        .decode(good.strip_prefix("v1,").expect("v1 signature"))
        .expect("b64");
    let i = (h as usize) % mac.len();
    mac[i] ^= 1 << (h % 8);
    let flipped = format!("v1,{}", STANDARD.encode(&mac));
    assert_eq!(
        verify(keys, id, ts, body, &flipped, ts, TOLERANCE),
        Err(VerifyError::Mismatch)
    );
    if !body.is_empty() {
        let mut b = body.to_vec();
        let j = (h as usize / 7) % b.len();
        b[j] ^= 1 << (h % 7);
        assert_eq!(
            verify(keys, id, ts, &b, &good, ts, TOLERANCE),
            Err(VerifyError::Mismatch)
        );
    }
    let other_id = format!("{id}x");
    assert_eq!(
        verify(keys, &other_id, ts, body, &good, ts, TOLERANCE),
        Err(VerifyError::Mismatch)
    );
    if let Some(ts2) = ts.checked_add(1) {
        assert_eq!(
            verify(keys, id, ts2, body, &good, ts, TOLERANCE),
            Err(VerifyError::Mismatch)
        );
    }

    // The tolerance, both ways, without overflow.
    let off = (h % 1000) as i64 - 500;
    let now = ts.saturating_add(off);
    let expect = if now.saturating_sub(ts) > TOLERANCE {
        Err(VerifyError::TimestampTooOld)
    } else if ts.saturating_sub(now) > TOLERANCE {
        Err(VerifyError::TimestampTooNew)
    } else {
        Ok(())
    };
    assert_eq!(verify(keys, id, ts, body, &good, now, TOLERANCE), expect);

    // A header from the fuzzer: verifies only if it carries exactly the signer's signature.
    if verify(keys, id, ts, body, header, ts, TOLERANCE).is_ok() {
        assert!(
            header.split_ascii_whitespace().any(|e| e == good),
            "forged header {header:?} verifies"
        );
    }
    // With the right signature among its entries it verifies (rotation: any one entry).
    let with_good = format!("{header} {good}");
    assert_eq!(
        verify(keys, id, ts, body, &with_good, ts, TOLERANCE),
        Ok(())
    );
});
