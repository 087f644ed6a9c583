//! The hot-path writer: one OS thread that owns a native (`rusqlite`) connection and runs the
//! job queue's writes — claim, insert, complete, lease renewal, rescue — with cached prepared
//! statements.
//!
//! Why a thread of its own: SQLite has one writer at a time anyway, and through `sqlx` every
//! statement hops to a worker thread and every value is copied through a channel and decoded
//! again on the async side. Here a command is one closure sent over a channel, run against a
//! native connection, answered with a oneshot; parsing results (JSON payloads) is left to the
//! caller so that the writer thread only does SQLite's work. Measured on `kairos bench`, the
//! process's CPU per job fell by about 30 %, and with the checkpoint thread below the
//! throughput went from about 20,000–25,000 to 37,000–41,000 jobs/s (docs/benchmarks-history.md).
//!
//! Group commit: whatever commands are queued when the thread picks up work run in one
//! `BEGIN IMMEDIATE` transaction (a failing command makes the group run again one command per
//! transaction, so it undoes only its own changes). Every reply is sent only after `COMMIT`
//! succeeded, so a caller never sees a result that a crash could still undo (beyond
//! `synchronous = NORMAL`'s power-loss window, as before). Commands are closures that may run
//! twice for that reason (`Fn`), always inside a transaction that is then rolled back.
//!
//! Checkpoints: the writer's connection has `wal_autocheckpoint = 0`; every 32 commits it asks
//! a second connection on a thread of its own to run `PRAGMA wal_checkpoint(PASSIVE)`. That
//! connection is opened at the first request and closed after 30 s without one, so an idle
//! node holds no memory for it (a connection's page cache, schema and statements). SQLite's
//! default would copy the WAL into the database file, fsyncs included, inside a `COMMIT` on the
//! writer — the largest stall left on the hot path. A passive checkpoint never waits for or
//! blocks the writer or readers; the WAL restarts from its beginning once a checkpoint caught
//! up. (The sqlx connections keep the default automatic checkpoint for their own commits.) A
//! checkpoint that ended behind runs again [`BEHIND_RETRY`] later when no request comes first
//! (then after twice as long, up to the idle spell): it ends behind whenever commits appended
//! frames while it ran, and a queue that then went quiet would leave it so — and
//! `db_health_read` reporting a reader holding checkpoints back — until the idle truncation.
//!
//! A WAL that stays small: passive checkpoints copy pages back but never shrink the `-wal`
//! file, and during a burst they rarely catch up, so 300,000 jobs once left a 917 MB WAL on
//! disk for good. Two things bound it. Every connection sets `journal_size_limit` to
//! [`JOURNAL_SIZE_LIMIT`]: when a writer restarts the WAL from its beginning (after a
//! checkpoint caught up), SQLite truncates the file to that size. The writer's own limit is
//! lowered to that size in steps of [`WAL_CUT_STEP`] rather than at once: SQLite truncates under
//! the write lock, and freeing hundreds of megabytes at once took 110–170 ms on a disk mounted
//! with `discard` — a stall of every claim and completion at the first commit after a burst
//! (the lateness p99 after `kairos bench --jobs 100000` was 86–122 ms there). After each
//! passive checkpoint the checkpoint thread reads the file's size and sets the writer's next
//! limit a step below it ([`WalLimits`]), so each restart frees at most a step (about 2 ms
//! there). (The `sqlx` pool's connections keep the plain limit: they seldom write first after
//! a checkpoint caught up, the hot path's writes being this thread's.) And when the queue goes quiet
//! (no checkpoint request for the idle spell), the checkpoint thread runs one
//! `wal_checkpoint(TRUNCATE)` before it closes its connection, which empties the file. That
//! checkpoint waits for readers and blocks new writers while it waits, so it runs with a busy
//! timeout of [`TRUNCATE_BUSY`] (a quiet queue has no writer to stall), and if a reader still
//! holds an old snapshot it is tried again after the next idle spell rather than waited for.
//!
//! The `sqlx` write pool still exists for everything else (schedules and the newer domains).
//! Both connections write the same file; SQLite's write lock orders them, and both wait for it
//! instead of failing: the pool with `busy_timeout`, this thread retrying every millisecond
//! ([`retry_busy`]), so that the hot path takes the lock as soon as the pool lets it go. This thread always starts with `BEGIN IMMEDIATE`, so it
//! never has to upgrade a read transaction (the one case `busy_timeout` cannot wait out).

