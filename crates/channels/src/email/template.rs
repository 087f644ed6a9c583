//! Mail templates: subject, HTML and text per topic, in minijinja with **strict undefined**,
//! so a missing variable is an error, never a blank in a sent mail.
//!
//! The variables are `recipient` (`id`, `email`, `timezone`, `locale`, `attributes`),
//! `target`, `period` (`key`, `fire_at`), `topic`, `variant`, `payload` (the job's payload:
//! the schedule's payload plus ids) and `unsubscribe_url`.
//!
//! [`check`] renders a topic's templates against [`sample_context`] when the topic is saved:
//! a misspelt variable (`{{ recipent.id }}`) or a syntax error is refused then. The free-form
//! maps (`recipient.attributes`, `payload`) accept any key in the sample, since their keys
//! are only known per recipient; at send time a key that is missing there fails the job
//! (permanent), it does not send a blank.
//!
//! The HTML template is auto-escaped; subject and text are not.

use minijinja::value::{Object, Value};
use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use std::sync::Arc;

/// A template that did not render.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateError {
    /// Which template: `subject`, `html`, `text` (or `variants[i].subject`, …).
    pub field: String,
    /// What is wrong, with minijinja's line information.
    pub reason: String,
}

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for TemplateError {}

fn env() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|name| {
        if name == "html" {
            AutoEscape::Html
        } else {
            AutoEscape::None
        }
    });
    env
}

/// Render one template. `field` is `subject`, `html` or `text` (html is auto-escaped).
pub fn render(field: &str, source: &str, ctx: &Value) -> Result<String, TemplateError> {
    let mut e = env();
    let err = |e: minijinja::Error| {
        let mut reason = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            reason.push_str(&format!(": {s}"));
            src = s.source();
        }
        TemplateError {
            field: field.to_string(),
            reason,
        }
    };
    let name = if field.ends_with("html") {
        "html"
    } else {
        "plain"
    };
    e.add_template_owned(name.to_string(), source.to_string())
        .map_err(err)?;
    let t = e.get_template(name).map_err(err)?;
    t.render(ctx).map_err(err)
}

/// A context from JSON (the handler builds it from the recipient, the job and the topic).
pub fn context(json: &serde_json::Value) -> Value {
    Value::from_serialize(json)
}

/// An object every key of which exists: stands for the free-form maps in the sample.
#[derive(Debug)]
struct AnyKey(&'static str);

impl Object for AnyKey {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        Some(Value::from(format!("[{}.{key}]", self.0)))
    }
}

/// The context a topic's templates are checked against at save time.
pub fn sample_context() -> Value {
    minijinja::context! {
        recipient => minijinja::context! {
            id => "rcpt_sample",
            email => "sample@example.com",
            timezone => "UTC",
            locale => "en",
            attributes => Value::from_object(AnyKey("attributes")),
        },
        target => "target_sample",
        period => minijinja::context! { key => "2026-W48", fire_at => "2026-11-23T00:00:00Z" },
        topic => "sample",
        variant => "a",
        payload => Value::from_object(AnyKey("payload")),
        // Set in a digest's fan-out mails (S4-9); empty in other topics' mails.
        artifact => minijinja::context! {
            name => "daily-news",
            period_key => "2026-11-23",
            content => "The day's summary.",
            data => Value::from_object(AnyKey("artifact.data")),
        },
        unsubscribe_url => "https://example.com/unsubscribe?token=sample",
    }
}

/// A variant's templates for [`check`]: (name, subject, html, text).
pub type VariantSources = (String, Option<String>, Option<String>, Option<String>);

/// Check a topic's templates (and its variants') against the sample context. The error names
/// the template.
pub fn check(
    subject: &str,
    html: Option<&str>,
    text: Option<&str>,
    variants: &[VariantSources],
) -> Result<(), TemplateError> {
    let ctx = sample_context();
    render("subject", subject, &ctx)?;
    if let Some(h) = html {
        render("html", h, &ctx)?;
    }
    if let Some(t) = text {
        render("text", t, &ctx)?;
    }
    for (i, (_, s, h, t)) in variants.iter().enumerate() {
        if let Some(s) = s {
            render(&format!("variants[{i}].subject"), s, &ctx)?;
        }
        if let Some(h) = h {
            render(&format!("variants[{i}].html"), h, &ctx)?;
        }
        if let Some(t) = t {
            render(&format!("variants[{i}].text"), t, &ctx)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_variable_is_an_error_not_a_blank() {
        let ctx = context(&serde_json::json!({"recipient": {"id": "r1"}}));
        assert_eq!(
            render("subject", "Hi {{ recipient.id }}", &ctx).unwrap(),
            "Hi r1"
        );
        let e = render("subject", "Hi {{ recipient.name }}", &ctx).unwrap_err();
        assert_eq!(e.field, "subject");
        assert!(e.reason.contains("undefined"), "{e}");
    }

    #[test]
    fn check_refuses_a_misspelt_variable_and_accepts_free_attributes() {
        assert!(
            check(
                "{{ recipient.attributes.name }} {{ period.key }}",
                None,
                None,
                &[]
            )
            .is_ok()
        );
        let e = check("ok", Some("<p>{{ recipent.id }}</p>"), None, &[]).unwrap_err();
        assert_eq!(e.field, "html");
        let e = check("{{ oops", None, None, &[]).unwrap_err();
        assert_eq!(e.field, "subject");
        let v = vec![("b".to_string(), Some("{{ nope }}".to_string()), None, None)];
        assert_eq!(
            check("ok", None, None, &v).unwrap_err().field,
            "variants[0].subject"
        );
    }

    #[test]
    fn html_is_escaped_text_is_not() {
        let ctx = context(&serde_json::json!({"x": "<b>&"}));
        assert_eq!(render("html", "{{ x }}", &ctx).unwrap(), "&lt;b&gt;&amp;");
        assert_eq!(render("text", "{{ x }}", &ctx).unwrap(), "<b>&");
    }
}
