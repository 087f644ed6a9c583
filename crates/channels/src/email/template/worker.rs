//! The render worker's side of the protocol: requests in, replies out, one JSON object per
//! line. `kairos __render-worker` sets its OS limits and then calls [`serve`] on its stdin
//! and stdout; the parent is [`super::pool`].
//!
//! Before each template the worker writes a [`Reply::Start`] naming it, so that when the
//! worker dies inside a render (an allocation refused under `RLIMIT_AS` aborts the process)
//! the parent knows which field killed it. A request ends with one [`Reply::Done`].

use super::{TemplateError, VariantSources, context, render, sample_context};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};

/// The longest request line the worker reads (templates, variants and the context of one
/// mail). The API caps a topic far below this; a longer line is refused, not buffered.
pub const MAX_REQUEST_BYTES: u64 = 64 << 20;

/// What the parent asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// [`super::check`]: a topic's templates against the sample context.
    Check {
        /// The subject template.
        subject: String,
        /// The HTML template.
        html: Option<String>,
        /// The text template.
        text: Option<String>,
        /// The variants' templates.
        variants: Vec<VariantSources>,
    },
    /// [`super::render`] of each `(field, source)` in turn against `ctx`.
    Render {
        /// `(field, source)` pairs.
        templates: Vec<(String, String)>,
        /// The context, as JSON (see [`super::context`]).
        ctx: serde_json::Value,
    },
}

/// What the worker answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    /// The worker starts rendering `field`.
    Start {
        /// The template's field.
        field: String,
    },
    /// The request's result: the rendered templates (none for a check), or the first error.
    Done {
        /// The outcome.
        result: Result<Vec<String>, TemplateError>,
    },
}

fn send(out: &mut impl Write, reply: &Reply) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(reply).map_err(std::io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line)?;
    out.flush()
}

/// Run `f` (one template's render) and turn a panic inside it (a bug in the template engine
/// reached by some input) into an error of `field`: the worker answers and serves on, and the
/// parent reports the template instead of a dead worker.
fn guarded(
    field: &str,
    f: impl FnOnce() -> Result<String, TemplateError>,
) -> Result<String, TemplateError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        Err(TemplateError {
            field: field.to_string(),
            reason: format!("the template engine failed on this template ({what})"),
        })
    })
}

/// Run one request: a `Start` per template, then `Done`.
fn answer(req: Request, out: &mut impl Write) -> std::io::Result<()> {
    let (templates, ctx, keep) = match req {
        Request::Check {
            subject,
            html,
            text,
            variants,
        } => (
            super::check_fields(&subject, html.as_deref(), text.as_deref(), &variants),
            sample_context(),
            false,
        ),
        Request::Render { templates, ctx } => (templates, context(&ctx), true),
    };
    let mut rendered = Vec::new();
    for (field, source) in &templates {
        send(
            out,
            &Reply::Start {
                field: field.clone(),
            },
        )?;
        match guarded(field, || render(field, source, &ctx)) {
            Ok(s) if keep => rendered.push(s),
            Ok(_) => {}
            Err(e) => return send(out, &Reply::Done { result: Err(e) }),
        }
    }
    send(
        out,
        &Reply::Done {
            result: Ok(rendered),
        },
    )
}

/// Serve requests from `input` until it ends (the parent closed the pipe). A line that is not
/// a request, or longer than [`MAX_REQUEST_BYTES`], is answered with an error of the field
/// `request` and ends the loop (the stream can no longer be trusted to be in step).
pub fn serve(input: impl BufRead, out: impl Write) -> std::io::Result<()> {
    serve_limited(input, out, MAX_REQUEST_BYTES)
}

fn serve_limited(input: impl BufRead, mut out: impl Write, max: u64) -> std::io::Result<()> {
    let mut input = input.take(max + 1);
    let mut line = Vec::new();
    loop {
        line.clear();
        input.set_limit(max + 1);
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let bad = |reason: String| Reply::Done {
            result: Err(TemplateError {
                field: "request".into(),
                reason,
            }),
        };
        if line.len() as u64 > max {
            return send(&mut out, &bad(format!("longer than {max} bytes")));
        }
        match serde_json::from_slice::<Request>(&line) {
            Ok(req) => answer(req, &mut out)?,
            Err(e) => return send(&mut out, &bad(format!("not a render request: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replies(input: &str) -> Vec<Reply> {
        let mut out = Vec::new();
        serve(input.as_bytes(), &mut out).unwrap();
        out.split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect()
    }

    #[test]
    fn a_render_names_each_template_before_it_runs_then_answers() {
        let req = Request::Render {
            templates: vec![
                ("subject".into(), "Hi {{ n }}".into()),
                ("text".into(), "{{ n }}!".into()),
            ],
            ctx: serde_json::json!({"n": 7}),
        };
        let check = Request::Check {
            subject: "ok".into(),
            html: Some("{{ nope }}".into()),
            text: None,
            variants: vec![],
        };
        let input = format!(
            "{}\n{}\n",
            serde_json::to_string(&req).unwrap(),
            serde_json::to_string(&check).unwrap()
        );
        let r = replies(&input);
        let start = |f: &str| Reply::Start { field: f.into() };
        assert_eq!(r[0], start("subject"));
        assert_eq!(r[1], start("text"));
        assert_eq!(
            r[2],
            Reply::Done {
                result: Ok(vec!["Hi 7".into(), "7!".into()])
            }
        );
        assert_eq!(r[3], start("subject"));
        assert_eq!(r[4], start("html"));
        match &r[5] {
            Reply::Done { result: Err(e) } => assert_eq!(e.field, "html"),
            other => panic!("{other:?}"),
        }
        assert_eq!(r.len(), 6);
    }

    #[test]
    fn a_panic_in_a_render_is_an_error_of_its_field() {
        let e = guarded("html", || panic!("index out of bounds")).unwrap_err();
        assert_eq!(e.field, "html");
        assert!(e.reason.contains("index out of bounds"), "{e}");
        assert_eq!(guarded("text", || Ok("fine".into())).unwrap(), "fine");
    }

    #[test]
    fn a_request_longer_than_the_limit_is_refused_unread() {
        let req = Request::Render {
            templates: vec![("text".into(), "x".repeat(100))],
            ctx: serde_json::json!({}),
        };
        let line = format!("{}\n", serde_json::to_string(&req).unwrap());
        let mut out = Vec::new();
        serve_limited(line.as_bytes(), &mut out, 50).unwrap();
        let r: Reply = serde_json::from_slice(out.trim_ascii_end()).unwrap();
        match r {
            Reply::Done { result: Err(e) } => {
                assert_eq!(e.field, "request");
                assert!(e.reason.contains("longer than 50 bytes"), "{e}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_line_that_is_not_a_request_is_an_error_of_the_request() {
        let r = replies("{\"op\": \"format_disk\"}\n{\"op\": \"check\"}\n");
        assert_eq!(r.len(), 1, "the loop stops: {r:?}");
        match &r[0] {
            Reply::Done { result: Err(e) } => {
                assert_eq!(e.field, "request");
                assert!(e.reason.contains("not a render request"), "{e}");
            }
            other => panic!("{other:?}"),
        }
    }
}
