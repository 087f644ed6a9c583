//! The audience a job delivers to — its topic, recipient and A/B variant — kept in columns of
//! its own so that no store reads a kind's payload.

use serde_json::Value;

/// The audience fields of a job: what the delivery views, the skip-rate and deliverability
/// checks, erasure and the A/B exposures read. Filled when the job is made; all `None` for a
/// job that delivers to no audience.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobAudience {
    /// The topic it delivers on.
    pub topic: Option<String>,
    /// The recipient's id (never an address).
    pub recipient_id: Option<String>,
    /// The A/B variant it was assigned.
    pub variant: Option<String>,
}

impl JobAudience {
    /// The fields a payload carries by shape: each of `topic`, `recipient_id` and `variant`
    /// that is a string (the shape migration 0026 filled the columns of older jobs by).
    pub fn of_payload(payload: &Value) -> Self {
        let text = |k: &str| payload.get(k).and_then(Value::as_str).map(str::to_string);
        JobAudience {
            topic: text("topic"),
            recipient_id: text("recipient_id"),
            variant: text("variant"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_string_fields_are_taken() {
        let a = JobAudience::of_payload(&serde_json::json!({
            "topic": "weekly", "recipient_id": "r1", "variant": 3
        }));
        assert_eq!(a.topic.as_deref(), Some("weekly"));
        assert_eq!(a.recipient_id.as_deref(), Some("r1"));
        assert_eq!(a.variant, None);
        assert_eq!(
            JobAudience::of_payload(&serde_json::json!([1])),
            JobAudience::default()
        );
    }
}
