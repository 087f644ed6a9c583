//! `kairos dlq list|replay`: dead jobs and their replay, on the database directly.

use crate::common::*;
use crate::job::print_jobs;
use indicatif::{ProgressBar, ProgressStyle};
use kairos_server::views::{JobView, ReplayFailure, ReplayView};

/// Above this many jobs, a replay shows a progress bar (on a terminal).
const PROGRESS_FROM: usize = 20;

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
    let cfg = global.load_config(None)?;
    let k = open_kairos_read(&cfg, matches!(cmd, DlqCmd::List { .. })).await?;
    match cmd {
        DlqCmd::List {
            filter,
            before,
            limit,
        } => {
            let f = filter.filter(Some("dead".into()), before, limit);
            let jobs = k.job_find(f).await?;
            let views: Vec<JobView> = jobs.iter().map(|j| JobView::new(k.kinds(), j)).collect();
            print_jobs(&views, limit, global.json)
        }
        DlqCmd::Replay { all, kind, ids } => {
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
            if global.json {
                print_json(&out)?;
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
            if out.failed.is_empty() {
                Ok(())
            } else {
                Err(CliError::Runtime(format!(
                    "{} of {} job(s) could not be replayed",
                    out.failed.len(),
                    ids.len()
                )))
            }
        }
    }
}