use kairos_store::{Error, ErrorKind, Result};
use rusqlite::{Connection, OpenFlags};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// One command for the writer thread: run it (perhaps again, see `run_group`), then, once
/// the transaction ended, answer.
trait Work: Send {
    /// Run on the writer thread inside the transaction; `true` if it succeeded.
    fn run(&mut self, conn: &Connection) -> bool;
    /// Answer the caller: `failed` is why the transaction did not commit, if it did not.
    fn finish(self: Box<Self>, failed: Option<&Error>);
}

/// A closure and where its result goes.
struct Call<T, F> {
    f: F,
    result: Option<Result<T>>,
    reply: oneshot::Sender<Result<T>>,
}

impl<T, F> Work for Call<T, F>
where
    T: Send,
    F: Fn(&Connection) -> Result<T> + Send,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| (self.f)(conn)))
            .unwrap_or_else(|_| Err(Error::new(ErrorKind::Database, "a writer command panicked")));
        let ok = r.is_ok();
        self.result = Some(r);
        ok
    }

    fn finish(self: Box<Self>, failed: Option<&Error>) {
        let r = match (failed, self.result) {
            (Some(e), _) => Err(copy(e)),
            (None, Some(r)) => r,
            (None, None) => Err(Error::new(
                ErrorKind::Database,
                "writer command did not run",
            )),
        };
        // The caller may have gone away (cancelled); the work stays done.
        let _ = self.reply.send(r);
    }
}

enum Cmd {
    Work(Box<dyn Work>),
    /// Finish the queued work, close the connection, stop the thread.
    Close(oneshot::Sender<()>),
}

/// Most commands grouped into one transaction: enough to amortize a commit, few enough that
/// the first caller is not kept waiting by a long queue.
const GROUP_MAX: usize = 64;

/// Handle to the writer thread. Cheap to clone; the thread stops when the last handle is
/// dropped or on [`Writer::close`].
#[derive(Clone)]
pub(crate) struct Writer {
    tx: mpsc::Sender<Cmd>,
    checkpoints: Arc<Checkpoints>,
    /// The `-wal` file.
    wal: std::path::PathBuf,
}

/// What the checkpoint thread is doing: for tests, and for `db_health_read` (is a reader
/// keeping checkpoints from catching up?).
#[derive(Debug, Default)]
struct Checkpoints {
    /// Its connection is open.
    open: AtomicBool,
    /// Checkpoints run.
    runs: AtomicU32,
    /// Idle truncating checkpoints that emptied the WAL.
    truncated: AtomicU32,
    /// The last checkpoint left WAL frames it could not copy (a reader's snapshot needs them).
    behind: AtomicBool,
    /// Checkpoints that copied every frame: a change means it caught up in between.
    caught_up: AtomicU32,
    /// The `journal_size_limit` the writer is to use from its next transaction (0: not set
    /// yet, the target).
    wal_limit: AtomicI64,
}

/// Whether checkpoints are behind, and how many caught up so far ([`Writer::checkpoint_state`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CheckpointState {
    /// The last checkpoint could not copy every frame.
    pub behind: bool,
    /// Checkpoints that copied every frame, ever.
    pub caught_up: u32,
}

/// How long the checkpoint connection stays open without a request.
const CHECKPOINT_IDLE: Duration = Duration::from_secs(30);

/// How soon a passive checkpoint that ended behind runs again when no request comes first
/// (doubled after each retry that ends behind too, up to the idle spell). A checkpoint ends
/// behind when commits appended frames while it ran, not only when a reader holds an old
/// snapshot; if the queue then goes quiet, no request comes to run the next one, and
/// `db_health_read` would see checkpoints behind until the idle truncation, 30 s later.
const BEHIND_RETRY: Duration = Duration::from_secs(1);

