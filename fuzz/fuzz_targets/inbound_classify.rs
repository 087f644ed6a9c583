//! Inbound event classification: what a provider's webhook body means (suppress, record,
//! unknown). Input: the body, as received.
//!
//! Beyond "no panic": the action is one of the three, suppression happens exactly when there
//! are addresses (at most 50, each with an `@`, at most 320 bytes, no duplicates) and a reason;
//! the stored payload is the JSON (or the text as a JSON string), and classifying the stored
//! payload again gives the same answer (a replayed event is classified alike).
#![no_main]

use kairos_engine::inbound::{MAX_ADDRESSES, classify};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let c = classify(data);
    assert!(
        ["unknown", "recorded", "suppressed"].contains(&c.action.as_str()),
        "action {}",
        c.action
    );
    assert_eq!(c.action == "suppressed", !c.suppress.is_empty());
    assert_eq!(
        c.reason.is_empty(),
        c.suppress.is_empty(),
        "reason {:?}",
        c.reason
    );
    if !c.reason.is_empty() {
        assert!(["hard_bounce", "complaint", "provider_suppressed"].contains(&c.reason.as_str()));
    }
    assert!(c.suppress.len() <= MAX_ADDRESSES);
    for (i, a) in c.suppress.iter().enumerate() {
        assert!(a.contains('@') && a.len() <= 320, "address {a:?}");
        assert!(!c.suppress[..i].contains(a), "duplicate address {a:?}");
    }
    match serde_json::from_slice::<serde_json::Value>(data) {
        Ok(v) => assert_eq!(c.payload, v),
        Err(_) => assert_eq!(
            c.payload,
            serde_json::Value::String(String::from_utf8_lossy(data).into_owned())
        ),
    }
    if c.event_type.is_empty() {
        assert_eq!(c.action, "unknown");
    }

    let stored = serde_json::to_vec(&c.payload).expect("a payload serializes");
    let again = classify(&stored);
    assert_eq!(
        (
            &again.event_type,
            &again.action,
            &again.provider_message_id,
            &again.suppress,
            &again.reason
        ),
        (
            &c.event_type,
            &c.action,
            &c.provider_message_id,
            &c.suppress,
            &c.reason
        ),
        "the stored payload classifies differently"
    );
});
