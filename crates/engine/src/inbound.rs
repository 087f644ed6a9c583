//! What a provider event means: pure classification of a webhook payload
//! into the action to take — suppress its addresses, record it, or store it as unknown.
//!
//! Resend's events (<https://resend.com/docs/webhooks>) are `{"type", "created_at", "data"}`
//! with `data.email_id` (the provider message id our send recorded), `data.to` (the
//! recipients) and, for `email.bounced`, `data.bounce.type` (`Permanent`, `Transient`,
//! `Undetermined`) and `data.bounce.subType`. Standard Webhooks senders use the same
//! `{"type", "data"}` envelope, so `/hooks/standard/{source}` is classified the same way.
//!
//! | event | action |
//! |---|---|
//! | `email.bounced` with `bounce.type` `Permanent` | suppress (`hard_bounce`) |
//! | `email.bounced`, `Transient` / `Undetermined` | record |
//! | `email.bounced`, any other or no bounce type | unknown (stored, acknowledged) |
//! | `email.complained` | suppress (`complaint`) |
//! | `email.suppressed`, `suppression.added` | suppress (`provider_suppressed`) |
//! | `email.delivery_delayed` and the other `email.*` delivery reports | record |
//! | anything else | unknown (stored, acknowledged) |

use kairos_store::action;
use serde_json::Value;

/// At most this many addresses of one event are suppressed (a guard against a huge list).
pub const MAX_ADDRESSES: usize = 50;

/// Event types that are recorded and change nothing.
const RECORDED: &[&str] = &[
    "email.sent",
    "email.delivered",
    "email.delivery_delayed",
    "email.opened",
    "email.clicked",
    "email.scheduled",
    "email.failed",
    "email.received",
];

/// Event types kairos acts on, besides the recorded ones.
const ACTED_ON: &[&str] = &[
    "email.bounced",
    "email.complained",
    "email.suppressed",
    "suppression.added",
];

/// An event type as a metric label: a type kairos knows as it is, `none` for an event
/// without a type, `other` for any other (the sender's text would make the label set
/// unbounded; the stored event keeps its type, and the `inbound_unknown` check names it).
pub fn type_label(event_type: &str) -> &'static str {
    if event_type.is_empty() {
        return "none";
    }
    RECORDED
        .iter()
        .chain(ACTED_ON)
        .find(|t| **t == event_type)
        .copied()
        .unwrap_or("other")
}

/// What an event means.
#[derive(Debug, Clone, PartialEq)]
pub struct Classified {
    /// The event type (`""` if none).
    pub event_type: String,
    /// One of [`kairos_store::action`].
    pub action: String,
    /// The provider message id (`data.email_id`), if any.
    pub provider_message_id: Option<String>,
    /// Addresses to suppress (empty unless the action is `suppressed`).
    pub suppress: Vec<String>,
    /// The suppression reason (`""` unless suppressing).
    pub reason: String,
    /// The payload to store: the JSON, or the raw text as a JSON string if it is not JSON.
    pub payload: Value,
}

/// The recipients named by an event: `data.to` (an array or a string), `data.email`,
/// `data.address`; only strings that look like addresses, at most [`MAX_ADDRESSES`].
fn addresses(data: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut push = |v: &Value| {
        if let Some(s) = v.as_str() {
            let s = s.trim();
            // `Name <addr>` → addr.
            let s = match (s.rfind('<'), s.rfind('>')) {
                (Some(a), Some(b)) if a < b => &s[a + 1..b],
                _ => s,
            };
            if s.contains('@') && s.len() <= 320 && !out.iter().any(|x: &String| x == s) {
                out.push(s.to_string());
            }
        }
    };
    match &data["to"] {
        Value::Array(a) => a.iter().for_each(&mut push),
        v => push(v),
    }
    push(&data["email"]);
    push(&data["address"]);
    out.truncate(MAX_ADDRESSES);
    out
}