/// The size SQLite truncates the `-wal` file to when a writer restarts it (64 MiB): a burst
/// may grow it past this, but never leaves it larger once a checkpoint caught up.
pub(crate) const JOURNAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;

/// How much of the `-wal` file one restart of the WAL may free (see the module doc).
const WAL_CUT_STEP: i64 = 8 * 1024 * 1024;

/// The size the WAL is cut back to, and by how much at a time.
#[derive(Debug, Clone, Copy)]
struct WalLimits {
    /// What the file is cut back to in the end ([`JOURNAL_SIZE_LIMIT`]).
    target: i64,
    /// Most freed by one restart ([`WAL_CUT_STEP`]).
    step: i64,
}

impl WalLimits {
    const DEFAULT: WalLimits = WalLimits {
        target: JOURNAL_SIZE_LIMIT,
        step: WAL_CUT_STEP,
    };

    /// The writer's `journal_size_limit` while the file is `len` bytes: a step below it, never
    /// below the target.
    fn next(self, len: i64) -> i64 {
        (len - self.step).max(self.target)
    }
}

/// How long the idle truncating checkpoint waits for readers and writers before giving up
/// until the next idle spell.
const TRUNCATE_BUSY: Duration = Duration::from_millis(200);

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").finish_non_exhaustive()
    }
}

/// Map a native SQLite error to a store error with a kind.
pub(crate) fn map_native(what: &str, e: rusqlite::Error) -> Error {
    use rusqlite::ErrorCode as C;
    use rusqlite::ffi;
    let kind = match &e {
        rusqlite::Error::SqliteFailure(f, _) => match f.code {
            C::ConstraintViolation => match f.extended_code {
                ffi::SQLITE_CONSTRAINT_CHECK | ffi::SQLITE_CONSTRAINT_NOTNULL => ErrorKind::Invalid,
                _ => ErrorKind::Conflict,
            },
            C::DatabaseBusy | C::DatabaseLocked | C::CannotOpen | C::SystemIoFailure => {
                ErrorKind::Unavailable
            }
            C::DatabaseCorrupt | C::NotADatabase => ErrorKind::Corrupt,
            _ => ErrorKind::Database,
        },
        rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::Utf8Error(..) => ErrorKind::Corrupt,
        _ => ErrorKind::Database,
    };
    Error::new(kind, what.to_string()).with_source(e)
}

fn closed() -> Error {
    Error::new(ErrorKind::Unavailable, "the store is closed")
}

/// A copy of an error for each caller in a failed group (errors are not `Clone`).
fn copy(e: &Error) -> Error {
    Error::new(e.kind(), "the write transaction failed")
        .with_source(std::io::Error::other(e.to_string()))
}

impl Writer {
    /// Open the native connection on `path` (an existing, migrated database) and start the
    /// thread.
    pub(crate) fn start(path: &Path) -> Result<Writer> {
        Self::start_with(path, CHECKPOINT_IDLE, WalLimits::DEFAULT)
    }

    /// [`Writer::start`] with the checkpoint connection closed after `idle` without a request,
    /// and the WAL cut back by `limits`.
    fn start_with(path: &Path, idle: Duration, limits: WalLimits) -> Result<Writer> {
        let conn = open(path).map_err(|e| map_native("opening the database (writer)", e))?;
        conn.pragma_update(None, "journal_size_limit", limits.target)
            .map_err(|e| map_native("opening the database (writer)", e))?;
        // Checkpoints run on a thread of their own instead of inside this thread's COMMITs
        // (SQLite's default: every 1,000 WAL pages, on the committing connection).
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .map_err(|e| map_native("opening the database (writer)", e))?;
        let (nudge, nudged) = mpsc::sync_channel(1);
        let spawn_err = |e| {
            Error::new(ErrorKind::Unavailable, "starting the SQLite writer thread").with_source(e)
        };
        let checkpoints = Arc::new(Checkpoints::default());
        let (file, state) = (path.to_path_buf(), checkpoints.clone());
        std::thread::Builder::new()
            .name("kairos-sqlite-checkpoint".into())
            .spawn(move || checkpointer(&file, nudged, (idle, limits), &state))
            .map_err(spawn_err)?;
        let (tx, rx) = mpsc::channel();
        let state = checkpoints.clone();
        std::thread::Builder::new()
            .name("kairos-sqlite-writer".into())
            .spawn(move || run(conn, rx, nudge, (limits.target, &state)))
            .map_err(spawn_err)?;
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        Ok(Writer {
            tx,
            checkpoints,
            wal: wal.into(),
        })
    }

