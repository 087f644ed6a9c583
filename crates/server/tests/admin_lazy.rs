//! The admin templates are compiled at the first admin page, not when the server starts (an
//! idle node whose admin UI nobody opens does not hold them; `docs/benchmarks-history.md`, "A
//! smaller idle node"). Alone in its test binary, so no other test has rendered a page in this
//! process.

use chrono::{DateTime, Utc};

mod common;

#[tokio::test]
async fn admin_templates_are_compiled_at_the_first_admin_page_not_at_start() {
    let t0: DateTime<Utc> = DateTime::parse_from_rfc3339("2026-12-04T10:00:00Z")
        .expect("instant")
        .with_timezone(&Utc);
    let app = common::TestApp::start(t0, "admin-lazy-test-token-of-at-least-32-chars").await;
    // The API answers without the admin templates.
    let health = reqwest::get(format!("{}/healthz", app.base))
        .await
        .expect("health");
    assert!(health.status().is_success(), "{}", health.status());
    assert!(
        !kairos_server::admin::templates_compiled(),
        "the server compiled the admin templates before any admin page"
    );
    let login = reqwest::get(format!("{}/admin/login", app.base))
        .await
        .expect("login page");
    assert_eq!(login.status(), reqwest::StatusCode::OK);
    assert!(login.text().await.expect("body").contains("<form"));
    assert!(kairos_server::admin::templates_compiled());
}
