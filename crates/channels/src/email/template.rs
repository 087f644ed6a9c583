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
//!
//! # Limits
//!
//! Templates are written through the API, so one render is bounded (issue 12, finding 3):
//! at most [`FUEL`] template instructions (minijinja's fuel: nested `range(10000)` loops run
//! out of it) and at most [`MAX_OUTPUT_BYTES`] of output per template. [`check`] renders
//! against the sample at save time, so a template over either limit is refused then, naming
//! the field. Rendering is CPU work: async callers use [`check_blocking`] and
//! [`render_blocking`], which run it on tokio's blocking pool, never on an async worker.
//!
//! Fuel does not bound memory: doubling a string in a loop reaches terabytes in a hundred
//! instructions. A node therefore renders through a [`Renderer`]: [`Renderer::Workers`] sends
//! each check and render to a pool of worker processes ([`pool`]) that run under OS limits
//! (`RLIMIT_AS`, `RLIMIT_CPU`) and a timeout, so a template that exhausts its worker kills
//! only that worker; [`Renderer::InProcess`] (the library's default) renders here.

pub mod pool;
pub mod worker;

pub use pool::{Pool, PoolConfig, RenderError, Renderer};

use minijinja::value::{Object, Value};
use minijinja::{AutoEscape, Environment, ErrorKind, UndefinedBehavior};
use std::sync::Arc;

/// The most template instructions one render may execute (minijinja fuel). A mail template,
/// even with a loop over a digest's items, uses a few thousand.
pub const FUEL: u64 = 500_000;

/// The most bytes one template (subject, HTML or text) may render to.
pub const MAX_OUTPUT_BYTES: usize = 1 << 20;

/// A template that did not render.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
    env.set_fuel(Some(FUEL));
    env.set_auto_escape_callback(|name| {
        if name == "html" {
            AutoEscape::Html
        } else {
            AutoEscape::None
        }
    });
    env
}

/// A writer that refuses to grow past `max` bytes; `overflowed` says why a write failed.
struct CappedWriter {
    buf: Vec<u8>,
    max: usize,
    overflowed: bool,
}

impl std::io::Write for CappedWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + data.len() > self.max {
            self.overflowed = true;
            return Err(std::io::Error::other("template output limit reached"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Render one template. `field` is `subject`, `html` or `text` (html is auto-escaped). At most
/// [`FUEL`] instructions and [`MAX_OUTPUT_BYTES`] of output; this is CPU work, so async code
/// calls [`render_blocking`] instead.
pub fn render(field: &str, source: &str, ctx: &Value) -> Result<String, TemplateError> {
    render_capped(field, source, ctx, MAX_OUTPUT_BYTES)
}

/// Render a one-line template (a concurrency key) against `ctx`: expressions only (`{{ … }}`,
/// no `{% … %}` statements, so no loops), under the same fuel as a mail and at most
/// `max_output` bytes. Cheap enough to run in place: no statement means no loop, and each
/// expression's output is bounded by its inputs.
pub fn render_line(
    field: &str,
    source: &str,
    ctx: &Value,
    max_output: usize,
) -> Result<String, TemplateError> {
    if source.contains("{%") {
        return Err(TemplateError {
            field: field.to_string(),
            reason: "only {{ … }} expressions are allowed here, no {% … %} statements".into(),
        });
    }
    render_capped(field, source, ctx, max_output)
}

/// Check a one-line template ([`render_line`]) against [`sample_context`]: a syntax error, a
/// statement or a misspelt variable is refused, naming `field`.
pub fn check_line(field: &str, source: &str, max_output: usize) -> Result<(), TemplateError> {
    render_line(field, source, &sample_context(), max_output).map(|_| ())
}

/// Refuse the `*` operator inside tags (`{{ … }}`, `{% … %}`; not in string literals or
/// comments). minijinja repeats a sequence by an integer lazily and iterates it without fuel:
/// `{{ [] * 255550021534444 }}` ran for hours inside one instruction (found by the
/// `template_check` fuzz target). Mail templates have no use for multiplication that a
/// variable computed by the sender cannot give them.
fn refuse_repetition(field: &str, source: &str) -> Result<(), TemplateError> {
    let b = source.as_bytes();
    let (mut i, mut close): (usize, Option<&[u8]>) = (0, None);
    let mut quote: Option<u8> = None;
    while i < b.len() {
        match (close, quote) {
            (None, _) => {
                if b[i] == b'{' && i + 1 < b.len() {
                    close = match b[i + 1] {
                        b'{' => Some(b"}}"),
                        b'%' => Some(b"%}"),
                        b'#' => Some(b"#}"),
                        _ => None,
                    };
                    if close.is_some() {
                        i += 1;
                    }
                }
            }
            (Some(_), Some(q)) => {
                if b[i] == b'\\' {
                    i += 1;
                } else if b[i] == q {
                    quote = None;
                }
            }
            (Some(end), None) => {
                if b[i..].starts_with(end) {
                    close = None;
                    i += 1;
                } else if end != b"#}" && (b[i] == b'"' || b[i] == b'\'') {
                    quote = Some(b[i]);
                } else if end != b"#}" && b[i] == b'*' {
                    return Err(TemplateError {
                        field: field.to_string(),
                        reason: "the `*` operator is not allowed in templates (repeating a \
                                 string or a list is unbounded work); compute the value before \
                                 sending it"
                            .into(),
                    });
                }
            }
        }
        i += 1;
    }
    Ok(())
}

fn render_capped(
    field: &str,
    source: &str,
    ctx: &Value,
    max_output: usize,
) -> Result<String, TemplateError> {
    refuse_repetition(field, source)?;
    let mut e = env();
    let err = |e: minijinja::Error| {
        if e.kind() == ErrorKind::OutOfFuel {
            return TemplateError {
                field: field.to_string(),
                reason: format!(
                    "takes more than {FUEL} steps to render (the template limit); \
                     loops over large ranges are not allowed"
                ),
            };
        }
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
    let mut out = CappedWriter {
        buf: Vec::new(),
        max: max_output,
        overflowed: false,
    };
    match t.render_captured_to(ctx, &mut out) {
        Ok(_) => String::from_utf8(out.buf).map_err(|_| TemplateError {
            field: field.to_string(),
            reason: "rendered to invalid UTF-8".into(),
        }),
        Err(_) if out.overflowed => Err(TemplateError {
            field: field.to_string(),
            reason: format!(
                "renders to more than {max_output} bytes (the limit of one template's output)"
            ),
        }),
        Err(e) if e.kind() == ErrorKind::UndefinedError => {
            let mut te = err(e);
            if let Some(name) = first_undefined(&t, ctx) {
                te.reason = format!("undefined variable `{name}` ({})", te.reason);
            }
            Err(te)
        }
        Err(e) => Err(err(e)),
    }
}

/// The first variable the template reads (`user.name`, in sorted order) that `ctx` does not
/// have: minijinja's error says "undefined value" without naming it.
fn first_undefined(t: &minijinja::Template<'_, '_>, ctx: &Value) -> Option<String> {
    let mut names: Vec<String> = t.undeclared_variables(true).into_iter().collect();
    names.sort();
    names.into_iter().find(|name| {
        let mut v = ctx.clone();
        for part in name.split('.') {
            match v.get_attr(part) {
                Ok(next) if !next.is_undefined() => v = next,
                _ => return true,
            }
        }
        false
    })
}

/// Run `f` on tokio's blocking pool (templates are CPU work and must not stall the async
/// workers that serve `/healthz` and the API); a panic becomes an error of `field`.
async fn off_the_async_workers<T: Send + 'static>(
    field: &str,
    f: impl FnOnce() -> Result<T, TemplateError> + Send + 'static,
) -> Result<T, TemplateError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(TemplateError {
            field: field.to_string(),
            reason: format!("rendering failed: {e}"),
        })
    })
}

