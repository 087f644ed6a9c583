//! The email CLI: `kairos bench --email` sends one mail per recipient through the real
//! handler and reports it; `kairos template preview` renders a topic for a recipient.

mod common;

use common::BIN;
use kairos_store::prelude::*;
use std::process::Command;

#[test]
fn bench_email_to_the_file_outbox_sends_every_mail_and_reports_json() {
    let out = Command::new(BIN)
        .args([
            "bench",
            "--email",
            "file",
            "--jobs",
            "300",
            "--concurrency",
            "20",
        ])
        .output()
        .expect("run kairos bench");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().expect("a JSON line");
    let v: serde_json::Value = serde_json::from_str(last).expect("JSON");
    assert_eq!(v["bench"], "email");
    assert_eq!(v["transport"], "file");
    assert_eq!(v["mails"], 300);
    let bad = Command::new(BIN)
        .args(["bench", "--email", "pigeon", "--jobs", "1"])
        .output()
        .expect("run kairos bench");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--email"));
}

#[test]
fn template_preview_renders_a_topic_for_a_recipient() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kairos.db");
    // Set up through the library on the same SQLite file the CLI opens.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = kairos_store_sqlite::SqliteStore::open(&db).await.unwrap();
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-30T00:00:00Z")
            .unwrap()
            .to_utc();
        store
            .recipient_upsert(kairos_store::RecipientUpsert {
                id: "usr_1".into(),
                email: "aki@example.com".into(),
                timezone: "Asia/Tokyo".into(),
                locale: None,
                attributes: serde_json::json!({"name": "Aki"}),
                state: kairos_store::RecipientState::Active,
                endpoint_id: None,
                now,
            })
            .await
            .unwrap();
        store
            .topic_put(kairos_store::TopicPut {
                name: "weekly".into(),
                subject: "Week {{ period.key }} for {{ recipient.attributes.name }}".into(),
                html: Some("<p>{{ recipient.attributes.name }}</p>".into()),
                text: Some("Hi {{ recipient.attributes.name }}".into()),
                variants: vec![],
                entitlement_url: None,
                entitlement_timeout_ms: None,
                now,
            })
            .await
            .unwrap();
        store.close().await;
    });
    let out = Command::new(BIN)
        .args([
            "template",
            "preview",
            "--topic",
            "weekly",
            "--recipient",
            "usr_1",
            "--period",
            "2026-W49",
        ])
        .env("KAIROS_DATA_DIR", dir.path())
        .output()
        .expect("run kairos template preview");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("Subject: Week 2026-W49 for Aki"), "{s}");
    assert!(s.contains("Hi Aki") && s.contains("<p>Aki</p>"), "{s}");
}

#[test]
fn recipient_import_and_subscription_put_work_on_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("people.jsonl");
    let lines: Vec<String> = (0..25)
        .map(|i| {
            format!(r#"{{"id": "p{i:03}", "email": "p{i}@example.com", "timezone": "Asia/Tokyo"}}"#)
        })
        .collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    let kairos = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .env("KAIROS_DATA_DIR", dir.path())
            .output()
            .expect("run kairos")
    };
    let out = kairos(&["recipient", "import", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("upserted: 25"));
    let out = kairos(&["subscription", "put", "p007", "weekly", "--target", "t1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = kairos(&["subscription", "put", "nobody", "weekly"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nobody"));
    // Bad input names the field; the list never prints addresses.
    let out = kairos(&["recipient", "put", "p999", "--email", "nope"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("email"));
    let out = kairos(&["recipient", "list", "--limit", "3"]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("p002") && !s.contains("@example.com"), "{s}");
}
