//! Issue 12, finding 3 (I12-3): mail templates render in worker processes under OS limits,
//! against the real `kairos` binary (`kairos serve` on a temp SQLite directory, HTTP on
//! 127.0.0.1 port 0). A template that doubles a string forty times (terabytes in a hundred
//! instructions, inside the fuel) kills its worker, not the node: the save is refused naming
//! the field, a send fails permanently, and the next render runs in a new worker.

mod common;

use common::{BIN, Server, TOKEN, api, kairos_cmd};
use kairos_channels::email::template::{Pool, PoolConfig, RenderError, Renderer};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Doubles an 8-byte string 40 times: 8 TiB, in about a hundred template instructions.
const DOUBLING: &str = "{% set ns = namespace(x=\"aaaaaaaa\") %}{% for i in range(40) %}\
     {% set ns.x = ns.x ~ ns.x %}{% endfor %}{{ ns.x|length }}";

/// Doubles as many times as the recipient's attribute `n` is long: 14 times in the save-time
/// sample (`[attributes.n]`), 40 times for a recipient whose `n` has 40 characters.
const GROWS_WITH_N: &str = "{% set ns = namespace(x=\"aaaaaaaa\") %}\
     {% for i in range(recipient.attributes.n|length) %}{% set ns.x = ns.x ~ ns.x %}\
     {% endfor %}{{ ns.x|length }}";

/// Inside the fuel but slow: two 64 MiB strings compared 50,000 times (terabytes of memcmp).
const SLOW: &str = "{% set ns = namespace(x=\"aaaaaaaa\", y=\"aaaaaaaa\") %}\
     {% for i in range(23) %}{% set ns.x = ns.x ~ ns.x %}{% set ns.y = ns.y ~ ns.y %}{% endfor %}\
     {% for i in range(50000) %}{% if ns.x == ns.y %}{% endif %}{% endfor %}done";

fn client() -> reqwest::Client {
    kairos_testkit::init_crypto();
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
}

/// The pids of `pid`'s child processes (Linux `/proc/<pid>/task/*/children`).
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(s.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
        }
    }
    out.sort_unstable();
    out
}

