//! A real SMTP server for tests: Python's `aiosmtpd` (installed by `.ci/run`), started as a
//! child process on `127.0.0.1:<port>` that saves every message it accepts as a file. Replies
//! are scripted by the recipient's local part: `bounce…` gets `550 5.1.1`, `busy…` gets
//! `451 4.3.0`, anyone else `250`.
//!
//! [`SmtpSink::start`] returns `None` (and says so on stderr) when Python or aiosmtpd is
//! missing, unless `KAIROS_TEST_SMTP=required`, in which case it panics.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const SCRIPT: &str = r#"
import asyncio, os, sys
from aiosmtpd.controller import Controller
out, port = sys.argv[1], int(sys.argv[2])
class H:
    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.startswith('bounce'):
            return '550 5.1.1 mailbox unavailable'
        if address.startswith('busy'):
            return '451 4.3.0 try again later'
        envelope.rcpt_tos.append(address)
        return '250 OK'
    async def handle_DATA(self, server, session, envelope):
        n = len([f for f in os.listdir(out) if f.endswith('.eml')])
        tmp = os.path.join(out, '.%05d.tmp' % n)
        with open(tmp, 'wb') as f:
            f.write(envelope.original_content or envelope.content)
        os.rename(tmp, os.path.join(out, '%05d.eml' % n))
        return '250 OK queued as q%05d' % n
c = Controller(H(), hostname='127.0.0.1', port=port)
c.start()
print('READY', flush=True)
try:
    sys.stdin.read()
finally:
    c.stop()
"#;

/// A running SMTP sink. Killed on drop.
pub struct SmtpSink {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl SmtpSink {
    /// Start a sink saving messages into `dir`. Waits (bounded, 20 s) until it listens.
    pub async fn start(dir: &Path) -> Option<SmtpSink> {
        let required = std::env::var("KAIROS_TEST_SMTP").as_deref() == Ok("required");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local address").port();
        drop(listener);
        std::fs::create_dir_all(dir).expect("create the sink directory");
        let spawned = Command::new("python3")
            .arg("-c")
            .arg(SCRIPT)
            .arg(dir)
            .arg(port.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) if !required => {
                eprintln!(
                    "SKIPPED: python3 cannot be started ({e}); set KAIROS_TEST_SMTP=required to fail instead"
                );
                return None;
            }
            Err(e) => panic!("python3 cannot be started: {e}"),
        };
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(Duration::from_secs(20), lines.next_line()).await;
        match ready {
            Ok(Ok(Some(l))) if l.trim() == "READY" => Some(SmtpSink {
                child,
                dir: dir.to_path_buf(),
                port,
            }),
            other if !required => {
                eprintln!(
                    "SKIPPED: the aiosmtpd sink did not start ({other:?}); `pip install aiosmtpd`, or set KAIROS_TEST_SMTP=required to fail instead"
                );
                None
            }
            other => panic!("the aiosmtpd sink did not start: {other:?}"),
        }
    }

    /// `smtp://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// The messages received so far, oldest first.
    pub fn messages(&self) -> Vec<String> {
        let mut names: Vec<_> = std::fs::read_dir(&self.dir)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "eml"))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .collect()
    }

    /// Wait (bounded by `timeout`) until at least `n` messages arrived; the messages.
    pub async fn wait_for(&self, n: usize, timeout: Duration) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let m = self.messages();
            if m.len() >= n || tokio::time::Instant::now() >= deadline {
                return m;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}
