//! Template renders in worker processes (issue 12, finding 3): minijinja's fuel bounds
//! instructions, not memory, so a template that doubles a string forty times would take the
//! whole node down if it ran in the server. A [`Pool`] runs each check and render in a child
//! process (`kairos __render-worker`, see [`super::worker`]) that set its own `RLIMIT_AS` and
//! `RLIMIT_CPU` before reading anything, under a timeout kept here:
//!
//! - the worker dies (an allocation refused under `RLIMIT_AS` aborts it): the render fails
//!   naming the template ("exceeded the memory limit of N MB");
//! - no answer within the timeout: the worker is killed, the render fails naming the
//!   template ("exceeded the time limit of N s").
//!
//! Either way the worker is dropped and the next render starts a new one. The pool never
//! blocks an async worker thread: the pipes are tokio's, and at most `workers` renders run
//! at once (the others wait for a slot).

use super::worker::{Reply, Request};
use super::{TemplateError, VariantSources};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Semaphore;

/// The longest reply line read from a worker: a few templates of at most
/// [`super::MAX_OUTPUT_BYTES`] each, JSON-escaped (at most 6 bytes per byte).
const MAX_REPLY_BYTES: u64 = 128 << 20;

/// Renders one worker serves before it is retired and replaced: what bounds its cumulative
/// CPU time (see [`PoolConfig::cpu_secs`]) and anything it might accumulate.
pub const MAX_RENDERS_PER_WORKER: u32 = 1000;

/// How a [`Pool`] starts and bounds its workers.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// The worker program (the `kairos` binary: `std::env::current_exe()`).
    pub program: PathBuf,
    /// Its arguments (`["__render-worker"]`).
    pub args: Vec<OsString>,
    /// Workers at most, so renders at once (`KAIROS_TEMPLATE_WORKERS`, at least 1).
    pub workers: usize,
    /// The longest one request may take (`KAIROS_TEMPLATE_TIMEOUT_SECS`).
    pub timeout: Duration,
    /// The worker's address-space limit in MiB (`KAIROS_TEMPLATE_MEMORY_MB`), passed to it
    /// as `KAIROS_TEMPLATE_MEMORY_MB` in an otherwise empty environment.
    pub memory_mb: u64,
}

impl PoolConfig {
    /// The worker's `RLIMIT_CPU` in seconds, passed as `KAIROS_TEMPLATE_CPU_SECS`: a backstop
    /// past what [`MAX_RENDERS_PER_WORKER`] requests of at most `timeout` each can use, so
    /// it only ends a worker whose parent stopped timing it.
    pub fn cpu_secs(&self) -> u64 {
        self.timeout
            .as_secs()
            .max(1)
            .saturating_mul(u64::from(MAX_RENDERS_PER_WORKER))
            .saturating_add(60)
    }
}

/// Why a check or render through a [`Renderer`] failed.
#[derive(Debug, Clone, PartialEq)]
pub enum RenderError {
    /// The template's fault (syntax, undefined variable, fuel, output, memory or time limit):
    /// it will fail the same way again.
    Template(TemplateError),
    /// No worker could be started or spoken to: not the template's fault, worth a retry.
    Unavailable(String),
}

impl std::fmt::Display for RenderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RenderError::Template(e) => e.fmt(f),
            RenderError::Unavailable(m) => write!(f, "template worker unavailable: {m}"),
        }
    }
}

impl std::error::Error for RenderError {}

impl From<TemplateError> for RenderError {
    fn from(e: TemplateError) -> Self {
        RenderError::Template(e)
    }
}

/// One worker process and its pipes.
struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    served: u32,
}

/// How one exchange with a worker ended.
enum Exchange {
    /// The worker answered.
    Done(Result<Vec<String>, TemplateError>),
    /// The pipe closed or broke: the worker is dead (or dying); `started` when it had named
    /// a template of this request first.
    Died {
        /// It had answered a `Start` for this request.
        started: bool,
    },
    /// The worker wrote something that is not a reply.
    Garbled(String),
}

/// A pool of render workers. Cheap to share (`Arc`); workers start on demand.
pub struct Pool {
    cfg: PoolConfig,
    idle: Mutex<Vec<Worker>>,
    slots: Semaphore,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("cfg", &self.cfg).finish()
    }
}

impl Pool {
    /// A pool of `cfg.workers` (at least 1) workers, none started yet.
    pub fn new(mut cfg: PoolConfig) -> Pool {
        cfg.workers = cfg.workers.max(1);
        Pool {
            slots: Semaphore::new(cfg.workers),
            idle: Mutex::new(Vec::new()),
            cfg,
        }
    }