    /// Whether the checkpoint thread is behind the WAL.
    pub(crate) fn checkpoint_state(&self) -> CheckpointState {
        CheckpointState {
            behind: self.checkpoints.behind.load(Ordering::Acquire),
            caught_up: self.checkpoints.caught_up.load(Ordering::Acquire),
        }
    }

    /// The `-wal` file's size in bytes (0 when it does not exist).
    pub(crate) fn wal_bytes(&self) -> u64 {
        std::fs::metadata(&self.wal).map_or(0, |m| m.len())
    }

    /// Run `f` on the writer thread inside a write transaction; its result once committed.
    /// The command is queued when this is called (not when the future is first polled), so
    /// commands issued one after another run in that order.
    pub(crate) fn call<T, F>(&self, f: F) -> impl Future<Output = Result<T>> + use<T, F>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> Result<T> + Send + 'static,
    {
        let (reply, rx) = oneshot::channel::<Result<T>>();
        let work = Box::new(Call {
            f,
            result: None,
            reply,
        });
        let sent = self.tx.send(Cmd::Work(work));
        async move {
            sent.map_err(|_| closed())?;
            rx.await.unwrap_or_else(|_| Err(closed()))
        }
    }

    /// Finish queued work and close the connection. Later calls fail as `Unavailable`.
    pub(crate) async fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Cmd::Close(tx)).is_ok() {
            let _ = rx.await;
        }
    }
}

/// How long this thread waits for the write lock (held by the `sqlx` pool's writers: the
/// pruner, schedules, the admin) before a statement fails with `SQLITE_BUSY`: ten seconds,
/// in retries of [`BUSY_RETRY`].
const BUSY_RETRIES: i32 = 10_000;

/// The pause between two tries of the write lock.
const BUSY_RETRY: Duration = Duration::from_millis(1);

/// The busy handler of this thread's connections: try again every millisecond. SQLite's own
/// (`busy_timeout`) backs off to sleeps of 100 ms, so a claim that met the pruner's delete of
/// a few dozen milliseconds woke up to 100 ms after the lock was free, and every job the node
/// had due waited with it (lateness p99 of 170–320 ms in the seconds the pruner ran).
fn retry_busy(tries: i32) -> bool {
    if tries >= BUSY_RETRIES {
        return false;
    }
    std::thread::sleep(BUSY_RETRY);
    true
}

fn open(path: &Path) -> rusqlite::Result<Connection> {
    // NO_MUTEX: the connection lives on one thread; SQLite's own mutex would be pure cost.
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // The same settings as the sqlx pools (see `SqliteStore::connect`), but a page cache of
    // 16 MiB instead of 256: SQLite trims the cache at the end of every write transaction,
    // walking its whole hash table when it drops pages past the end, and with 256 MiB that
    // walk was a sixteenth of this thread's time under load (`docs/benchmarks-history.md`). The hot
    // part of a queue — the front of `jobs_due`, the rows in flight — fits in far less, and
    // reads come from the memory-mapped file either way.
    conn.busy_handler(Some(retry_busy))?;
    conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.pragma_update(None, "cache_size", -16_384)?;
    conn.pragma_update_and_check(None, "journal_size_limit", JOURNAL_SIZE_LIMIT, |r| {
        r.get::<_, i64>(0)
    })?;
    conn.pragma_update_and_check(None, "mmap_size", 1_073_741_824_i64, |r| r.get::<_, i64>(0))?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// Execute a fixed statement through the statement cache.
fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}

