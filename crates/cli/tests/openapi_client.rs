//! OpenAPI fit for generators (issue 35): a Python client generated from `docs/openapi.json`
//! by `openapi-python-client` (a common generator; `.ci/run` installs it) runs a flow against
//! a live `kairos serve` — create a job, get it, list jobs by an enum state, create a schedule
//! with the `iso_week` period alias, read it back, cancel without the optional body
//! (`openapi_client/flow.py`). Without the generator the test skips loudly, unless `CI=true`.

mod common;

use common::Server;
use std::path::Path;
use std::process::Command;

fn generator_present() -> bool {
    Command::new("openapi-python-client")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[tokio::test]
async fn a_client_generated_from_the_document_runs_a_flow_against_a_live_serve() {
    if !generator_present() {
        let msg = "openapi-python-client is not installed (python3 -m pip install \
                   openapi-python-client): the generated-client test did not run";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
        eprintln!("SKIPPED (loudly): {msg}");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let work = tempfile::tempdir().expect("tempdir");
    let generated = Command::new("openapi-python-client")
        .args([
            "generate",
            "--meta",
            "none",
            "--output-path",
            "kairos_client",
            "--path",
        ])
        .arg(root.join("docs/openapi.json"))
        .current_dir(work.path())
        .output()
        .expect("run openapi-python-client");
    assert!(
        generated.status.success(),
        "openapi-python-client could not generate a client from docs/openapi.json:\n{}\n{}",
        String::from_utf8_lossy(&generated.stdout),
        String::from_utf8_lossy(&generated.stderr)
    );

    let data = tempfile::tempdir().expect("tempdir");
    let server = Server::start(data.path(), Some(common::TOKEN)).await;
    let flow = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openapi_client/flow.py");
    let out = tokio::process::Command::new("python3")
        .arg(&flow)
        .current_dir(work.path())
        .env("PYTHONPATH", work.path())
        .env("KAIROS_URL", &server.base)
        .env("KAIROS_API_TOKEN", common::TOKEN)
        .env("APP_URL", "http://127.0.0.1:9")
        .output()
        .await
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("generated client flow: ok"),
        "the generated client's flow failed ({}):\n{stdout}\n{}\n--- server ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        server.stderr()
    );
    let status = server.terminate(std::time::Duration::from_secs(30)).await;
    assert!(status.success(), "kairos serve exited with {status}");
}
