//! The CLI as an operator uses it (issue 35): `http` targets printed masked by `schedule
//! show` and `job show`, a multi-channel schedule shown with its channels, next firings in
//! the schedule's zone and UTC, `--json` on `cron next`, quiet broken pipes, and help that
//! lists every command (the README's too). The real binary on a real SQLite file.

mod common;

use common::{BIN, kairos_cmd, run_in};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;

fn ok(dir: &std::path::Path, args: &[&str]) -> String {
    let (code, stdout, stderr) = run_in(dir, args);
    assert_eq!(code, Some(0), "{args:?}: {stdout}{stderr}");
    stdout
}

fn json(dir: &std::path::Path, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--json");
    serde_json::from_str(&ok(dir, &a)).expect("JSON output")
}

/// The lines of `key: value` output whose key is `key`.
fn field<'a>(out: &'a str, key: &str) -> Vec<&'a str> {
    out.lines()
        .filter_map(|l| l.strip_prefix(&format!("{key}:")))
        .map(str::trim)
        .collect()
}

#[test]
fn schedule_show_and_job_show_print_the_http_target_masked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body = r#"{"name": "nightly-call", "kind": "http", "cron": "0 6 * * *",
        "timezone": "America/New_York",
        "http": {"url": "https://ops:pa55word@api.example.com/run?token=q-secret&v=2",
                 "method": "PUT", "bearer_token": "tok-secret"}}"#;
    let created = json(dir.path(), &["schedule", "create", "--body", body]);
    let id = created["id"].as_str().expect("id").to_string();
    let masked = "https://ops:***@api.example.com/run?token=***&v=***";
    assert_eq!(created["http"]["url"], masked, "{created}");

    let shown = ok(dir.path(), &["schedule", "show", &id]);
    assert_eq!(
        field(&shown, "http"),
        vec![format!("PUT {masked}")],
        "{shown}"
    );
    // Next firings in the schedule's zone, each with its UTC instant.
    let upcoming = field(&shown, "upcoming");
    assert_eq!(upcoming.len(), 5, "{shown}");
    for line in &upcoming {
        assert!(
            (line.contains("T06:00:00-05:00 (") || line.contains("T06:00:00-04:00 ("))
                && line.ends_with(":00:00.000Z)"),
            "{line}"
        );
    }
    let fired = json(dir.path(), &["schedule", "fire", &id]);
    let job = fired["job_ids"][0].as_str().expect("a job").to_string();
    let out = ok(dir.path(), &["job", "show", &job]);
    assert_eq!(field(&out, "http"), vec![format!("PUT {masked}")], "{out}");
    let j = json(dir.path(), &["job", "show", &job]);
    assert_eq!(j["http"]["url"], masked);
    assert_eq!(j["http"]["method"], "PUT");
    for text in [shown, out, j.to_string()] {
        for secret in ["pa55word", "q-secret", "tok-secret"] {
            assert!(!text.contains(secret), "{secret} printed: {text}");
        }
    }
}

#[test]
fn a_multi_channel_schedule_is_shown_with_its_channels() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body = r#"{"name": "fanout", "cron": "0 6 * * *", "channels": [
        {"name": "hook", "kind": "webhook",
         "webhook": {"url": "https://hooks.example.com/in", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}},
        {"name": "call", "kind": "http", "http": {"url": "https://api.example.com/x?k=1"}}]}"#;
    let created = json(dir.path(), &["schedule", "create", "--body", body]);
    let id = created["id"].as_str().expect("id").to_string();
    let out = ok(dir.path(), &["schedule", "show", &id]);
    assert_eq!(field(&out, "kind"), vec!["2 channels"], "{out}");
    let channels = field(&out, "channel");
    assert_eq!(channels.len(), 2, "{out}");
    assert!(channels[0].starts_with("hook (webhook) ep_"), "{out}");
    assert_eq!(
        channels[1],
        "call (http) GET https://api.example.com/x?k=***"
    );
}

#[test]
fn cron_next_prints_json_with_local_and_utc_firings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let v = json(
        dir.path(),
        &[
            "cron",
            "next",
            "30 2 * * *",
            "--tz",
            "America/New_York",
            "-n",
            "2",
            "--from",
            "2026-03-07T00:00:00-05:00",
        ],
    );
    assert_eq!(v["timezone"], "America/New_York");
    assert_eq!(
        v["firings"],
        serde_json::json!([
            {"local": "2026-03-07T02:30:00-05:00", "utc": "2026-03-07T07:30:00.000Z"},
            {"local": "2026-03-08T03:00:00-04:00", "utc": "2026-03-08T07:00:00.000Z"},
        ])
    );
}

/// `kairos schedule show X | head -1`, 20 times: the reader goes away before or after the
/// first line; the CLI never panics and ends with exit 0.
#[test]
fn a_closed_pipe_ends_the_cli_quietly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let created = json(
        dir.path(),
        &[
            "schedule",
            "add",
            "--name",
            "p",
            "--cron",
            "* * * * *",
            "--url",
            "https://hooks.example.com/p",
            "--secret",
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        ],
    );
    let id = created["id"].as_str().expect("id").to_string();
    for round in 0..20 {
        let mut child = kairos_cmd()
            .args(["schedule", "show", &id, "--data-dir"])
            .arg(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let stdout = child.stdout.take().expect("stdout");
        if round % 2 == 1 {
            let mut line = String::new();
            BufReader::new(stdout)
                .read_line(&mut line)
                .expect("first line");
            assert!(line.starts_with("id:"), "{line}");
        } else {
            drop(stdout);
        }
        let out = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "round {round}: {stderr}");
        assert_eq!(
            (out.status.code(), out.status.signal()),
            (Some(0), None),
            "round {round}: {stderr}"
        );
    }
}

/// The commands `kairos --help` lists: every subcommand, each also in the README's command
/// line block; `--server` and `--token` among the options.
#[test]
fn help_and_readme_list_every_command() {
    let out = std::process::Command::new(BIN)
        .arg("--help")
        .output()
        .expect("help");
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let commands: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .expect("a Commands section")
        .split("Options:")
        .next()
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    for expected in [
        "serve",
        "worker",
        "migrate",
        "cron",
        "schedule",
        "job",
        "dlq",
        "key",
        "openapi",
        "bench",
        "suppression",
        "endpoint",
        "maintenance",
        "recipient",
        "subscription",
        "template",
        "token",
        "slo",
        "topic",
        "occurrence",
        "artifact",
    ] {
        assert!(commands.contains(&expected), "{expected} in help: {help}");
    }
    assert!(help.contains("--server <URL>"), "{help}");
    assert!(help.contains("--token <TOKEN>"), "{help}");
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README");
    let block = readme
        .split("## Command line")
        .nth(1)
        .and_then(|s| s.split("```").nth(1))
        .expect("the README's command block");
    for c in &commands {
        assert!(
            block.contains(&format!("kairos {c} ")) || block.contains(&format!("kairos {c}\n")),
            "the README's command block lists `kairos {c}`"
        );
    }
}

/// `kairos serve` on a port already in use fails before it writes anything: no token, no
/// secret key, no database in its (new) data directory.
#[test]
fn serve_on_a_busy_port_fails_before_writing_anything() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = busy.local_addr().expect("addr").to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let out = kairos_cmd()
        .args(["serve", "--listen", &addr, "--data-dir"])
        .arg(&data)
        .output()
        .expect("run kairos serve");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("could not listen on {addr}")),
        "{stderr}"
    );
    assert!(
        !data.exists(),
        "nothing written: {:?}",
        std::fs::read_dir(&data).ok().map(|d| d.count())
    );
    drop(busy);
}