/// Commits between two checkpoint requests: a queue transaction writes a few dozen WAL pages,
/// so this is about SQLite's default of a checkpoint every 1,000 pages.
const CHECKPOINT_EVERY: u32 = 32;

/// Runs a passive checkpoint (copy committed WAL pages into the database file, never waiting
/// for or blocking the writer or readers) each time the writer asks, on a connection opened at
/// the first request and closed after `idle` without one — once a truncating checkpoint has
/// emptied the WAL (see the module doc; until then it is tried again every `idle`). Ends when
/// the writer thread does (its sender is dropped).
fn checkpointer(
    path: &Path,
    nudged: mpsc::Receiver<()>,
    (idle, limits): (Duration, WalLimits),
    state: &Checkpoints,
) {
    use mpsc::RecvTimeoutError;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let wal = std::path::PathBuf::from(wal);
    let mut conn: Option<Connection> = None;
    // The start of the idle spell (the last request, or the last idle truncation tried), and
    // the wait before the last checkpoint is run again because it ended behind.
    let mut quiet_since = Instant::now();
    let mut retry: Option<Duration> = None;
    loop {
        let next = match conn {
            Some(_) => {
                let idle_left = idle.saturating_sub(quiet_since.elapsed());
                nudged.recv_timeout(retry.map_or(idle_left, |r| r.min(idle_left)))
            }
            None => nudged.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match next {
            Ok(()) => quiet_since = Instant::now(),
            Err(RecvTimeoutError::Timeout) if quiet_since.elapsed() < idle => {
                if let Some(c) = &conn {
                    let behind = passive(c, &wal, limits, state);
                    retry = retry.filter(|_| behind).map(|r| (r * 2).min(idle));
                }
                continue;
            }
            Err(RecvTimeoutError::Timeout) => {
                retry = None;
                if conn.as_ref().is_some_and(|c| truncate(c, state)) {
                    conn = None;
                    state.open.store(false, Ordering::Release);
                }
                // Counted from the attempt's end: it may have waited for readers and blocked
                // writers for `TRUNCATE_BUSY`, and the writer gets a whole idle spell between two.
                quiet_since = Instant::now();
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
        if conn.is_none() {
            match open(path) {
                Ok(c) => {
                    conn = Some(c);
                    state.open.store(true, Ordering::Release);
                }
                Err(e) => {
                    // The next request tries again; the WAL only grows meanwhile.
                    tracing::warn!(error = %e, "opening the SQLite checkpoint connection failed");
                    continue;
                }
            }
        }
        if let Some(c) = &conn {
            retry = passive(c, &wal, limits, state).then_some(BEHIND_RETRY);
        }
    }
}

/// One `wal_checkpoint(PASSIVE)`, recorded in `state`; `true` if it left frames behind (a
/// reader's snapshot needs them, or commits appended them while it ran). A failure is logged
/// and counts as not behind: the next request tries again, the WAL only grows meanwhile.
fn passive(c: &Connection, wal: &Path, limits: WalLimits, state: &Checkpoints) -> bool {
    let run = c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
        Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
    });
    match run {
        Ok((log, copied)) => {
            // The writer's next restart of the WAL frees at most a step of it. Set before the
            // run is counted, so a commit after it sees the new limit.
            if let Ok(m) = std::fs::metadata(wal) {
                let len = i64::try_from(m.len()).unwrap_or(i64::MAX);
                state.wal_limit.store(limits.next(len), Ordering::Release);
            }
            state.runs.fetch_add(1, Ordering::AcqRel);
            let behind = copied < log;
            state.behind.store(behind, Ordering::Release);
            if !behind {
                state.caught_up.fetch_add(1, Ordering::AcqRel);
            }
            behind
        }
        Err(e) => {
            tracing::warn!(error = %e, "SQLite WAL checkpoint failed");
            false
        }
    }
}

/// One `wal_checkpoint(TRUNCATE)` with a short busy timeout: `true` if it emptied the WAL,
/// `false` if a reader or writer kept it from finishing (or it failed), to try again later.
/// Records in `state` whether frames are left behind.
fn truncate(conn: &Connection, state: &Checkpoints) -> bool {
    let run = || -> rusqlite::Result<(i64, i64, i64)> {
        conn.busy_timeout(TRUNCATE_BUSY)?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
    };
    match run() {
        Ok((busy, log, copied)) => {
            let behind = copied < log;
            state.behind.store(behind, Ordering::Release);
            if !behind {
                state.caught_up.fetch_add(1, Ordering::AcqRel);
            }
            if busy != 0 {
                tracing::debug!("a reader kept the idle WAL truncation from finishing; retrying");
                return false;
            }
            state.truncated.fetch_add(1, Ordering::AcqRel);
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, "truncating the SQLite WAL failed");
            false
        }
    }
}

