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

/// Every operation has its own `operationId` (`<resource>_<action>`): client generators name
/// methods after them, and duplicates (`list` nine times) made them unusable.
#[test]
fn operation_ids_are_unique() {
    let doc: serde_json::Value =
        serde_json::from_str(&kairos_server::openapi::openapi_json()).expect("JSON");
    let mut seen = std::collections::HashSet::new();
    let mut n = 0;
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            let Some(id) = op.get("operationId").and_then(|v| v.as_str()) else {
                panic!("{method} {path} has no operationId");
            };
            assert!(
                seen.insert(id.to_string()),
                "{id} is used twice ({method} {path})"
            );
            n += 1;
        }
    }
    assert!(n > 40, "only {n} operations");
}
