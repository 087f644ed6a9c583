//! `kairos --server URL` (or `KAIROS_URL`): the commands that read or change data run
//! through a running server's API and print what the local mode prints, table and `--json`
//! alike; the new `topic`, `occurrence`, `artifact` and `subscription list|show|delete`
//! commands, locally and through the server; errors that name the token or the URL; commands
//! without an API refuse `--server`.
//!
//! Each test starts a real `kairos serve` on 127.0.0.1 port 0 (SQLite; one on PostgreSQL
//! with `KAIROS_TEST_POSTGRES=required`) and a local webhook receiver answering 200.

mod common;

use common::{SECRET, Server, TOKEN, api, kairos_cmd};
use reqwest::Method;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// The outcome of one CLI run: exit code, stdout, stderr.
type Out = (Option<i32>, String, String);

fn output(mut c: std::process::Command) -> Out {
    let out = c.output().expect("run kairos");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `kairos <args> --data-dir <dir>`, on the database.
fn local(dir: &Path, args: &[&str]) -> Out {
    let mut c = kairos_cmd();
    c.args(args).arg("--data-dir").arg(dir);
    output(c)
}

/// `kairos --server <base> --token <token> <args>`, from a folder with no database.
fn remote(base: &str, token: &str, args: &[&str]) -> Out {
    let nowhere = tempfile::tempdir().expect("tempdir");
    let mut c = kairos_cmd();
    c.args(["--server", base, "--token", token])
        .args(args)
        .current_dir(nowhere.path());
    let out = output(c);
    assert_eq!(
        std::fs::read_dir(nowhere.path()).expect("dir").count(),
        0,
        "--server {args:?} wrote nothing locally"
    );
    out
}

fn ok(out: Out, what: &str) -> String {
    assert_eq!(out.0, Some(0), "{what}: {}{}", out.1, out.2);
    out.1
}

fn json_of(out: Out, what: &str) -> Value {
    let s = ok(out, what);
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {s}"))
}

/// A webhook receiver on 127.0.0.1 that answers every request 200 (for at most 64 requests).
fn receiver() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for s in l.incoming().take(64) {
            let Ok(mut s) = s else { break };
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 65536];
            let _ = s.read(&mut buf);
            let _ =
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    format!("http://{addr}/hook")
}

/// What a test works on: a server, its data directory, a fired schedule whose job
/// succeeded, a topic `news` with recipient `r1` subscribed, an artifact `ai-news/2026-10-20`
/// (SQLite only).
struct World {
    server: Server,
    _dir: tempfile::TempDir,
    schedule: String,
    period: String,
    job: String,
}

impl World {
    fn dir(&self) -> &Path {
        self._dir.path()
    }
}

async fn world(env: &[(&str, &str)]) -> World {
    kairos_testkit::init_crypto();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start_with(dir.path(), Some(TOKEN), env).await;
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let base = server.base.clone();
    let (s, sch) = api(
        &http,
        Method::POST,
        format!("{base}/v1/schedules"),
        Some(
            json!({"name": "weekly", "cron": "0 9 * * 1", "timezone": "Europe/Paris",
                    "webhook": {"url": receiver(), "secret": SECRET}}),
        ),
    )
    .await;
    assert_eq!(s, 201, "{sch}");
    let schedule = sch["id"].as_str().expect("id").to_string();
    let (s, fired) = api(
        &http,
        Method::POST,
        format!("{base}/v1/schedules/{schedule}/fire"),
        None,
    )
    .await;
    assert_eq!(s, 200, "{fired}");
    let job = fired["job_ids"][0].as_str().expect("a job").to_string();
    let period = fired["period_key"].as_str().expect("period").to_string();
    // Wait (bounded) for the job to succeed, so every later read sees the same state.
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, j) = api(&http, Method::GET, format!("{base}/v1/jobs/{job}"), None).await;
        if j["state"] == "succeeded" {
            break;
        }
        assert!(Instant::now() < until, "the job did not succeed: {j}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for (path, body) in [
        (
            "/v1/topics/news",
            json!({"subject": "News for {{ recipient.id }}"}),
        ),
        ("/v1/recipients/r1", json!({"email": "r1@example.com"})),
        ("/v1/subscriptions/r1/news", json!({"target": "weekly"})),
    ] {
        let (s, v) = api(&http, Method::PUT, format!("{base}{path}"), Some(body)).await;
        assert_eq!(s, 200, "{path}: {v}");
    }
    World {
        server,
        _dir: dir,
        schedule,
        period,
        job,
    }
}