fn run(
    conn: Connection,
    rx: mpsc::Receiver<Cmd>,
    nudge: mpsc::SyncSender<()>,
    (mut limit, state): (i64, &Checkpoints),
) {
    let mut group: Vec<Box<dyn Work>> = Vec::with_capacity(GROUP_MAX);
    let mut commits = 0u32;
    loop {
        let mut close = None;
        match rx.recv() {
            Ok(Cmd::Work(w)) => group.push(w),
            Ok(Cmd::Close(t)) => close = Some(t),
            // Every handle is gone.
            Err(_) => break,
        }
        while close.is_none() && group.len() < GROUP_MAX {
            match rx.try_recv() {
                Ok(Cmd::Work(w)) => group.push(w),
                Ok(Cmd::Close(t)) => close = Some(t),
                Err(_) => break,
            }
        }
        if !group.is_empty() {
            // The WAL's next cut (see the module doc). A failure keeps the old limit, and the
            // next group tries again.
            let want = state.wal_limit.load(Ordering::Acquire);
            if want > 0
                && want != limit
                && conn.pragma_update(None, "journal_size_limit", want).is_ok()
            {
                limit = want;
            }
            commits += run_group(&conn, &mut group);
            if commits >= CHECKPOINT_EVERY {
                // Full means a request is already pending: that one will do.
                let _ = nudge.try_send(());
                commits = 0;
            }
        }
        if let Some(t) = close {
            // Commands sent after this one fail to send once the receiver is dropped.
            drop(rx);
            drop(conn);
            let _ = t.send(());
            return;
        }
    }
}

/// One transaction for the whole group. If a command fails, the transaction is rolled back
/// and each command runs again in a transaction of its own, so a failure undoes only its own
/// changes. (Savepoints per command would do the same, but they journal every page a command
/// touches first: a cost on every group for what is rare.)
fn run_group(conn: &Connection, group: &mut Vec<Box<dyn Work>>) -> u32 {
    if let Err(e) = exec(conn, "BEGIN IMMEDIATE") {
        let e = map_native("starting a write transaction", e);
        for w in group.drain(..) {
            w.finish(Some(&e));
        }
        return 0;
    }
    let all_ok = group.iter_mut().all(|w| w.run(conn));
    if !all_ok {
        if let Err(e) = exec(conn, "ROLLBACK") {
            // The connection is unusable: fail everything rather than guess.
            let e = map_native("rolling back", e);
            for w in group.drain(..) {
                w.finish(Some(&e));
            }
            return 0;
        }
        if group.len() == 1 {
            // Its answer is its own error.
            for w in group.drain(..) {
                w.finish(None);
            }
            return 0;
        }
        return std::mem::take(group)
            .into_iter()
            .map(|w| run_group(conn, &mut vec![w]))
            .sum();
    }
    let failed = match exec(conn, "COMMIT") {
        Ok(()) => None,
        Err(e) => {
            if !conn.is_autocommit() {
                let _ = exec(conn, "ROLLBACK");
            }
            Some(map_native("committing", e))
        }
    };
    let committed = u32::from(failed.is_none());
    for w in group.drain(..) {
        w.finish(failed.as_ref());
    }
    committed
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
