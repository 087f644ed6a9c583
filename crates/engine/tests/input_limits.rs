//! Input the API refuses (issue 12, finding 6): instants RFC 3339 cannot write back, and
//! idempotency keys with control characters. Each error names the field.

mod common;

use common::*;
use kairos_engine::Handler;
use kairos_engine::ops::{NewJob, NewSchedule};
use kairos_engine::{OpsError, OpsErrorKind};
use std::sync::Arc;

fn field_of(e: &OpsError) -> &str {
    match e.kind() {
        OpsErrorKind::Invalid { field, .. } => field,
        other => panic!("expected an invalid field, got {other:?}: {e}"),
    }
}

async fn harness() -> Harness {
    let handler = TestHandler::ok();
    Harness::new(
        t("2026-05-01T09:00:00Z"),
        &[("work", handler as Arc<dyn Handler>)],
    )
    .await
}

fn job(run_at: Option<&str>, key: Option<&str>) -> NewJob {
    NewJob {
        kind: Some("work".into()),
        run_at: run_at.map(str::to_string),
        idempotency_key: key.map(str::to_string),
        ..Default::default()
    }
}

#[tokio::test]
async fn instants_past_year_9999_in_utc_are_refused_naming_the_field() {
    let h = harness().await;
    // Year 10000 once in UTC, although written with a four-digit year.
    for bad in ["9999-12-31T23:30:00-01:00", "0000-01-01T00:30:00+01:00"] {
        let e = h
            .kairos
            .job_enqueue(job(Some(bad), None))
            .await
            .unwrap_err();
        assert_eq!(field_of(&e), "run_at", "{bad}");
        assert!(e.to_string().contains("0000 to 9999"), "{e}");
        let at: NewSchedule = serde_json::from_value(serde_json::json!({
            "name": "once", "kind": "work", "at": bad}))
        .unwrap();
        let e = h.kairos.schedule_create(at).await.unwrap_err();
        assert_eq!(field_of(&e), "at", "{bad}");
    }
    let (j, _) = h
        .kairos
        .job_enqueue(job(Some("9999-12-31T23:59:59Z"), None))
        .await
        .unwrap();
    assert_eq!(j.run_at.to_rfc3339(), "9999-12-31T23:59:59+00:00");
}

#[tokio::test]
async fn idempotency_keys_with_control_characters_are_refused() {
    let h = harness().await;
    for bad in [
        "a\nb",
        "tab\there",
        "nul\0",
        "esc\u{1b}[2J",
        "del\u{7f}",
        "",
    ] {
        let e = h
            .kairos
            .job_enqueue(job(None, Some(bad)))
            .await
            .unwrap_err();
        assert_eq!(field_of(&e), "idempotency_key", "{bad:?}");
    }
    let long = "k".repeat(256);
    let e = h
        .kairos
        .job_enqueue(job(None, Some(&long)))
        .await
        .unwrap_err();
    assert_eq!(field_of(&e), "idempotency_key");
    h.kairos
        .job_enqueue(job(None, Some("order-42 · ünïcode")))
        .await
        .unwrap();
}