/// `PUT /v1/topics/<name>` while `/healthz` is polled: every poll during the save (and one
/// after) must answer 200. The save's status and body.
async fn put_topic_watching_health(
    http: &reqwest::Client,
    base: &str,
    name: &str,
    body: Value,
) -> (u16, Value) {
    let put = {
        let (http, url) = (http.clone(), format!("{base}/v1/topics/{name}"));
        tokio::spawn(async move { api(&http, Method::PUT, url, Some(body)).await })
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let h = http
            .get(format!("{base}/healthz"))
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .expect("/healthz answers during the save");
        assert_eq!(h.status().as_u16(), 200);
        if put.is_finished() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the save did not end within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    put.await.expect("put task")
}

/// Fire `sid` and wait (at most 60 s) for its jobs to be final; the first job, with attempts.
async fn fire_and_wait(http: &reqwest::Client, server: &Server, sid: &str) -> Value {
    let base = &server.base;
    let (s, b) = api(
        http,
        Method::POST,
        format!("{base}/v1/schedules/{sid}/fire"),
        None,
    )
    .await;
    assert!(s == 200 || s == 201, "{b}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(
            Instant::now() < deadline,
            "no final job within 60 s; stderr:\n{}",
            server.stderr()
        );
        let (_, page) = api(
            http,
            Method::GET,
            format!("{base}/v1/jobs?schedule_id={sid}"),
            None,
        )
        .await;
        if let Some(j) = page["data"].as_array().and_then(|d| d.first())
            && matches!(j["state"].as_str(), Some("succeeded" | "dead" | "skipped"))
        {
            let id = j["id"].as_str().expect("id");
            let (_, job) = api(http, Method::GET, format!("{base}/v1/jobs/{id}"), None).await;
            return job;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An audience `email` schedule of `topic` with `rid` subscribed; its id.
async fn audience(http: &reqwest::Client, base: &str, topic: &str, rid: &str, n: &str) -> String {
    let call = |m: Method, path: String, body: Value| {
        let (http, url) = (http.clone(), format!("{base}{path}"));
        async move { api(&http, m, url, Some(body)).await }
    };
    let (s, b) = call(
        Method::PUT,
        format!("/v1/recipients/{rid}"),
        json!({"email": format!("{rid}@example.com"), "attributes": {"n": n}}),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let (s, b) = call(
        Method::PUT,
        format!("/v1/subscriptions/{rid}/{topic}"),
        json!({"channels": ["email"]}),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let (s, b) = call(
        Method::POST,
        "/v1/schedules".into(),
        json!({"name": format!("{topic}-weekly"), "kind": "email", "topic": topic,
               "cron": "0 9 * * 1", "timezone": "UTC", "period": "iso_week"}),
    )
    .await;
    assert_eq!(s, 201, "{b}");
    b["id"].as_str().expect("schedule id").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_3_doubling_template_is_refused_at_save_naming_the_field_and_the_node_lives() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server =
        Server::start_with(dir.path(), Some(TOKEN), &[("KAIROS_TEMPLATE_WORKERS", "1")]).await;
    let pid = server.child.id().expect("pid");
    let http = client();
    let base = server.base.clone();

    let (s, b) = put_topic_watching_health(
        &http,
        &base,
        "fine",
        json!({"subject": "Hi {{ recipient.id }}", "text": "ok"}),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let first = children(pid);
    assert_eq!(
        first.len(),
        1,
        "one template worker after a save: {first:?}"
    );

    let (s, b) = put_topic_watching_health(
        &http,
        &base,
        "boom",
        json!({"subject": "Hi", "text": DOUBLING}),
    )
    .await;
    assert_eq!(s, 422, "{b}");
    assert_eq!(b["field"], "text", "{b}");
    let detail = b["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("exceeded the memory limit of 512 MB"),
        "{b}"
    );
    let (s, _) = api(&http, Method::GET, format!("{base}/v1/topics/boom"), None).await;
    assert_eq!(s, 404, "nothing was stored");

    // A normal topic saves after, in a new worker.
    let (s, b) = put_topic_watching_health(
        &http,
        &base,
        "fine2",
        json!({"subject": "Hello", "html": "<p>{{ recipient.attributes.name }}</p>"}),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let after = children(pid);
    assert_eq!(after.len(), 1, "{after:?}");
    assert_ne!(after, first, "the dead worker was replaced by a new one");
    server.terminate(Duration::from_secs(15)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_3_template_exploding_at_send_fails_the_job_permanently_and_the_next_mail_sends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server =
        Server::start_with(dir.path(), Some(TOKEN), &[("KAIROS_TEMPLATE_WORKERS", "1")]).await;
    let http = client();
    let base = server.base.clone();
    for topic in ["grow-a", "grow-b"] {
        let (s, b) = api(
            &http,
            Method::PUT,
            format!("{base}/v1/topics/{topic}"),
            Some(json!({"subject": "Size", "text": GROWS_WITH_N})),
        )
        .await;
        assert_eq!(s, 200, "the sample render passes the check: {b}");
    }
    let boom = audience(&http, &base, "grow-a", "usr_boom", &"x".repeat(40)).await;
    let fine = audience(&http, &base, "grow-b", "usr_fine", "xx").await;

    let job = fire_and_wait(&http, &server, &boom).await;
    assert_eq!(job["state"], "dead", "{job}");
    let err = job["last_error"].as_str().unwrap_or_default();
    assert!(
        err.contains("text: exceeded the memory limit of 512 MB"),
        "{job}"
    );
    let attempts = job["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 1, "permanent: no retry: {job}");
    assert_eq!(attempts[0]["error_class"], "permanent", "{job}");
    let h = http
        .get(format!("{base}/healthz"))
        .send()
        .await
        .expect("healthz");
    assert_eq!(h.status().as_u16(), 200);

    let job = fire_and_wait(&http, &server, &fine).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let outbox = dir.path().join("outbox");
    let mail =
        std::fs::read_to_string(outbox.join(format!("{}.eml", job["id"].as_str().expect("id"))))
            .expect("the mail in the outbox");
    // 8 bytes doubled twice.
    assert!(mail.contains("32"), "{mail}");

    // `kairos template preview` renders a recipient's data in a worker too: reported, and
    // the CLI process lives to say so.
    let preview = |rid: &str| {
        kairos_cmd()
            .args([
                "template",
                "preview",
                "--topic",
                "grow-a",
                "--recipient",
                rid,
            ])
            .arg("--data-dir")
            .arg(dir.path())
            .output()
            .expect("run kairos template preview")
    };
    let out = preview("usr_boom");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("text: exceeded the memory limit of 512 MB"),
        "{err}"
    );
    let out = preview("usr_fine");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("32"));
    server.terminate(Duration::from_secs(15)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_3_slow_template_is_killed_at_the_time_limit_and_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start_with(
        dir.path(),
        Some(TOKEN),
        &[
            ("KAIROS_TEMPLATE_WORKERS", "1"),
            ("KAIROS_TEMPLATE_TIMEOUT_SECS", "1"),
        ],
    )
    .await;
    let pid = server.child.id().expect("pid");
    let http = client();
    let base = server.base.clone();
    let (s, b) = put_topic_watching_health(
        &http,
        &base,
        "slow",
        json!({"subject": "Hi", "variants": [{"name": "b", "html": SLOW}]}),
    )
    .await;
    assert_eq!(s, 422, "{b}");
    assert_eq!(b["field"], "variants[0].html", "{b}");
    assert!(
        b["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("exceeded the time limit of 1 s"),
        "{b}"
    );
    let (s, b) = put_topic_watching_health(
        &http,
        &base,
        "quick",
        json!({"subject": "Hi", "text": "{{ recipient.id }}"}),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        children(pid).len(),
        1,
        "the killed worker was reaped and replaced"
    );
    server.terminate(Duration::from_secs(15)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_3_without_workers_templates_render_in_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server =
        Server::start_with(dir.path(), Some(TOKEN), &[("KAIROS_TEMPLATE_WORKERS", "0")]).await;
    let pid = server.child.id().expect("pid");
    let http = client();
    let base = server.base.clone();
    let (s, b) = api(
        &http,
        Method::PUT,
        format!("{base}/v1/topics/hello"),
        Some(json!({"subject": "Hi {{ recipient.id }}", "text": "n={{ recipient.attributes.n }}"})),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    // The in-process check still refuses what it refused before.
    let (s, b) = api(
        &http,
        Method::PUT,
        format!("{base}/v1/topics/typo"),
        Some(json!({"subject": "Hi {{ recipent.id }}"})),
    )
    .await;
    assert_eq!((s, b["field"].as_str()), (422, Some("subject")), "{b}");
    let sid = audience(&http, &base, "hello", "usr_1", "7").await;
    let job = fire_and_wait(&http, &server, &sid).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let mail = std::fs::read_to_string(
        dir.path()
            .join("outbox")
            .join(format!("{}.eml", job["id"].as_str().expect("id"))),
    )
    .expect("mail");
    assert!(mail.contains("n=7"), "{mail}");
    assert_eq!(children(pid), Vec::<u32>::new(), "no worker process");
    server.terminate(Duration::from_secs(15)).await;
}

#[test]
fn i12_3_bad_template_settings_stop_serve_naming_the_variable() {
    for (var, bad) in [
        ("KAIROS_TEMPLATE_WORKERS", "lots"),
        ("KAIROS_TEMPLATE_WORKERS", "100"),
        ("KAIROS_TEMPLATE_TIMEOUT_SECS", "0"),
        ("KAIROS_TEMPLATE_MEMORY_MB", "1"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = kairos_cmd()
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path())
            .env(var, bad)
            .output()
            .expect("run kairos serve");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{var}={bad}: {err}");
        assert!(err.contains(var), "{var}={bad}: {err}");
    }
}

fn pool(workers: usize, timeout: Duration) -> Pool {
    Pool::new(PoolConfig {
        program: BIN.into(),
        args: vec!["__render-worker".into()],
        workers,
        timeout,
        memory_mb: 512,
    })
}

/// The pool against the real worker: a render killed at its time limit, then the next one
/// served by a new worker; two renders at once on two workers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_3_pool_kills_a_slow_render_and_serves_the_next() {
    let p = pool(2, Duration::from_secs(1));
    let e = p
        .render(
            vec![
                ("subject".into(), "ok".into()),
                ("html".into(), SLOW.into()),
            ],
            json!({}),
        )
        .await
        .unwrap_err();
    match e {
        RenderError::Template(e) => {
            assert_eq!(e.field, "html");
            assert!(e.reason.contains("exceeded the time limit"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    let ctx = json!({"recipient": {"id": "r1"}});
    let (a, b) = tokio::join!(
        p.render(
            vec![("subject".into(), "A {{ recipient.id }}".into())],
            ctx.clone()
        ),
        p.render(
            vec![("text".into(), "B {{ recipient.id }}".into())],
            ctx.clone()
        ),
    );
    assert_eq!(a.unwrap(), vec!["A r1".to_string()]);
    assert_eq!(b.unwrap(), vec!["B r1".to_string()]);
    // The template's own errors come back as before.
    let e = p
        .check("{{ recipent.id }}".into(), None, None, vec![])
        .await
        .unwrap_err();
    assert!(
        matches!(e, RenderError::Template(ref t) if t.field == "subject"),
        "{e:?}"
    );
}

/// A worker that cannot set its limits refuses to serve: the pool says it is unavailable,
/// not that the template is bad.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i12_3_worker_that_cannot_start_is_unavailable_not_a_template_error() {
    let p = Pool::new(PoolConfig {
        program: BIN.into(),
        args: vec!["__render-worker".into()],
        workers: 1,
        timeout: Duration::from_secs(10),
        // Below the worker's own floor: it exits 2 before reading anything.
        memory_mb: 1,
    });
    let e = p
        .render(vec![("subject".into(), "Hi".into())], json!({}))
        .await
        .unwrap_err();
    assert!(matches!(e, RenderError::Unavailable(_)), "{e:?}");
}

/// Not a test of speed: prints what one mail render costs in-process and through the pool
/// (`cargo test -p kairos --test template_sandbox -- --ignored --nocapture`), the numbers in
/// docs/security.md.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn measure_render_in_process_vs_pool() {
    let templates = vec![
        ("subject".to_string(), "Your week {{ period.key }}".to_string()),
        (
            "html".to_string(),
            "<p>Hello {{ recipient.attributes.name }}</p>{% for i in range(20) %}<li>{{ i }}</li>{% endfor %}"
                .to_string(),
        ),
        ("text".to_string(), "Hello {{ recipient.attributes.name }}".to_string()),
    ];
    let ctx = json!({"recipient": {"id": "r1", "attributes": {"name": "Ada"}},
                     "period": {"key": "2026-W49"}});
    let n = 2000;
    for (name, r) in [
        ("in-process", Renderer::InProcess),
        (
            "pool (1 worker)",
            Renderer::Workers(std::sync::Arc::new(pool(1, Duration::from_secs(10)))),
        ),
    ] {
        let t = Instant::now();
        r.render(templates.clone(), ctx.clone()).await.unwrap();
        println!(
            "{name}: first render {:?} (a pool starts its worker)",
            t.elapsed()
        );
        let t = Instant::now();
        for _ in 0..n {
            r.render(templates.clone(), ctx.clone()).await.unwrap();
        }
        let per = t.elapsed() / n;
        println!("{name}: {per:?} per mail render ({n} renders)");
    }
}

/// Workers are started from the running binary itself, not from its path: after the file is
/// removed (an upgrade replacing it), a save still starts a worker and succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_start_after_the_binary_on_disk_is_removed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = dir.path().join("kairos-copy");
    std::fs::copy(BIN, &copy).expect("copy the binary");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).expect("data dir");
    let server = Server::start_bin(
        &copy,
        &data,
        Some(TOKEN),
        &[("KAIROS_TEMPLATE_WORKERS", "1")],
    )
    .await;
    std::fs::remove_file(&copy).expect("remove the binary");
    let http = client();
    let (s, b) = api(
        &http,
        Method::PUT,
        format!("{}/v1/topics/after-upgrade", server.base),
        Some(json!({"subject": "Hi {{ recipient.id }}", "text": "ok"})),
    )
    .await;
    assert_eq!(s, 200, "{b}\n{}", server.stderr());
}
