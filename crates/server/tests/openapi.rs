//! The committed OpenAPI document is the generated one. Regenerate with
//! `cargo run -p kairos -- openapi > docs/openapi.json`.

#[test]
fn committed_openapi_document_matches_the_code() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let generated = kairos_server::openapi::openapi_json();
    assert!(
        committed == generated,
        "docs/openapi.json is out of date: run `cargo run -p kairos -- openapi > docs/openapi.json`"
    );
    let doc: serde_json::Value = serde_json::from_str(&generated).expect("valid JSON");
    for p in [
        "/v1/schedules",
        "/v1/jobs/{id}",
        "/v1/dlq/replay",
        "/healthz",
    ] {
        assert!(doc["paths"].get(p).is_some(), "missing path {p}");
    }
}
