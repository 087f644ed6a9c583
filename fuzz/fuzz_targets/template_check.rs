//! The template checker (`PUT /v1/topics/{name}`: subject, HTML, text). Input: the subject,
//! the HTML and the text template, separated by NUL bytes (a missing one is absent).
//!
//! Beyond "no panic": the check is deterministic and its error names one of the three fields;
//! what it accepts renders against the sample context within the output cap; a template with
//! no `{` (no tag, no expression, no comment) is accepted and renders to itself (less one
//! trailing line ending, minijinja's default), HTML included (auto-escaping touches only values).
#![no_main]

use kairos_channels::email::template::{MAX_OUTPUT_BYTES, check, render, sample_context};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\0');
    let subject = parts.next().unwrap_or_default();
    let html = parts.next();
    let plain = parts.next();

    let result = check(subject, html, plain, &[]);
    assert_eq!(
        check(subject, html, plain, &[]),
        result,
        "the check is not deterministic"
    );
    let ctx = sample_context();
    match &result {
        Err(e) => {
            assert!(
                ["subject", "html", "text"].contains(&e.field.as_str()),
                "field {}",
                e.field
            );
            assert!(!e.reason.is_empty());
        }
        Ok(()) => {
            for (field, source) in [("subject", Some(subject)), ("html", html), ("text", plain)] {
                if let Some(s) = source {
                    let out = render(field, s, &ctx)
                        .unwrap_or_else(|e| panic!("checked {field} does not render: {e}"));
                    assert!(out.len() <= MAX_OUTPUT_BYTES);
                }
            }
        }
    }
    for (field, source) in [("subject", Some(subject)), ("html", html), ("text", plain)] {
        if let Some(s) = source
            && !s.contains('{')
        {
            let out = render(field, s, &ctx)
                .unwrap_or_else(|e| panic!("plain {field} {s:?} does not render: {e}"));
            // minijinja drops one trailing line ending: `\r\n`, `\n` or `\r`.
            let expect = s
                .strip_suffix("\r\n")
                .or_else(|| s.strip_suffix('\n'))
                .or_else(|| s.strip_suffix('\r'))
                .unwrap_or(s);
            assert_eq!(out, expect, "plain {field} renders differently");
        }
    }
});
