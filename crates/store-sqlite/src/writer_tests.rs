//! The writer thread's own guarantees: group commit keeps each command's effects separate,
//! a reply means committed, a closed writer refuses work.

use super::*;

fn db() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("w.db");
    let c = Connection::open(&path).expect("open");
    c.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL CHECK (v <> 'bad'));",
    )
    .expect("schema");
    (dir, path)
}

fn insert(v: &'static str) -> impl Fn(&Connection) -> Result<usize> + Send + 'static {
    move |c: &Connection| {
        c.execute("INSERT INTO t (v) VALUES (?1)", [v])
            .map_err(|e| map_native("insert", e))
    }
}

fn values(path: &Path) -> Vec<String> {
    let c = Connection::open(path).expect("open reader");
    let mut s = c.prepare("SELECT v FROM t ORDER BY id").expect("prepare");
    s.query_map([], |r| r.get(0))
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows")
}

/// Commands queued together share one transaction, but a failing one undoes only its own
/// changes: its neighbours commit (each once), and it reports its own error.
#[tokio::test]
async fn a_failing_command_in_a_group_rolls_back_only_itself() {
    let (_dir, path) = db();
    let w = Writer::start(&path).expect("writer");
    // Hold the thread so that the next commands queue up and run as one group.
    let (release, held) = std::sync::mpsc::channel::<()>();
    let hold = w.call(move |_c: &Connection| {
        let _ = held.recv_timeout(Duration::from_secs(10));
        Ok(())
    });
    let a = w.call(insert("a"));
    // Writes a row, then fails: the row must not survive.
    let bad = w.call(|c: &Connection| {
        c.execute("INSERT INTO t (v) VALUES ('half')", [])
            .map_err(|e| map_native("insert", e))?;
        c.execute("INSERT INTO t (v) VALUES ('bad')", [])
            .map_err(|e| map_native("insert bad", e))
    });
    let b = w.call(insert("b"));
    release.send(()).expect("release");
    // Runs of `hold` after the first (the group runs again when a command fails) pass at once.
    drop(release);
    hold.await.expect("hold");
    assert_eq!(a.await.expect("a"), 1);
    let err = bad.await.expect_err("the CHECK constraint fails");
    assert_eq!(err.kind(), ErrorKind::Invalid, "{err}");
    assert_eq!(b.await.expect("b"), 1);
    assert_eq!(values(&path), vec!["a".to_string(), "b".to_string()]);
}

/// A lone failing command is rolled back entirely.
#[tokio::test]
async fn a_lone_failing_command_leaves_nothing() {
    let (_dir, path) = db();
    let w = Writer::start(&path).expect("writer");
    let r = w
        .call(|c: &Connection| {
            c.execute("INSERT INTO t (v) VALUES ('half')", [])
                .map_err(|e| map_native("insert", e))?;
            c.execute("INSERT INTO t (v) VALUES ('bad')", [])
                .map_err(|e| map_native("insert bad", e))
        })
        .await;
    assert!(r.is_err());
    assert!(values(&path).is_empty());
    // The writer is still usable afterwards.
    assert_eq!(w.call(insert("c")).await.expect("c"), 1);
    assert_eq!(values(&path), vec!["c".to_string()]);
}

/// A reply means committed: another connection sees the row as soon as the call returns.
#[tokio::test]
async fn replies_come_after_commit() {
    let (_dir, path) = db();
    let w = Writer::start(&path).expect("writer");
    for i in 0..20 {
        w.call(insert("x")).await.expect("insert");
        assert_eq!(values(&path).len(), i + 1);
    }
}

/// After `close`, the thread is gone and calls fail as `Unavailable` instead of hanging.
#[tokio::test]
async fn a_closed_writer_refuses_work() {
    let (_dir, path) = db();
    let w = Writer::start(&path).expect("writer");
    let queued = w.call(insert("before close"));
    w.close().await;
    assert_eq!(queued.await.expect("queued before close"), 1);
    let err = w.call(insert("after")).await.expect_err("closed");
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(values(&path), vec!["before close".to_string()]);
}

/// The writer commits with SQLite's automatic checkpoint off; the checkpoint thread copies the
/// WAL into the database file instead. Without it the file would keep its initial size (the
/// WAL stays under SQLite's default 1,000-page threshold here).
#[tokio::test]
async fn the_checkpoint_thread_copies_the_wal_into_the_database() {
    let (_dir, path) = db();
    let before = std::fs::metadata(&path).expect("db file").len();
    let w = Writer::start(&path).expect("writer");
    let big = "x".repeat(4_000);
    let n = CHECKPOINT_EVERY * 2;
    for _ in 0..n {
        let v = big.clone();
        w.call(move |c: &Connection| {
            c.execute("INSERT INTO t (v) VALUES (?1)", [&v])
                .map_err(|e| map_native("insert", e))
        })
        .await
        .expect("insert");
    }
    // The checkpoint runs on its own thread: wait for it, boundedly.
    let want = before + u64::from(CHECKPOINT_EVERY) * 4_000;
    let mut size = before;
    for _ in 0..500 {
        size = std::fs::metadata(&path).expect("db file").len();
        if size >= want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        size >= want,
        "database file {size} bytes, want at least {want}"
    );
    w.close().await;
}

/// The writer's connection keeps a 16 MiB page cache (the pools keep 256 MiB): SQLite walks a
/// cache's whole hash table when it trims it at the end of a write transaction.
#[tokio::test]
async fn the_writer_keeps_a_small_page_cache_and_maps_the_file() {
    let (_dir, path) = db();
    let w = Writer::start(&path).expect("writer");
    let (cache, mmap) = w
        .call(|c: &Connection| {
            let cache: i64 = c
                .query_row("PRAGMA cache_size", [], |r| r.get(0))
                .map_err(|e| map_native("cache_size", e))?;
            let mmap: i64 = c
                .query_row("PRAGMA mmap_size", [], |r| r.get(0))
                .map_err(|e| map_native("mmap_size", e))?;
            Ok((cache, mmap))
        })
        .await
        .expect("pragmas");
    assert_eq!(cache, -16_384, "16 MiB, in KiB");
    assert_eq!(mmap, 1_073_741_824);
    w.close().await;
}

/// Wait (boundedly) until `f` holds.
async fn eventually(what: &str, f: impl Fn() -> bool) {
    for _ in 0..500 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for: {what}");
}

/// An idle node holds no checkpoint connection: it is opened at the first checkpoint request,
/// closed after a quiet spell, and opened again when commits resume — checkpoints still run.
#[tokio::test]
async fn checkpoint_connection_opens_on_demand_and_closes_when_idle() {
    let (_dir, path) = db();
    let w = Writer::start_with(&path, Duration::from_secs(1), WalLimits::DEFAULT).expect("writer");
    let state = w.checkpoints.clone();
    assert!(
        !state.open.load(Ordering::Acquire),
        "no connection before any commit"
    );
    for round in 1..=2u32 {
        for _ in 0..CHECKPOINT_EVERY {
            w.call(insert("x")).await.expect("insert");
        }
        eventually("a checkpoint ran", || {
            state.runs.load(Ordering::Acquire) >= round
        })
        .await;
        assert!(state.open.load(Ordering::Acquire), "open while in use");
        eventually("the idle connection closed", || {
            !state.open.load(Ordering::Acquire)
        })
        .await;
    }
    assert_eq!(values(&path).len(), 2 * CHECKPOINT_EVERY as usize);
    w.close().await;
}

fn wal_len(path: &Path) -> u64 {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(wal).map_or(0, |m| m.len())
}

/// Insert `rows` rows of 4 kB each, one transaction per row (as a busy queue commits).
async fn burst(w: &Writer, rows: usize) {
    let big = "x".repeat(4_000);
    for _ in 0..rows {
        let v = big.clone();
        w.call(move |c: &Connection| {
            c.execute("INSERT INTO t (v) VALUES (?1)", [&v])
                .map_err(|e| map_native("insert", e))
        })
        .await
        .expect("insert");
    }
}

/// After a burst the WAL does not keep its high-water size: once the queue is quiet for the
/// idle spell, a truncating checkpoint empties it. Without it the file stays as large as the
/// burst made it (passive checkpoints never shrink it), 917 MB after 300,000 jobs.
#[tokio::test]
async fn wal_is_emptied_when_the_queue_goes_quiet() {
    let (_dir, path) = db();
    let w =
        Writer::start_with(&path, Duration::from_millis(300), WalLimits::DEFAULT).expect("writer");
    // A reader holds a snapshot during the burst, so passive checkpoints cannot catch up and
    // the WAL grows as it does under a real burst.
    let reader = Connection::open(&path).expect("reader");
    reader
        .execute_batch("BEGIN; SELECT count(*) FROM t;")
        .expect("read transaction");
    burst(&w, 300).await;
    assert!(wal_len(&path) > 1_000_000, "the burst grew the WAL");
    reader.execute_batch("COMMIT").expect("end read");
    let state = w.checkpoints.clone();
    eventually("the WAL was truncated", || {
        state.truncated.load(Ordering::Acquire) >= 1
    })
    .await;
    assert_eq!(wal_len(&path), 0, "an idle queue leaves an empty WAL");
    assert_eq!(values(&path).len(), 300, "nothing lost by truncating");
    w.close().await;
}

/// A reader that keeps its snapshot keeps the idle truncation from finishing, without
/// stalling it or the writer: the checkpoint thread keeps its connection and tries again each
/// idle spell, and empties the WAL once the reader lets go.
#[tokio::test]
async fn idle_truncation_waits_out_a_held_reader_and_retries() {
    let (_dir, path) = db();
    let w =
        Writer::start_with(&path, Duration::from_millis(200), WalLimits::DEFAULT).expect("writer");
    burst(&w, CHECKPOINT_EVERY as usize).await;
    let reader = Connection::open(&path).expect("reader");
    reader
        .execute_batch("BEGIN; SELECT count(*) FROM t;")
        .expect("read transaction");
    // New commits after the reader's snapshot: the WAL cannot be emptied under it.
    burst(&w, 5).await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let state = w.checkpoints.clone();
    assert_eq!(
        state.truncated.load(Ordering::Acquire),
        0,
        "held back by the reader"
    );
    assert!(state.open.load(Ordering::Acquire), "kept open to retry");
    // The writer is not blocked meanwhile.
    w.call(insert("during")).await.expect("insert while held");
    reader.execute_batch("COMMIT").expect("end read");
    eventually("the WAL was truncated", || {
        state.truncated.load(Ordering::Acquire) >= 1
    })
    .await;
    assert_eq!(wal_len(&path), 0);
    w.close().await;
}

/// A checkpoint that ended behind runs again when no request comes, so a queue that goes quiet
/// right after one does not leave checkpoints reported behind (`db_health_read`: a reader
/// holding them back) until the idle truncation. While a reader still holds its snapshot the
/// retries keep finding it behind, and back off instead of spinning. Without the retry
/// `behind` stays set for the whole idle spell (a minute here) and this test times out.
#[tokio::test]
async fn a_checkpoint_left_behind_runs_again_when_the_queue_goes_quiet() {
    let (_dir, path) = db();
    let w = Writer::start_with(&path, Duration::from_secs(60), WalLimits::DEFAULT).expect("writer");
    let state = w.checkpoints.clone();
    burst(&w, 1).await;
    let reader = Connection::open(&path).expect("reader");
    reader
        .execute_batch("BEGIN; SELECT count(*) FROM t;")
        .expect("read transaction");
    burst(&w, CHECKPOINT_EVERY as usize).await;
    eventually("a checkpoint ended behind the reader", || {
        state.runs.load(Ordering::Acquire) >= 1 && state.behind.load(Ordering::Acquire)
    })
    .await;
    let runs = state.runs.load(Ordering::Acquire);
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    assert!(
        state.behind.load(Ordering::Acquire),
        "still behind while the reader holds its snapshot"
    );
    let retried = state.runs.load(Ordering::Acquire) - runs;
    assert!(
        (1..=2).contains(&retried),
        "retried after 1 s and 3 s (backing off), not spinning: {retried}"
    );
    reader.execute_batch("COMMIT").expect("end read");
    eventually(
        "a retry caught up with no commit after the reader let go",
        || !state.behind.load(Ordering::Acquire),
    )
    .await;
    assert_eq!(
        state.truncated.load(Ordering::Acquire),
        0,
        "not the idle truncation"
    );
    assert!(state.caught_up.load(Ordering::Acquire) >= 1);
    w.close().await;
}

/// After a burst a busy queue cuts its WAL back a step per restart, never all at once: SQLite
/// truncates under the write lock, and freeing hundreds of megabytes at once stalled every
/// claim for 110–170 ms on a disk mounted with `discard`. Without the steps the first restart
/// frees everything above the target, and this test fails. (The idle truncation is kept out
/// of it: the queue never goes quiet here.)
#[tokio::test]
async fn a_wal_grown_by_a_burst_is_cut_back_a_step_per_restart() {
    let (_dir, path) = db();
    let limits = WalLimits {
        target: 1024 * 1024,
        step: 256 * 1024,
    };
    let w = Writer::start_with(&path, Duration::from_secs(600), limits).expect("writer");
    // A reader holds a snapshot during the burst: passive checkpoints cannot catch up, and
    // the WAL grows past the target as under a real burst.
    let reader = Connection::open(&path).expect("reader");
    reader
        .execute_batch("BEGIN; SELECT count(*) FROM t;")
        .expect("read transaction");
    burst(&w, 1_000).await;
    reader.execute_batch("COMMIT").expect("end read");
    let grown = wal_len(&path);
    assert!(grown > 3 * 1024 * 1024, "the burst grew the WAL: {grown}");
    // A busy queue: small commits, with checkpoints catching up between them. The first
    // commit after a checkpoint that caught up restarts the WAL, and cuts it back.
    // Each commit here is a transaction of its own, so the writer asks for a checkpoint at
    // every CHECKPOINT_EVERY-th one: the rounds end on that commit, so the checkpoint starts
    // after it and catches up with every frame, and the round's last commit restarts the WAL.
    let state = w.checkpoints.clone();
    let (mut last, mut cuts, mut rows) = (grown, 0, 1_000usize);
    let every = CHECKPOINT_EVERY as usize;
    for _ in 0..200 {
        let runs = state.runs.load(Ordering::Acquire);
        let n = every - rows % every;
        for _ in 0..n {
            w.call(insert("x")).await.expect("insert");
        }
        eventually("a checkpoint ran", || {
            state.runs.load(Ordering::Acquire) > runs
        })
        .await;
        w.call(insert("x")).await.expect("insert");
        rows += n + 1;
        let now = wal_len(&path);
        if now < last {
            assert!(
                last - now <= limits.step as u64,
                "one restart freed {} bytes (from {last} to {now}), more than a step",
                last - now
            );
            cuts += 1;
        }
        last = now;
        if now <= limits.target as u64 {
            break;
        }
    }
    assert!(
        last <= limits.target as u64,
        "the WAL came back to the target: {last} bytes left of {grown}"
    );
    assert!(cuts >= 8, "cut back in steps: {cuts}");
    assert_eq!(values(&path).len(), rows, "nothing lost by cutting");
    w.close().await;
}

/// Every native connection caps the WAL it leaves behind when a writer restarts it.
#[tokio::test]
async fn the_writer_limits_the_journal_size() {
    let (_dir, path) = db();
    let w = Writer::start(&path).expect("writer");
    let limit = w
        .call(|c: &Connection| {
            c.query_row("PRAGMA journal_size_limit", [], |r| r.get::<_, i64>(0))
                .map_err(|e| map_native("journal_size_limit", e))
        })
        .await
        .expect("pragma");
    assert_eq!(limit, JOURNAL_SIZE_LIMIT);
    w.close().await;
}