/// Store an artifact in the node's SQLite database (what a digest job does).
async fn put_artifact(dir: &Path) {
    use sqlx::Connection;
    let url = format!("sqlite://{}", dir.join("kairos.db").display());
    let mut c = sqlx::SqliteConnection::connect(&url).await.expect("sqlite");
    sqlx::query(
        "INSERT INTO artifacts (name, period_key, content, data, job_id, schedule_id, created_at) \
         VALUES ('ai-news', '2026-10-20', 'Three things happened.', '{\"items\": []}', NULL, NULL, \
         1792483200000)",
    )
    .execute(&mut c)
    .await
    .expect("insert artifact");
    c.close().await.expect("close");
}

/// Each command prints the same JSON and the same table locally and through the server.
fn same_both_ways(w: &World, commands: &[&[&str]]) {
    for args in commands {
        let mut with_json = args.to_vec();
        with_json.push("--json");
        let here = json_of(local(w.dir(), &with_json), &format!("local {args:?}"));
        let there = json_of(
            remote(&w.server.base, TOKEN, &with_json),
            &format!("--server {args:?}"),
        );
        assert_eq!(here, there, "{args:?} --json");
        let here = ok(local(w.dir(), args), &format!("local {args:?}"));
        let there = ok(
            remote(&w.server.base, TOKEN, args),
            &format!("--server {args:?}"),
        );
        assert_eq!(here, there, "{args:?} table");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_schedule_and_dlq_commands_through_the_server_print_what_the_local_mode_prints() {
    let w = world(&[]).await;
    same_both_ways(
        &w,
        &[
            &["job", "list"],
            &[
                "job",
                "list",
                "--schedule",
                &w.schedule,
                "--state",
                "succeeded",
            ],
            &["job", "show", &w.job],
            &["dlq", "list"],
            &["schedule", "list"],
            &["schedule", "show", &w.schedule],
            &["endpoint", "list"],
            &["suppression", "list"],
            &["recipient", "list"],
        ],
    );
    let shown = ok(
        remote(&w.server.base, TOKEN, &["job", "show", &w.job]),
        "job show",
    );
    assert!(
        shown.contains("state:") && shown.contains("succeeded"),
        "{shown}"
    );

    // Changes go through the API too: pause, then the schedule is paused for everyone.
    let paused = json_of(
        remote(
            &w.server.base,
            TOKEN,
            &["schedule", "pause", &w.schedule, "--json"],
        ),
        "schedule pause",
    );
    assert_eq!(paused["state"], "paused", "{paused}");
    let here = json_of(
        local(w.dir(), &["schedule", "show", &w.schedule, "--json"]),
        "local show",
    );
    assert_eq!(here["state"], "paused");

    // A 422 names its field.
    let (code, _, stderr) = remote(&w.server.base, TOKEN, &["job", "list", "--state", "bogus"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("error: state:"), "{stderr}");
    assert!(
        !stderr.contains("state: state:"),
        "the field once: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kairos_url_and_kairos_api_token_select_the_server_like_the_flags() {
    let w = world(&[]).await;
    let nowhere = tempfile::tempdir().expect("tempdir");
    let mut c = kairos_cmd();
    c.args(["topic", "list", "--json"])
        .env("KAIROS_URL", &w.server.base)
        .env("KAIROS_API_TOKEN", TOKEN)
        .current_dir(nowhere.path());
    let by_env = json_of(output(c), "KAIROS_URL topic list");
    let by_flag = json_of(
        remote(&w.server.base, TOKEN, &["topic", "list", "--json"]),
        "--server topic list",
    );
    assert_eq!(by_env, by_flag);
    assert_eq!(by_env["data"][0]["name"], "news", "{by_env}");
    assert_eq!(std::fs::read_dir(nowhere.path()).expect("dir").count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_list_and_show_locally_and_through_the_server() {
    let w = world(&[]).await;
    same_both_ways(&w, &[&["topic", "list"], &["topic", "show", "news"]]);
    let t = json_of(local(w.dir(), &["topic", "show", "news", "--json"]), "show");
    assert_eq!(t["subject"], "News for {{ recipient.id }}", "{t}");
    let table = ok(local(w.dir(), &["topic", "list"]), "topic list");
    assert!(table.starts_with("NAME"), "{table}");
    assert!(table.contains("news"), "{table}");
    let (code, _, stderr) = remote(&w.server.base, TOKEN, &["topic", "show", "nope"]);
    assert_ne!(code, Some(0));
    assert!(stderr.contains("nope"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn occurrence_list_and_show_locally_and_through_the_server() {
    let w = world(&[]).await;
    let (s, p) = (w.schedule.as_str(), w.period.as_str());
    same_both_ways(
        &w,
        &[
            &["occurrence", "list", "--schedule", s],
            &["occurrence", "list", "--schedule", s, "--state", "success"],
            &["occurrence", "list", "--schedule", s, "--period", p],
            &["occurrence", "show", "--schedule", s, "--period", p],
        ],
    );
    let l = json_of(
        remote(
            &w.server.base,
            TOKEN,
            &["occurrence", "list", "--schedule", s, "--json"],
        ),
        "occurrence list",
    );
    assert_eq!(l["data"][0]["period_key"], p, "{l}");
    assert_eq!(l["data"][0]["status"], "success", "{l}");
    // --state filters on the occurrence's status.
    let none = json_of(
        local(
            w.dir(),
            &[
                "occurrence",
                "list",
                "--schedule",
                s,
                "--state",
                "failure",
                "--json",
            ],
        ),
        "filtered",
    );
    assert_eq!(none["data"], json!([]), "{none}");
    let (code, _, stderr) = local(
        w.dir(),
        &["occurrence", "list", "--schedule", s, "--state", "bogus"],
    );
    assert_eq!(code, Some(2));
    assert!(stderr.contains("state"), "{stderr}");
    // Through the server the API refuses it (a 422 naming `state`): the same exit and field.
    let (code, _, stderr) = remote(
        &w.server.base,
        TOKEN,
        &["occurrence", "list", "--schedule", s, "--state", "bogus"],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("error: state:"), "{stderr}");
    let shown = ok(
        local(
            w.dir(),
            &["occurrence", "show", "--schedule", s, "--period", p],
        ),
        "show",
    );
    assert!(
        shown.contains("status:") && shown.contains("CHANNEL"),
        "{shown}"
    );
    let (code, _, stderr) = remote(
        &w.server.base,
        TOKEN,
        &[
            "occurrence",
            "show",
            "--schedule",
            s,
            "--period",
            "1999-W01",
        ],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("1999-W01"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifact_list_and_show_locally_and_through_the_server() {
    let w = world(&[]).await;
    put_artifact(w.dir()).await;
    same_both_ways(
        &w,
        &[
            &["artifact", "list"],
            &["artifact", "list", "--name", "ai-news"],
            &["artifact", "show", "ai-news", "2026-10-20"],
        ],
    );
    let a = json_of(
        remote(
            &w.server.base,
            TOKEN,
            &["artifact", "show", "ai-news", "2026-10-20", "--json"],
        ),
        "artifact show",
    );
    assert_eq!(a["content"], "Three things happened.", "{a}");
    let shown = ok(
        local(w.dir(), &["artifact", "show", "ai-news", "2026-10-20"]),
        "show",
    );
    assert!(shown.contains("Three things happened."), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscription_list_show_and_delete_locally_and_through_the_server() {
    let w = world(&[]).await;
    same_both_ways(
        &w,
        &[
            &["subscription", "list"],
            &["subscription", "list", "--topic", "news"],
            &["subscription", "show", "r1", "news"],
        ],
    );
    let l = json_of(
        remote(&w.server.base, TOKEN, &["subscription", "list", "--json"]),
        "list",
    );
    assert_eq!(l["data"][0]["recipient_id"], "r1", "{l}");
    assert_eq!(l["data"][0]["targets"], json!(["weekly"]), "{l}");
    // Delete through the server; then it is gone for the local mode too.
    ok(
        remote(
            &w.server.base,
            TOKEN,
            &["subscription", "delete", "r1", "news"],
        ),
        "delete",
    );
    let (code, _, _) = local(w.dir(), &["subscription", "show", "r1", "news"]);
    assert_ne!(code, Some(0));
    // Put it back locally, delete it locally.
    let (code, _, stderr) = local(
        w.dir(),
        &["subscription", "put", "r1", "news", "--target", "t"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("warning"), "news is defined: {stderr}");
    // A topic nobody defined (a typo): kept, with a warning naming it, both ways.
    for out in [
        local(w.dir(), &["subscription", "put", "r1", "newz"]),
        remote(
            &w.server.base,
            TOKEN,
            &["subscription", "put", "r1", "newz"],
        ),
    ] {
        assert_eq!(out.0, Some(0), "{}", out.2);
        assert!(out.2.contains("warning: no topic \"newz\""), "{}", out.2);
    }
    ok(
        local(w.dir(), &["subscription", "delete", "r1", "newz"]),
        "delete newz",
    );
    let d = json_of(
        local(w.dir(), &["subscription", "delete", "r1", "news", "--json"]),
        "local delete",
    );
    assert_eq!(d["deleted"]["topic"], "news", "{d}");
    let l = json_of(
        local(w.dir(), &["subscription", "list", "--json"]),
        "list after",
    );
    assert_eq!(l["data"], json!([]), "{l}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_missing_or_read_only_token_fails_naming_the_token() {
    let w = world(&[]).await;
    let (code, stdout, stderr) = remote(&w.server.base, &"x".repeat(40), &["job", "list"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("error: token:"), "{stderr}");
    assert!(stderr.contains("refused the API token"), "{stderr}");
    assert!(stderr.contains(&w.server.base), "{stderr}");

    let nowhere = tempfile::tempdir().expect("tempdir");
    let mut c = kairos_cmd();
    c.args(["--server", &w.server.base, "job", "list"])
        .current_dir(nowhere.path());
    let (code, _, stderr) = output(c);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("KAIROS_API_TOKEN"), "{stderr}");

    // A read token reads, and is refused a change with the scope named.
    let read = ok(
        local(
            w.dir(),
            &["token", "create", "--name", "ci", "--scope", "read"],
        ),
        "token create",
    );
    let read = read.trim();
    ok(remote(&w.server.base, read, &["schedule", "list"]), "read");
    let (code, _, stderr) = remote(&w.server.base, read, &["schedule", "pause", &w.schedule]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("token") && stderr.contains("scope"),
        "{stderr}"
    );
}

#[test]
fn an_unreachable_server_fails_naming_its_url() {
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    let (code, stdout, stderr) = remote(&url, TOKEN, &["dlq", "list"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stdout.is_empty());
    assert!(
        stderr.contains(&format!("cannot reach the kairos server at {url}")),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    let (code, _, stderr) = remote("ftp://example", TOKEN, &["dlq", "list"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--server"), "{stderr}");
}

#[test]
fn commands_without_an_api_refuse_server_and_pure_ones_ignore_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    for args in [
        &["migrate"][..],
        &["serve"],
        &["worker"],
        &["key", "generate"],
        &["openapi"],
        &["maintenance", "status"],
        &["token", "list"],
    ] {
        let mut c = kairos_cmd();
        c.args(["--server", "http://127.0.0.1:9"])
            .args(args)
            .current_dir(dir.path());
        let (code, stdout, stderr) = output(c);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert!(
            stderr.contains("error: --server:")
                && stderr.contains(&format!("`kairos {}`", args[0])),
            "{args:?}: {stderr}"
        );
    }
    // KAIROS_URL is refused the same way.
    let mut c = kairos_cmd();
    c.arg("migrate")
        .env("KAIROS_URL", "http://127.0.0.1:9")
        .current_dir(dir.path());
    assert_eq!(output(c).0, Some(2));
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("dir").count(),
        0,
        "nothing created"
    );
    // `cron next` reads no data: --server changes nothing.
    let mut c = kairos_cmd();
    c.args([
        "--server",
        "http://127.0.0.1:9",
        "cron",
        "next",
        "0 9 * * *",
        "--json",
    ]);
    let (code, stdout, stderr) = output(c);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("\"firings\""), "{stdout}");
}

#[test]
fn key_migrate_and_template_preview_print_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = json_of(local(dir.path(), &["key", "generate", "--json"]), "key");
    assert_eq!(key["key"].as_str().map(str::len), Some(44), "{key}");
    let m = json_of(local(dir.path(), &["migrate", "--json"]), "migrate");
    assert_eq!(m["up_to_date"], true, "{m}");
    assert!(m["database"].as_str().is_some(), "{m}");
    let m = json_of(
        local(dir.path(), &["migrate", "--list", "--json"]),
        "migrate --list",
    );
    assert_eq!(m["migrations"][0]["version"], 1, "{m}");
    assert!(m["migrations"][0]["applied_at"].is_string(), "{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn template_preview_prints_json() {
    let w = world(&[]).await;
    let p = json_of(
        local(
            w.dir(),
            &[
                "template",
                "preview",
                "--topic",
                "news",
                "--recipient",
                "r1",
                "--json",
            ],
        ),
        "preview",
    );
    assert_eq!(p["subject"], "News for r1", "{p}");
    assert_eq!(p["topic"], "news", "{p}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_through_a_postgres_server_and_new_commands_on_postgres() {
    use kairos_testkit::pg::{SchemaGuard, database_url, reachable};
    let url = database_url();
    if !reachable(&url, "The remote CLI PostgreSQL test").await {
        return;
    }
    let guard = SchemaGuard::new(url.clone(), "kairos_remote_cli");
    let schema = guard.schema.clone();
    let env = [
        ("KAIROS_DATABASE_URL", url.as_str()),
        ("KAIROS_DATABASE_SCHEMA", schema.as_str()),
        // Every node on PostgreSQL is given the secret key (`kairos key generate`).
        (
            "KAIROS_SECRET_KEY",
            "q2LrM0zJ6n0Qy8d0k1vR3sT5uW7xZ9aBcDeFgHiJkLM=",
        ),
    ];
    let w = world(&env).await;
    let (s, p) = (w.schedule.as_str(), w.period.as_str());
    for args in [
        &["topic", "list", "--json"][..],
        &["topic", "show", "news", "--json"],
        &["occurrence", "list", "--schedule", s, "--json"],
        &[
            "occurrence",
            "show",
            "--schedule",
            s,
            "--period",
            p,
            "--json",
        ],
        &["subscription", "list", "--json"],
        &["artifact", "list", "--json"],
        &["job", "show", &w.job, "--json"],
    ] {
        let there = json_of(remote(&w.server.base, TOKEN, args), &format!("{args:?}"));
        let mut c = kairos_cmd();
        c.args(args).arg("--data-dir").arg(w.dir());
        for (k, v) in env {
            c.env(k, v);
        }
        let here = json_of(output(c), &format!("local pg {args:?}"));
        assert_eq!(here, there, "{args:?}");
    }
    drop(w);
    drop(guard);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_through_the_server_reach_the_database() {
    let w = world(&[]).await;
    let base = w.server.base.clone();
    let hook = receiver();
    let job = json_of(
        remote(
            &base,
            TOKEN,
            &[
                "job",
                "enqueue",
                "--url",
                &hook,
                "--secret",
                SECRET,
                "--run-at",
                "2099-01-01T00:00:00Z",
                "--payload",
                r#"{"n": 1}"#,
                "--json",
            ],
        ),
        "enqueue",
    );
    let id = job["id"].as_str().expect("id").to_string();
    assert_eq!(job["state"], "available", "{job}");
    let c = json_of(
        remote(
            &base,
            TOKEN,
            &["job", "cancel", &id, "--reason", "test", "--json"],
        ),
        "cancel",
    );
    assert_eq!(c["state"], "cancelled", "{c}");
    let here = json_of(
        local(w.dir(), &["job", "show", &id, "--json"]),
        "local show",
    );
    assert_eq!(here["state"], "cancelled", "{here}");
    assert_eq!(here["reason"], "test", "{here}");
    // Another job, far in the future: the only available one.
    ok(
        remote(
            &base,
            TOKEN,
            &[
                "job",
                "enqueue",
                "--url",
                &hook,
                "--secret",
                SECRET,
                "--run-at",
                "2099-01-01T00:00:00Z",
            ],
        ),
        "enqueue",
    );
    let m = json_of(
        remote(
            &base,
            TOKEN,
            &["job", "cancel-matching", "--state", "available", "--json"],
        ),
        "cancel-matching",
    );
    assert_eq!(m["matched"], 1, "{m}");
    // The cancelled job runs again now.
    let r = ok(remote(&base, TOKEN, &["job", "retry", &id]), "retry");
    assert!(
        r.starts_with(&format!("{id} is available again at ")),
        "{r}"
    );
    // Replaying a job that is not dead fails, naming it.
    let (code, _, stderr) = remote(&base, TOKEN, &["dlq", "replay", &w.job]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains(&w.job), "{stderr}");

    ok(
        remote(&base, TOKEN, &["suppression", "add", "gone@example.com"]),
        "suppress",
    );
    let l = json_of(local(w.dir(), &["suppression", "list", "--json"]), "list");
    assert_eq!(l[0]["email"], "gone@example.com", "{l}");
    ok(
        remote(
            &base,
            TOKEN,
            &[
                "suppression",
                "remove",
                "gone@example.com",
                "--reason",
                "asked",
            ],
        ),
        "unsuppress",
    );
    let l = json_of(local(w.dir(), &["suppression", "list", "--json"]), "list");
    assert_eq!(l, json!([]), "{l}");

    ok(
        remote(
            &base,
            TOKEN,
            &[
                "recipient",
                "put",
                "r2",
                "--email",
                "r2@example.com",
                "--timezone",
                "Asia/Tokyo",
            ],
        ),
        "recipient put",
    );
    let list = ok(local(w.dir(), &["recipient", "list"]), "recipient list");
    assert!(list.contains("r2  Asia/Tokyo"), "{list}");
    ok(
        remote(&base, TOKEN, &["recipient", "delete", "r2"]),
        "erase",
    );
    let list = ok(local(w.dir(), &["recipient", "list"]), "recipient list");
    assert!(!list.contains("r2"), "{list}");
}
