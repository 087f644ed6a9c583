//! Concurrency keys in requests: checked when a job or schedule is saved, rendered when each
//! job is made (`kairos_core::concurrency` for the rules, `kairos_store::concurrency` for how
//! the stores enforce them).
//!
//! The key is a one-line template of the mail templates' engine (minijinja, strict undefined,
//! the same fuel), expressions only: `"account:{{ payload.account_id }}"`,
//! `"{{ recipient.id }}"`. A template that does not parse, uses a statement or names a
//! variable that does not exist is a 422 on `concurrency.key`; a `max` out of 1 ..= 10000 on
//! `concurrency.max`. A key that renders badly for one job (a payload field missing, empty,
//! over 128 bytes, control characters) fails that job permanently, saying why.

use crate::error::OpsError;
use kairos_channels::email::template;
use kairos_core::concurrency::{Concurrency, ConcurrencySpec, MAX_CONCURRENCY, MAX_KEY_BYTES};
use serde_json::{Value, json};

/// The longest key template, in bytes.
pub const MAX_KEY_TEMPLATE: usize = 1024;

/// What a key may render to before it is cut short (it then fails as too long).
const MAX_RENDER: usize = 4 * MAX_KEY_BYTES;

/// Check `spec` at request time; errors name `concurrency.key` or `concurrency.max`.
pub fn check(spec: &ConcurrencySpec) -> Result<(), OpsError> {
    if !(1..=i64::from(MAX_CONCURRENCY)).contains(&spec.max) {
        return Err(OpsError::invalid(
            "concurrency.max",
            format!("must be between 1 and {MAX_CONCURRENCY}"),
        ));
    }
    if spec.key.is_empty() || spec.key.len() > MAX_KEY_TEMPLATE {
        return Err(OpsError::invalid(
            "concurrency.key",
            format!("must be 1 to {MAX_KEY_TEMPLATE} bytes"),
        ));
    }
    if spec.key.chars().any(char::is_control) {
        return Err(OpsError::invalid(
            "concurrency.key",
            "must not contain control characters",
        ));
    }
    if is_template(&spec.key) {
        template::check_line("concurrency.key", &spec.key, MAX_RENDER)
            .map_err(|e| OpsError::invalid("concurrency.key", e.reason))?;
    } else if let Some(why) = kairos_core::concurrency::key_problem(&spec.key) {
        return Err(OpsError::invalid("concurrency.key", why));
    }
    Ok(())
}

fn is_template(key: &str) -> bool {
    key.contains('{')
}

/// The concurrency of one job made from `spec`, its key rendered against `payload` (and
/// `recipient`, for audience jobs): a failed key when it does not render or is not a valid key.
pub fn render(spec: &ConcurrencySpec, payload: &Value, recipient: Option<&Value>) -> Concurrency {
    let max = u32::try_from(spec.max).unwrap_or(0);
    if !is_template(&spec.key) {
        return Concurrency::rendered(spec.key.clone(), max);
    }
    let ctx = template::context(&json!({
        "payload": payload,
        "recipient": recipient.cloned().unwrap_or(Value::Null),
    }));
    match template::render_line("concurrency.key", &spec.key, &ctx, MAX_RENDER) {
        Ok(key) => Concurrency::rendered(key, max),
        Err(e) => Concurrency::failed(
            &format!("the key template did not render: {}", e.reason),
            max,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(key: &str, max: i64) -> ConcurrencySpec {
        ConcurrencySpec {
            key: key.into(),
            max,
        }
    }

    fn field(e: OpsError) -> String {
        match e.kind() {
            crate::error::OpsErrorKind::Invalid { field, .. } => field.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_templates_and_limits_name_their_field() {
        assert!(check(&spec("account:{{ payload.account_id }}", 1)).is_ok());
        assert!(check(&spec("{{ recipient.id }}", 3)).is_ok());
        assert!(check(&spec("static", 1)).is_ok());
        for (s, f) in [
            (spec("k", 0), "concurrency.max"),
            (spec("k", 10_001), "concurrency.max"),
            (spec("k", -1), "concurrency.max"),
            (spec("", 1), "concurrency.key"),
            (spec("{{ payload.a ", 1), "concurrency.key"),
            (spec("{{ recipent.id }}", 1), "concurrency.key"),
            (
                spec("{% for i in range(9) %}x{% endfor %}", 1),
                "concurrency.key",
            ),
            (spec(&"k".repeat(200), 1), "concurrency.key"),
        ] {
            assert_eq!(field(check(&s).expect_err(&s.key)), f, "{s:?}");
        }
    }

    #[test]
    fn renders_from_payload_and_recipient() {
        let c = render(
            &spec("account:{{ payload.account_id }}", 2),
            &json!({"account_id": 42}),
            None,
        );
        assert_eq!(c.key, "account:42");
        assert_eq!(c.max, 2);
        let c = render(
            &spec("{{ recipient.id }}", 1),
            &json!({}),
            Some(&json!({"id": "rcpt_1"})),
        );
        assert_eq!(c.key, "rcpt_1");
    }

    #[test]
    fn a_key_that_renders_badly_fails_saying_why() {
        let missing = render(&spec("{{ payload.account_id }}", 1), &json!({}), None);
        assert!(
            missing
                .problem()
                .is_some_and(|p| p.contains("did not render"))
        );
        let empty = render(&spec("{{ payload.a }}", 1), &json!({"a": ""}), None);
        assert!(empty.problem().is_some_and(|p| p.contains("empty")));
        let long = render(
            &spec("{{ payload.a }}", 1),
            &json!({"a": "x".repeat(300)}),
            None,
        );
        assert!(long.problem().is_some_and(|p| p.contains("300 bytes")));
        let huge = render(
            &spec("{{ payload.a }}", 1),
            &json!({"a": "x".repeat(5000)}),
            None,
        );
        assert!(huge.problem().is_some());
        let ctl = render(&spec("{{ payload.a }}", 1), &json!({"a": "a\tb"}), None);
        assert!(ctl.problem().is_some_and(|p| p.contains("control")));
    }
}
