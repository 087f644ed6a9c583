//! `kairos dlq list|replay`: dead jobs and their replay, on the database directly or through
//! `--server` (where `--all` repeats the server's bounded `{"all": true}` request while it
//! says more remain).

use crate::common::*;
use crate::job::print_jobs;
use crate::remote::Backend;
use indicatif::{ProgressBar, ProgressStyle};
use kairos_server::views::{ReplayFailure, ReplayView};

/// Above this many jobs, a replay shows a progress bar (on a terminal).
const PROGRESS_FROM: usize = 20;

/// The most `{"all": true}` requests one `dlq replay --all` sends through a server (each
/// replays at most the server's limit, 500: a million jobs).
const MAX_REPLAY_ROUNDS: usize = 2_000;

/// `kairos dlq …`.
#[derive(Debug, clap::Subcommand)]
pub enum DlqCmd {
    /// List dead jobs, newest first.
    List {
        /// The filters.
        #[command(flatten)]
        filter: crate::job::FilterArgs,
        /// Jobs older than this id.
        #[arg(long)]
        before: Option<String>,
        /// Page size, 1 to 1000.
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
    /// Replay dead jobs: the given ids, or --all (optionally of one --kind).
    Replay {
        /// Replay every dead job.
        #[arg(long, conflicts_with = "ids")]
        all: bool,
        /// With --all: only jobs of this kind.
        #[arg(long, requires = "all")]
        kind: Option<String>,
        /// Job ids.
        ids: Vec<String>,
    },
}

/// Run a `dlq` command.
pub async fn run(global: &GlobalArgs, cmd: DlqCmd) -> CliResult {
    let b = Backend::open(global, matches!(cmd, DlqCmd::List { .. })).await?;
    match cmd {
        DlqCmd::List {
            filter,
            before,
            limit,
        } => {
            let f = filter.filter(Some("dead".into()), before, limit);
            let views = crate::job::find(&b, "/v1/dlq", f).await?;
            print_jobs(&views, limit, global.json)
        }
        DlqCmd::Replay { all, kind, ids } => match b {
            Backend::Local(k) => replay_local(&k, global, all, kind, ids).await,
            Backend::Remote(r) if all => replay_all_remote(&r, global, kind).await,
            Backend::Remote(r) => {
                if ids.is_empty() {
                    return Err(CliError::usage("ids", "give job ids or --all"));
                }
                let body = serde_json::json!({ "ids": ids });
                let out: ReplayView = r.post("/v1/dlq/replay", Some(&body)).await?;
                print_replayed(global, &out)?;
                replay_result(&out, out.replayed + out.failed.len())
            }
        },
    }
}

fn print_replayed(global: &GlobalArgs, out: &ReplayView) -> CliResult {
    if global.json {
        print_json(out)?;
    } else {
        println!("replayed {} job(s)", out.replayed);
        for f in &out.failed {
            eprintln!(
                "could not replay {}: {}",
                f.id,
                crate::common::printable(&f.error)
            );
        }
    }
    Ok(())
}

fn replay_result(out: &ReplayView, asked: usize) -> CliResult {
    if out.failed.is_empty() {
        Ok(())
    } else {
        Err(CliError::Runtime(format!(
            "{} of {} job(s) could not be replayed",
            out.failed.len(),
            asked
        )))
    }
}

async fn replay_local(
    k: &kairos_engine::Kairos,
    global: &GlobalArgs,
    all: bool,
    kind: Option<String>,
    ids: Vec<String>,
) -> CliResult {
    let ids = match (all, ids.is_empty()) {
        (true, _) => k.dead_job_ids(kind.as_deref()).await?,
        (false, false) => ids,
        (false, true) => {
            return Err(CliError::usage("ids", "give job ids or --all"));
        }
    };
    let bar = if ids.len() >= PROGRESS_FROM {
        let bar = ProgressBar::new(ids.len() as u64);
        if let Ok(style) =
            ProgressStyle::with_template("{bar:40} {pos}/{len} replayed ({eta} left)")
        {
            bar.set_style(style);
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    let mut out = ReplayView::default();
    for id in &ids {
        match k.job_retry(id).await {
            Ok(j) => out.job_ids.push(j.id),
            Err(e) => out.failed.push(ReplayFailure {
                id: id.clone(),
                error: e.message().to_string(),
            }),
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    out.replayed = out.job_ids.len();
    print_replayed(global, &out)?;
    replay_result(&out, ids.len())
}

/// `dlq replay --all` through a server: the server replays at most its limit per request and
/// says whether more remain, so send it again while it does (at most [`MAX_REPLAY_ROUNDS`]
/// times), with a count on a terminal, and print the sum. A request that brings no job this
/// run has not met (jobs that died again at once, or cannot be replayed) ends the loop, so
/// dead-again jobs are not replayed over and over; what is left is then said.
async fn replay_all_remote(
    r: &crate::remote::Remote,
    global: &GlobalArgs,
    kind: Option<String>,
) -> CliResult {
    let mut body = serde_json::json!({ "all": true, "kind": kind });
    strip_nulls(&mut body);
    let bar = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {pos} replayed ({elapsed})") {
        bar.set_style(style);
    }
    let mut total = ReplayView::default();
    let mut seen = std::collections::HashSet::new();
    let mut more = true;
    for _ in 0..MAX_REPLAY_ROUNDS {
        let out: ReplayView = r.post("/v1/dlq/replay", Some(&body)).await?;
        let mut new = false;
        for id in out.job_ids {
            new |= seen.insert(id.clone());
            total.job_ids.push(id);
        }
        for f in out.failed {
            new |= seen.insert(f.id.clone());
            total.failed.push(f);
        }
        total.limit = out.limit;
        bar.set_position(total.job_ids.len() as u64);
        more = out.more;
        if !more || !new {
            break;
        }
    }
    bar.finish_and_clear();
    total.replayed = total.job_ids.len();
    total.more = more;
    print_replayed(global, &total)?;
    if more && !global.json {
        eprintln!("more dead jobs remain: run the same command again to go on");
    }
    replay_result(&total, total.replayed + total.failed.len())
}
