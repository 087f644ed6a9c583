//! Regressions the `unsubscribe_token` fuzz target found (fuzz/fuzz_targets/).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use kairos_channels::email::unsubscribe::{TokenError, UnsubscribeKey, verify};

/// The MAC covers `v1\n<kid>\n<recipient>\n<topic>`, so a token for ("a\nb", "c") carries the
/// same MAC as one for ("a", "b\nc"): re-encoding the two parts turned one pair's token into
/// another pair's. A token naming a newline is refused, both ways round.
#[test]
fn unsubscribe_token_with_a_newline_in_recipient_or_topic_is_refused_as_ambiguous() {
    let key = UnsubscribeKey::new("an unsubscribe secret of at least 32 characters").unwrap();
    let keys = std::slice::from_ref(&key);
    let made = key.token("rcpt_1\nweekly", "daily");
    assert_eq!(verify(keys, &made), Err(TokenError::Malformed));

    // The same MAC under the other split of the same text.
    let mac = made.rsplit('.').next().unwrap();
    let forged = format!(
        "v1.{}.{}.{}.{mac}",
        key.kid(),
        B64.encode("rcpt_1"),
        B64.encode("weekly\ndaily")
    );
    assert_eq!(verify(keys, &forged), Err(TokenError::Malformed));

    // Tokens of real ids still verify.
    let token = key.token("rcpt_1", "weekly");
    assert_eq!(
        verify(keys, &token),
        Ok(("rcpt_1".to_string(), "weekly".to_string()))
    );
}