    /// The pool's settings.
    pub fn config(&self) -> &PoolConfig {
        &self.cfg
    }

    fn spawn(&self) -> Result<Worker, RenderError> {
        let mut cmd = Command::new(&self.cfg.program);
        // No secrets in the worker: an empty environment and the two limits.
        cmd.args(&self.cfg.args)
            .env_clear()
            .env("KAIROS_TEMPLATE_MEMORY_MB", self.cfg.memory_mb.to_string())
            .env("KAIROS_TEMPLATE_CPU_SECS", self.cfg.cpu_secs().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| RenderError::Unavailable(format!("could not start a worker: {e}")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(RenderError::Unavailable("the worker has no pipes".into()));
        };
        Ok(Worker {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            served: 0,
        })
    }

    /// Send `req` and read replies until `Done`; `field` follows the worker's `Start`s.
    async fn exchange(w: &mut Worker, line: &[u8], field: &mut String) -> Exchange {
        if w.stdin.write_all(line).await.is_err() || w.stdin.flush().await.is_err() {
            return Exchange::Died { started: false };
        }
        let mut started = false;
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let mut limited = (&mut w.stdout).take(MAX_REPLY_BYTES);
            match limited.read_until(b'\n', &mut buf).await {
                Ok(0) | Err(_) => return Exchange::Died { started },
                Ok(_) if !buf.ends_with(b"\n") => {
                    return Exchange::Garbled(format!(
                        "a reply longer than {MAX_REPLY_BYTES} bytes"
                    ));
                }
                Ok(_) => {}
            }
            match serde_json::from_slice::<Reply>(&buf) {
                Ok(Reply::Start { field: f }) => {
                    started = true;
                    *field = f;
                }
                Ok(Reply::Done { result }) => return Exchange::Done(result),
                Err(e) => return Exchange::Garbled(format!("not a reply: {e}")),
            }
        }
    }

    /// Run `req` on a worker; `first` names the template blamed if the worker dies before
    /// it names one.
    async fn call(&self, req: &Request, first: &str) -> Result<Vec<String>, RenderError> {
        let mut line = serde_json::to_vec(req)
            .map_err(|e| RenderError::Unavailable(format!("could not encode the request: {e}")))?;
        line.push(b'\n');
        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| RenderError::Unavailable("the pool is closed".into()))?;
        let idle = self.idle.lock().map(|mut v| v.pop()).unwrap_or(None);
        let (mut w, mut fresh) = match idle {
            Some(w) => (w, false),
            None => (self.spawn()?, true),
        };
        let mut field = first.to_string();
        let ended = loop {
            let ended =
                tokio::time::timeout(self.cfg.timeout, Self::exchange(&mut w, &line, &mut field))
                    .await;
            // A worker from the idle list that is gone before it named a template of this
            // request died while it waited (killed from outside, the OOM killer): not this
            // template's doing, so it is not blamed on it. One fresh worker tries again.
            if !fresh && matches!(ended, Ok(Exchange::Died { started: false })) {
                Self::end(w).await;
                w = self.spawn()?;
                fresh = true;
                field = first.to_string();
                continue;
            }
            break ended;
        };
        let fail = |reason: String| -> Result<Vec<String>, RenderError> {
            Err(RenderError::Template(TemplateError {
                field: field.clone(),
                reason,
            }))
        };
        match ended {
            Ok(Exchange::Done(result)) => {
                w.served += 1;
                // A worker that refused the request line itself has stopped reading.
                let in_step = !matches!(&result, Err(e) if e.field == "request");
                if in_step
                    && w.served < MAX_RENDERS_PER_WORKER
                    && let Ok(mut idle) = self.idle.lock()
                {
                    idle.push(w);
                }
                result.map_err(RenderError::Template)
            }
            Ok(Exchange::Died { .. }) => {
                // Reap it (bounded: its pipe is closed, it has exited or is exiting) to tell
                // an abort from a CPU-limit kill or a worker that could not start.
                let status = tokio::time::timeout(Duration::from_secs(5), w.child.wait()).await;
                match status.ok().and_then(Result::ok).map(|s| death(&s)) {
                    Some(Death::CpuLimit) => fail(self.time_reason()),
                    Some(Death::Exited(code)) => Err(RenderError::Unavailable(format!(
                        "the worker exited with status {code} (it could not start: check \
                         KAIROS_TEMPLATE_MEMORY_MB)"
                    ))),
                    Some(Death::Signal) | None => {
                        tracing::warn!(field = %field, "a template worker died in a render (memory limit)");
                        fail(format!(
                            "exceeded the memory limit of {} MB (the template worker ran out \
                             of memory)",
                            self.cfg.memory_mb
                        ))
                    }
                }
            }
            Ok(Exchange::Garbled(why)) => {
                Self::end(w).await;
                Err(RenderError::Unavailable(format!(
                    "the worker answered {why}"
                )))
            }
            Err(_) => {
                Self::end(w).await;
                tracing::warn!(field = %field, "a template render timed out; its worker was killed");
                fail(self.time_reason())
            }
        }
    }

    /// Kill `w` and reap it (bounded: SIGKILL cannot be ignored), so no zombie is left for
    /// the runtime's best-effort reaper.
    async fn end(mut w: Worker) {
        let _ = tokio::time::timeout(Duration::from_secs(5), w.child.kill()).await;
    }

    fn time_reason(&self) -> String {
        format!(
            "exceeded the time limit of {} s (the template took too long to render)",
            self.cfg.timeout.as_secs_f64()
        )
    }

    /// [`super::check`] in a worker.
    pub async fn check(
        &self,
        subject: String,
        html: Option<String>,
        text: Option<String>,
        variants: Vec<VariantSources>,
    ) -> Result<(), RenderError> {
        let req = Request::Check {
            subject,
            html,
            text,
            variants,
        };
        self.call(&req, "subject").await.map(|_| ())
    }

    /// [`super::render`] of each `(field, source)` in a worker, against `ctx` (JSON).
    pub async fn render(
        &self,
        templates: Vec<(String, String)>,
        ctx: serde_json::Value,
    ) -> Result<Vec<String>, RenderError> {
        let first = templates
            .first()
            .map(|(f, _)| f.clone())
            .unwrap_or_default();
        let n = templates.len();
        let out = self
            .call(&Request::Render { templates, ctx }, &first)
            .await?;
        if out.len() != n {
            return Err(RenderError::Unavailable(format!(
                "the worker rendered {} of {n} templates",
                out.len()
            )));
        }
        Ok(out)
    }
}

