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

fn doc() -> serde_json::Value {
    serde_json::from_str(&kairos_server::openapi::openapi_json()).expect("JSON")
}

/// The `$ref` a property or parameter schema points at, through an optional `oneOf` with null.
fn ref_of(schema: &serde_json::Value) -> String {
    if let Some(r) = schema["$ref"].as_str() {
        return r.to_string();
    }
    schema["oneOf"]
        .as_array()
        .and_then(|arms| arms.iter().find_map(|a| a["$ref"].as_str()))
        .unwrap_or_default()
        .to_string()
}

/// Closed sets of values are enums generators can offer (issue 35): the job state in views,
/// bodies and the `GET /v1/jobs` filter, the kind a request creates (views and filters keep the
/// kind a string: a database may hold an embedding application's kinds), the period with its `iso_week` alias, the
/// schedule state, attempt outcomes and error classes, channel kinds; the open `all:N` misfire
/// policy is a pattern.
#[test]
fn closed_sets_are_enums_and_open_values_patterns() {
    let doc = doc();
    let schemas = &doc["components"]["schemas"];
    let values = |name: &str| -> Vec<String> {
        schemas[name]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("{name} is not an enum: {}", schemas[name]))
            .iter()
            .map(|v| v.as_str().expect("string").to_string())
            .collect()
    };
    let states: Vec<String> = kairos_core::JobState::ALL
        .iter()
        .map(|s| s.as_str().to_string())
        .collect();
    assert_eq!(values("JobState"), states);
    assert_eq!(values("JobKind"), ["webhook", "http", "email", "digest"]);
    assert_eq!(values("ChannelKind"), ["webhook", "http"]);
    assert!(values("Period").contains(&"iso_week".to_string()));
    assert_eq!(values("ScheduleState"), ["active", "paused", "finished"]);
    assert!(
        schemas["Misfire"]["pattern"]
            .as_str()
            .is_some_and(|p| p.contains("all:"))
    );
    for (schema, prop, target) in [
        ("JobView", "state", "JobState"),
        ("JobBody", "kind", "JobKind"),
        ("ScheduleView", "period", "Period"),
        ("ScheduleView", "misfire", "Misfire"),
        ("ScheduleView", "state", "ScheduleState"),
        ("ScheduleView", "overlap", "Overlap"),
        ("ScheduleBody", "period", "Period"),
        ("ScheduleBody", "misfire", "Misfire"),
        ("ScheduleBody", "kind", "JobKind"),
        ("ChannelBody", "kind", "ChannelKind"),
        ("AttemptView", "outcome", "AttemptOutcome"),
        ("AttemptView", "error_class", "ErrorClass"),
        ("ChannelView", "status", "OccurrenceStatus"),
        ("DigestBody", "summarizer", "Summarizer"),
    ] {
        let p = &schemas[schema]["properties"][prop];
        assert_eq!(
            ref_of(p),
            format!("#/components/schemas/{target}"),
            "{schema}.{prop}: {p}"
        );
    }
    let params = doc["paths"]["/v1/jobs"]["get"]["parameters"]
        .as_array()
        .expect("parameters");
    let state = params.iter().find(|p| p["name"] == "state").expect("state");
    assert_eq!(ref_of(&state["schema"]), "#/components/schemas/JobState");
}

/// A body a route reads as optional is marked `required: false`, with the body's own schema
/// (not `null`), so a generated client can leave it out.
#[test]
fn optional_request_bodies_are_marked_optional() {
    let doc = doc();
    for path in ["/v1/jobs/{id}/cancel", "/v1/endpoints/{id}/rotate"] {
        let body = &doc["paths"][path]["post"]["requestBody"];
        assert_eq!(body["required"], false, "{path}: {body}");
        let schema = &body["content"]["application/json"]["schema"];
        assert!(schema["$ref"].is_string(), "{path}: {schema}");
    }
    assert_eq!(
        doc["paths"]["/v1/jobs"]["post"]["requestBody"]["required"],
        true
    );
}

/// The kinds' request parts are documented from the kinds (issue 32): each a typed component
/// on the bodies that take it (`digest` on schedules only, never on a channel), and the bodies
/// take no other field.
#[test]
fn i32_kind_parts_are_typed_properties_of_the_bodies_that_take_them() {
    let doc = doc();
    let schemas = &doc["components"]["schemas"];
    let body = |name: &str| &schemas[name]["properties"];
    assert_eq!(
        ref_of(&body("JobBody")["http"]),
        "#/components/schemas/HttpBody"
    );
    assert_eq!(
        ref_of(&body("ScheduleBody")["http"]),
        "#/components/schemas/HttpBody"
    );
    assert_eq!(
        ref_of(&body("ChannelBody")["http"]),
        "#/components/schemas/HttpBody"
    );
    assert_eq!(
        ref_of(&body("ScheduleBody")["digest"]),
        "#/components/schemas/DigestBody"
    );
    assert!(
        body("JobBody").get("digest").is_none(),
        "a digest job's payload is its definition"
    );
    assert!(
        body("ChannelBody").get("digest").is_none(),
        "a digest is no channel"
    );
    assert!(
        body("JobBody").get("parts").is_none(),
        "the map is not a field of the API"
    );
    for name in ["JobBody", "ScheduleBody", "ChannelBody"] {
        assert_eq!(schemas[name]["additionalProperties"], false, "{name}");
    }
    assert!(schemas["HttpBody"]["properties"]["url"].is_object());
    assert!(schemas["DigestBody"]["properties"]["feeds"].is_object());
    assert!(schemas["RateLimitBody"].is_object());
}

/// Every instant the API answers with (`created_at`, `run_at`, `since`, a backfill's `from`
/// and `to` …: RFC 3339, written by `views::ts`) is a `date-time` string in the document, so
/// that a generated client reads it as a timestamp rather than as text.
#[test]
fn instants_in_responses_are_date_time_strings() {
    let doc = doc();
    let mut instants = 0;
    for (name, schema) in doc["components"]["schemas"].as_object().expect("schemas") {
        if !(name.ends_with("View") || name == "ArtifactSummary") {
            continue;
        }
        let Some(props) = schema["properties"].as_object() else {
            continue;
        };
        for (prop, p) in props {
            let instant =
                prop.ends_with("_at") || ["since", "at", "from", "to"].contains(&prop.as_str());
            let string =
                p["type"] == "string" || p["type"] == serde_json::json!(["string", "null"]);
            if instant && string {
                instants += 1;
                assert_eq!(p["format"], "date-time", "{name}.{prop} is an instant: {p}");
            }
        }
    }
    assert!(instants >= 40, "the views' instants were found: {instants}");
}
