//! The one-click unsubscribe token (`/unsubscribe?token=…`). Input lines: the secret, a
//! recipient id, a topic (in both, `\n` written as the two characters `\` `n` stands for a
//! newline), then a token as a client could send it.
//!
//! Beyond "no panic": a token made by the signer verifies as its own (recipient, topic) and as
//! no other pair, also after the key is rotated to an old one; changing any one character of it
//! makes it fail; a pair with a newline in it never verifies (it would be ambiguous); a token from the fuzzer verifies only if it is exactly the token the signer
//! makes for the pair it names (no forgery, no alternative encoding).
#![no_main]

use kairos_channels::email::unsubscribe::{TokenError, UnsubscribeKey, verify};
use kairos_fuzz::{fields, pick};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let f = fields(data, 4);
    let Some(key) = UnsubscribeKey::new(&f[0]) else {
        assert!(f[0].trim().is_empty());
        return;
    };
    let keys = std::slice::from_ref(&key);
    let recipient = f[1].replace("\\n", "\n");
    let topic = f[2].replace("\\n", "\n");
    let candidate = f[3].as_str();

    if let Ok((r, t)) = verify(keys, candidate) {
        assert_eq!(
            key.token(&r, &t),
            candidate.trim(),
            "a token not made by the signer verifies"
        );
        assert!(!r.contains('\n') && !t.contains('\n'), "{r:?} {t:?}");
    }

    let token = key.token(&recipient, &topic);
    let result = verify(keys, &token);
    if recipient.contains('\n') || topic.contains('\n') {
        // Such ids are refused at the API. A token naming one never verifies: the MAC covers
        // `recipient \n topic`, so with a newline inside, another split of the same text (a
        // different pair) would carry the same MAC.
        assert_eq!(
            result,
            Err(TokenError::Malformed),
            "{recipient:?} / {topic:?}"
        );
        return;
    }
    assert_eq!(result, Ok((recipient.clone(), topic.clone())));
    let old = UnsubscribeKey::new("a newer secret of at least 32 characters").expect("key");
    if old.kid() != key.kid() {
        assert_eq!(
            verify(&[old, key.clone()], &token),
            Ok((recipient.clone(), topic.clone()))
        );
    }

    // One character changed anywhere (not to itself, not to trailing or leading whitespace
    // that `trim` would drop at the edges) makes it fail.
    let bytes = token.as_bytes();
    let h = pick(data);
    let i = (h as usize) % bytes.len();
    let mut changed = bytes.to_vec();
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.";
    let mut c = alphabet[(h as usize / 131) % alphabet.len()];
    if c == changed[i] {
        c = if c == b'A' { b'B' } else { b'A' };
    }
    changed[i] = c;
    let changed = String::from_utf8(changed).expect("tokens are ASCII");
    assert!(
        verify(keys, &changed).is_err(),
        "{token} changed at {i} to {changed} verifies"
    );
});