/// How a worker ended.
enum Death {
    /// Its `RLIMIT_CPU` stopped it (SIGXCPU at the soft limit; the hard one is higher).
    CpuLimit,
    /// Another signal: an abort (an allocation refused under `RLIMIT_AS`, a stack overflow)
    /// or the kernel's OOM killer (SIGKILL).
    Signal,
    /// It exited on its own: it could not start (a bad limit, `setrlimit` refused).
    Exited(i32),
}

#[cfg(unix)]
fn death(s: &std::process::ExitStatus) -> Death {
    use std::os::unix::process::ExitStatusExt;
    match (s.signal(), s.code()) {
        (Some(24), _) => Death::CpuLimit,
        (Some(_), _) => Death::Signal,
        (None, Some(c)) => Death::Exited(c),
        (None, None) => Death::Signal,
    }
}

#[cfg(not(unix))]
fn death(s: &std::process::ExitStatus) -> Death {
    match s.code() {
        Some(c) => Death::Exited(c),
        None => Death::Signal,
    }
}

/// Where a node renders mail templates.
#[derive(Debug, Clone, Default)]
pub enum Renderer {
    /// In this process, on tokio's blocking pool: fuel and output are bounded, memory is not.
    /// The library's default (embedding, tests); a node opts out of workers with
    /// `KAIROS_TEMPLATE_WORKERS=0`.
    #[default]
    InProcess,
    /// In worker processes under OS limits.
    Workers(Arc<Pool>),
}

impl Renderer {
    /// Check a topic's templates at save time ([`super::check`]).
    pub async fn check(
        &self,
        subject: String,
        html: Option<String>,
        text: Option<String>,
        variants: Vec<VariantSources>,
    ) -> Result<(), RenderError> {
        match self {
            Renderer::InProcess => Ok(super::check_blocking(subject, html, text, variants).await?),
            Renderer::Workers(p) => p.check(subject, html, text, variants).await,
        }
    }

    /// Render each `(field, source)` against `ctx` at send time; the first error stops.
    pub async fn render(
        &self,
        templates: Vec<(String, String)>,
        ctx: serde_json::Value,
    ) -> Result<Vec<String>, RenderError> {
        match self {
            Renderer::InProcess => {
                Ok(super::render_blocking(templates, super::context(&ctx)).await?)
            }
            Renderer::Workers(p) => p.render(templates, ctx).await,
        }
    }
}