/// Classify a webhook body. Never fails: a body that is not JSON, or has no type, is an
/// unknown event to store and acknowledge.
pub fn classify(body: &[u8]) -> Classified {
    let payload: Value = serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()));
    let event_type = payload["type"].as_str().unwrap_or_default().to_string();
    let data = &payload["data"];
    let provider_message_id = data["email_id"]
        .as_str()
        .or_else(|| data["message_id"].as_str())
        .map(str::to_string);
    let reason = match event_type.as_str() {
        "email.bounced" => {
            match data["bounce"]["type"]
                .as_str()
                .map(str::to_ascii_lowercase)
                .as_deref()
            {
                Some("permanent") => Some("hard_bounce"),
                Some("transient") | Some("undetermined") => None,
                _ => {
                    return Classified {
                        event_type,
                        action: action::UNKNOWN.into(),
                        provider_message_id,
                        suppress: Vec::new(),
                        reason: String::new(),
                        payload,
                    };
                }
            }
        }
        "email.complained" => Some("complaint"),
        "email.suppressed" | "suppression.added" => Some("provider_suppressed"),
        t if RECORDED.contains(&t) => None,
        _ => {
            return Classified {
                event_type,
                action: action::UNKNOWN.into(),
                provider_message_id,
                suppress: Vec::new(),
                reason: String::new(),
                payload,
            };
        }
    };
    let suppress = if reason.is_some() {
        addresses(data)
    } else {
        Vec::new()
    };
    Classified {
        event_type,
        action: if suppress.is_empty() {
            action::RECORDED.into()
        } else {
            action::SUPPRESSED.into()
        },
        provider_message_id,
        reason: if suppress.is_empty() {
            String::new()
        } else {
            reason.unwrap_or_default().to_string()
        },
        suppress,
        payload,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn c(v: Value) -> Classified {
        classify(v.to_string().as_bytes())
    }

    #[test]
    fn permanent_bounce_suppresses_its_recipients() {
        let x = c(json!({"type": "email.bounced", "data": {"email_id": "e1",
            "to": ["Ann <ann@example.com>", "bob@example.com"],
            "bounce": {"type": "Permanent", "subType": "General"}}}));
        assert_eq!(x.action, action::SUPPRESSED);
        assert_eq!(x.reason, "hard_bounce");
        assert_eq!(x.suppress, ["ann@example.com", "bob@example.com"]);
        assert_eq!(x.provider_message_id.as_deref(), Some("e1"));
    }

    #[test]
    fn transient_and_unknown_bounce_types_suppress_nothing() {
        let t = c(json!({"type": "email.bounced", "data": {"to": ["a@x.io"],
            "bounce": {"type": "Transient"}}}));
        assert_eq!((t.action.as_str(), t.suppress.len()), (action::RECORDED, 0));
        let u = c(json!({"type": "email.bounced", "data": {"to": ["a@x.io"],
            "bounce": {"type": "Weird"}}}));
        assert_eq!((u.action.as_str(), u.suppress.len()), (action::UNKNOWN, 0));
    }

    #[test]
    fn complaint_suppressed_and_suppression_added_suppress() {
        for (t, reason) in [
            ("email.complained", "complaint"),
            ("email.suppressed", "provider_suppressed"),
            ("suppression.added", "provider_suppressed"),
        ] {
            let x = c(json!({"type": t, "data": {"to": "a@x.io"}}));
            assert_eq!(x.action, action::SUPPRESSED, "{t}");
            assert_eq!(x.reason, reason);
            assert_eq!(x.suppress, ["a@x.io"]);
        }
        let by_email = c(json!({"type": "suppression.added", "data": {"email": "b@x.io"}}));
        assert_eq!(by_email.suppress, ["b@x.io"]);
    }

    #[test]
    fn delivery_delayed_is_recorded_and_unknown_types_are_unknown() {
        let d = c(json!({"type": "email.delivery_delayed", "data": {"to": ["a@x.io"]}}));
        assert_eq!((d.action.as_str(), d.suppress.len()), (action::RECORDED, 0));
        let u = c(json!({"type": "contact.updated", "data": {"to": ["a@x.io"]}}));
        assert_eq!(u.action, action::UNKNOWN);
        let junk = classify(b"not json");
        assert_eq!(junk.action, action::UNKNOWN);
        assert_eq!(junk.payload, json!("not json"));
    }

    #[test]
    fn type_label_keeps_known_types_and_bounds_the_rest() {
        assert_eq!(type_label("email.bounced"), "email.bounced");
        assert_eq!(type_label("email.opened"), "email.opened");
        assert_eq!(type_label(""), "none");
        assert_eq!(type_label("contact.updated"), "other");
    }

    #[test]
    fn a_complaint_without_an_address_is_recorded() {
        let x = c(json!({"type": "email.complained", "data": {"to": ["no-at-sign"]}}));
        assert_eq!(
            (x.action.as_str(), x.reason.as_str()),
            (action::RECORDED, "")
        );
    }
}
