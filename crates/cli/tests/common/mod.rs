//! Helpers shared by the end-to-end tests of the real `kairos` binary: a clean command, a
//! `kairos serve` on port 0 whose address is read from its `listening on` log line, and a
//! JSON API call with the bearer token.
#![allow(dead_code)] // each test binary uses a different part of this module

use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub const BIN: &str = env!("CARGO_BIN_EXE_kairos");
pub const TOKEN: &str = "test-token-of-at-least-thirty-two-chars";
pub const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// A command with no inherited `KAIROS_*` settings.
pub fn kairos_cmd() -> std::process::Command {
    kairos_cmd_at(std::path::Path::new(BIN))
}

/// [`kairos_cmd`] for the binary at `bin` (a copy of it, say).
pub fn kairos_cmd_at(bin: &std::path::Path) -> std::process::Command {
    let mut c = std::process::Command::new(bin);
    for (k, _) in std::env::vars() {
        if k.starts_with("KAIROS_") {
            c.env_remove(k);
        }
    }
    c.env("RUST_LOG", "info");
    c
}

/// Run `kairos <args> --data-dir <dir>` to its end: exit code, stdout, stderr.
pub fn run_in(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = kairos_cmd()
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .output()
        .expect("run kairos");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The current Unix time in seconds.
pub fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("time")
        .as_secs() as i64
}

/// A running `kairos serve`.
pub struct Server {
    pub child: Child,
    pub base: String,
    pub log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Start `kairos serve` and wait (at most 60 s) for its `listening on` line.
    pub async fn start(data_dir: &Path, token: Option<&str>) -> Server {
        Self::start_with(data_dir, token, &[]).await
    }

    /// [`Server::start`] with extra environment variables (set after the defaults, so they
    /// can override them).
    pub async fn start_with(data_dir: &Path, token: Option<&str>, env: &[(&str, &str)]) -> Server {
        Self::start_bin(Path::new(BIN), data_dir, token, env).await
    }

    /// [`Server::start_with`] running the binary at `bin`.
    pub async fn start_bin(
        bin: &Path,
        data_dir: &Path,
        token: Option<&str>,
        env: &[(&str, &str)],
    ) -> Server {
        let mut cmd = Command::from(kairos_cmd_at(bin));
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .env("KAIROS_ALLOW_PRIVATE_TARGETS", "1")
            .env("KAIROS_SHUTDOWN_GRACE_SECS", "5")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(t) = token {
            cmd.env("KAIROS_API_TOKEN", t);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn kairos serve");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = tokio::sync::oneshot::channel::<String>();
        {
            // Keep draining stderr for the server's whole life, so it never blocks on a pipe.
            let log = log.clone();
            tokio::spawn(async move {
                let mut tx = Some(tx);
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Some(i) = line.find("listening on http://") {
                        let addr: String = line[i + "listening on ".len()..]
                            .split_whitespace()
                            .next()
                            .unwrap_or_default()
                            .to_string();
                        if let Some(tx) = tx.take() {
                            let _ = tx.send(addr);
                        }
                    }
                    log.lock().expect("log").push(line);
                }
            });
        }
        let base = match tokio::time::timeout(Duration::from_secs(60), rx).await {
            Ok(Ok(base)) => base,
            _ => panic!(
                "kairos serve did not report its address; stderr:\n{}",
                log.lock().expect("log").join("\n")
            ),
        };
        Server { child, base, log }
    }

    pub fn stderr(&self) -> String {
        self.log.lock().expect("log").join("\n")
    }

    /// SIGTERM, then the exit status within `within`.
    pub async fn terminate(mut self, within: Duration) -> std::process::ExitStatus {
        let pid = self.child.id().expect("pid");
        let killed = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(killed.success());
        match tokio::time::timeout(within, self.child.wait()).await {
            Ok(status) => status.expect("wait"),
            Err(_) => panic!(
                "kairos serve did not exit within {within:?} of SIGTERM; stderr:\n{}",
                self.stderr()
            ),
        }
    }

    /// SIGKILL (no chance to clean up), then the exit status within `within`.
    pub async fn kill(mut self, within: Duration) -> std::process::ExitStatus {
        self.child.start_kill().expect("SIGKILL kairos serve");
        match tokio::time::timeout(within, self.child.wait()).await {
            Ok(status) => status.expect("wait"),
            Err(_) => panic!("kairos serve did not die within {within:?} of SIGKILL"),
        }
    }
}

/// One API call with the bearer token: the status and the JSON body (`Null` if not JSON).
pub async fn api(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = http.request(method, url).bearer_auth(TOKEN);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.expect("request");
    let status = res.status().as_u16();
    let text = res.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}