/// [`render`] for async callers: each `(field, source)` of `templates` in turn against `ctx`,
/// on the blocking pool. The first error stops.
pub async fn render_blocking(
    templates: Vec<(String, String)>,
    ctx: Value,
) -> Result<Vec<String>, TemplateError> {
    let first = templates
        .first()
        .map(|(f, _)| f.clone())
        .unwrap_or_default();
    off_the_async_workers(&first, move || {
        templates
            .iter()
            .map(|(field, source)| render(field, source, &ctx))
            .collect()
    })
    .await
}

/// [`check`] for async callers, on the blocking pool.
pub async fn check_blocking(
    subject: String,
    html: Option<String>,
    text: Option<String>,
    variants: Vec<VariantSources>,
) -> Result<(), TemplateError> {
    off_the_async_workers("subject", move || {
        check(&subject, html.as_deref(), text.as_deref(), &variants)
    })
    .await
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
        // Set in a digest's fan-out mails; empty in other topics' mails.
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

/// The `(field, source)` pairs [`check`] renders, in its order: subject, html, text, then
/// each variant's.
pub fn check_fields(
    subject: &str,
    html: Option<&str>,
    text: Option<&str>,
    variants: &[VariantSources],
) -> Vec<(String, String)> {
    let mut out = vec![("subject".to_string(), subject.to_string())];
    out.extend(html.map(|h| ("html".to_string(), h.to_string())));
    out.extend(text.map(|t| ("text".to_string(), t.to_string())));
    for (i, (_, s, h, t)) in variants.iter().enumerate() {
        for (part, src) in [("subject", s), ("html", h), ("text", t)] {
            if let Some(src) = src {
                out.push((format!("variants[{i}].{part}"), src.clone()));
            }
        }
    }
    out
}

/// Check a topic's templates (and its variants') against the sample context, under the same
/// fuel and output limits as a send. The error names the template. CPU work: async code calls
/// [`check_blocking`].
pub fn check(
    subject: &str,
    html: Option<&str>,
    text: Option<&str>,
    variants: &[VariantSources],
) -> Result<(), TemplateError> {
    let ctx = sample_context();
    for (field, source) in check_fields(subject, html, text, variants) {
        render(&field, &source, &ctx)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_repetition_is_refused_before_it_runs() {
        let ctx = sample_context();
        // The fuzzer's input: an empty list repeated 255 trillion times iterates without fuel.
        let e = render("html", "\x1be\"G\u{a5}\0{{0255550021534444* [] }}", &ctx).unwrap_err();
        assert_eq!(e.field, "html");
        assert!(e.reason.contains("`*`"), "{}", e.reason);
        for bad in [
            "{{ [1] * 3 }}",
            "{% set x = 'a' * 9 %}{{ x }}",
            "{{- 2 ** 3 -}}",
        ] {
            assert!(render("text", bad, &ctx).is_err(), "{bad}");
        }
        // A `*` outside tags, in a string literal or in a comment is text.
        for ok in ["5 * 3 = 15", "{{ '*' }} {{ \"a*b\" }}", "{# a * b #}*"] {
            assert!(render("text", ok, &ctx).is_ok(), "{ok}");
        }
        assert!(check("Hi {{ 2 * 2 }}", None, None, &[]).is_err());
    }

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
        assert!(
            e.reason
                .starts_with("undefined variable `recipient.name` ("),
            "the error names the variable: {e}"
        );
        let e = render(
            "text",
            "{% for i in [1] %}{{ i }} {{ missing }}{% endfor %}",
            &ctx,
        )
        .unwrap_err();
        assert!(
            e.reason.starts_with("undefined variable `missing` ("),
            "{e}"
        );
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

    /// Issue 12, finding 3: nested `range(10000)` loops stalled `/healthz` for seconds. They
    /// run out of fuel now, and the check at save time refuses them naming the field.
    #[test]
    fn nested_large_loops_run_out_of_fuel_and_are_refused_at_check() {
        let nested =
            "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}x";
        let started = std::time::Instant::now();
        let e = check("ok", None, Some(nested), &[]).unwrap_err();
        assert_eq!(e.field, "text");
        assert!(e.reason.contains("steps to render"), "{e}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        let v = vec![("b".to_string(), Some(nested.to_string()), None, None)];
        assert_eq!(
            check("ok", None, None, &v).unwrap_err().field,
            "variants[0].subject"
        );
        // An ordinary loop is well within the budget.
        let items = "{% for i in range(500) %}<li>{{ i }} {{ recipient.id }}</li>{% endfor %}";
        check("ok", Some(items), None, &[]).unwrap();
    }

    #[test]
    fn output_over_the_cap_fails_cleanly() {
        // 1 MiB + 1 byte in one instruction: a large value printed once.
        let over = "a".repeat(MAX_OUTPUT_BYTES + 1);
        let ctx = context(&serde_json::json!({ "x": over }));
        let e = render("html", "{{ x }}", &ctx).unwrap_err();
        assert_eq!(e.field, "html");
        assert!(
            e.reason.contains("renders to more than 1048576 bytes"),
            "{e}"
        );
        let fits = context(&serde_json::json!({ "x": "a".repeat(MAX_OUTPUT_BYTES) }));
        assert_eq!(
            render("html", "{{ x }}", &fits).unwrap().len(),
            MAX_OUTPUT_BYTES
        );
        let eleven = context(&serde_json::json!({ "x": "a".repeat(11) }));
        let small = render_capped("text", "{{ x }}", &eleven, 10).unwrap_err();
        assert!(small.reason.contains("more than 10 bytes"), "{small}");
        // At save time too.
        let e = check(&over, None, None, &[]).unwrap_err();
        assert_eq!(e.field, "subject");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn blocking_render_keeps_the_async_worker_free() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        // One async worker: a render on it would stop this ticker until the render ended.
        let ticks = Arc::new(AtomicUsize::new(0));
        let t = ticks.clone();
        let ticker = tokio::spawn(async move {
            loop {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                t.fetch_add(1, Ordering::SeqCst);
            }
        });
        tokio::task::yield_now().await;
        let before = ticks.load(Ordering::SeqCst);
        // Runs until its fuel is spent: milliseconds of CPU.
        let slow =
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";
        let out = render_blocking(
            vec![("text".into(), slow.into())],
            context(&serde_json::json!({})),
        )
        .await;
        let during = ticks.load(Ordering::SeqCst) - before;
        ticker.abort();
        assert!(out.unwrap_err().reason.contains("steps to render"));
        assert!(
            during >= 1,
            "the async worker was blocked during the render"
        );
        let ok = render_blocking(
            vec![
                ("subject".into(), "Hi {{ n }}".into()),
                ("text".into(), "{{ n }}!".into()),
            ],
            context(&serde_json::json!({"n": 7})),
        )
        .await
        .unwrap();
        assert_eq!(ok, vec!["Hi 7".to_string(), "7!".to_string()]);
        check_blocking("{{ oops".into(), None, None, vec![])
            .await
            .unwrap_err();
    }

    #[test]
    fn html_is_escaped_text_is_not() {
        let ctx = context(&serde_json::json!({"x": "<b>&"}));
        assert_eq!(render("html", "{{ x }}", &ctx).unwrap(), "&lt;b&gt;&amp;");
        assert_eq!(render("text", "{{ x }}", &ctx).unwrap(), "<b>&");
    }
}
