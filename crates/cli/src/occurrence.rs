//! `kairos occurrence list|show`: each firing (period) of a schedule with its jobs' states per
//! channel and the derived status (`GET /v1/occurrences`), on the database or through
//! `--server`. The filters are the one vocabulary: `--schedule`, `--period`, `--state` (the
//! occurrence's status: `success`, `partial`, `failure`, `skipped`, `cancelled`, `pending`,
//! `missed`), applied by the store (or the API) before `--limit`.

use crate::common::*;
use crate::remote::Backend;
use kairos_server::routes::occurrences::{OccurrenceList, OccurrenceView};
use kairos_store::OccurrenceList as OccurrenceFilter;

/// `kairos occurrence …`.
#[derive(Debug, clap::Subcommand)]
pub enum OccurrenceCmd {
    /// List a schedule's occurrences, newest first, with their recorded missed firings.
    List {
        /// The schedule (`sch_…`).
        #[arg(long, alias = "schedule-id")]
        schedule: String,
        /// Only this period key (`2026-W49`).
        #[arg(long)]
        period: Option<String>,
        /// Only occurrences with this status (success, partial, failure, skipped,
        /// cancelled, pending, missed).
        #[arg(long)]
        state: Option<String>,
        /// At most this many periods, 1 to 200.
        #[arg(long, default_value_t = 20)]
        limit: i64,
    },
    /// Show one occurrence: each channel's jobs by state.
    Show {
        /// The schedule (`sch_…`).
        #[arg(long, alias = "schedule-id")]
        schedule: String,
        /// The period key (`2026-W49`).
        #[arg(long)]
        period: String,
    },
}

async fn list(b: &Backend, p: OccurrenceFilter) -> CliResult<Vec<OccurrenceView>> {
    Ok(match b {
        Backend::Local(k) => kairos_server::routes::occurrences::occurrences(k, p).await?,
        Backend::Remote(r) => {
            let l: OccurrenceList = r
                .get(
                    "/v1/occurrences",
                    &[
                        ("schedule", Some(p.schedule_id)),
                        ("period", p.period_key),
                        ("state", p.status),
                        ("limit", p.limit.map(|l| l.to_string())),
                    ],
                )
                .await?;
            l.data
        }
    })
}

/// `partial: email` for a partial occurrence, else its status.
fn status_text(o: &OccurrenceView) -> String {
    match &o.failed_channels {
        Some(f) if !f.is_empty() => format!("{}: {}", o.status, f.join(",")),
        _ => o.status.clone(),
    }
}

/// Run an `occurrence` command (both only read).
pub async fn run(global: &GlobalArgs, cmd: OccurrenceCmd) -> CliResult {
    let b = Backend::open(global, true).await?;
    match cmd {
        OccurrenceCmd::List {
            schedule,
            period,
            state,
            limit,
        } => {
            let filter = OccurrenceFilter {
                schedule_id: schedule,
                period_key: period,
                limit: Some(limit),
                status: state,
            };
            let data = list(&b, filter).await?;
            if global.json {
                return print_json(&OccurrenceList { data });
            }
            let rows: Vec<Vec<String>> = data
                .iter()
                .map(|o| {
                    let jobs: i64 = o.channels.iter().map(|c| c.total).sum();
                    let missed = o.missed.as_ref();
                    vec![
                        o.period_key.clone(),
                        cell(&o.fire_at),
                        status_text(o),
                        match missed {
                            Some(m) => format!("{} missed ({})", m.count, m.reason),
                            None => jobs.to_string(),
                        },
                        o.channels
                            .iter()
                            .map(|c| format!("{} {}", c.channel, c.status))
                            .collect::<Vec<_>>()
                            .join(", "),
                    ]
                })
                .collect();
            print_table(&["PERIOD", "FIRE AT", "STATUS", "JOBS", "CHANNELS"], &rows);
            Ok(())
        }
        OccurrenceCmd::Show { schedule, period } => {
            let filter = OccurrenceFilter {
                schedule_id: schedule.clone(),
                period_key: Some(period.clone()),
                limit: Some(200),
                status: None,
            };
            let data = list(&b, filter).await?;
            // The occurrence itself before a missed record that merely starts or ends there.
            let Some(o) = data
                .iter()
                .find(|o| o.period_key == period && o.missed.is_none())
                .or_else(|| data.first())
            else {
                return Err(CliError::Runtime(format!(
                    "schedule {schedule} has no occurrence for period {period}"
                )));
            };
            if global.json {
                return print_json(o);
            }
            let mut fields = vec![
                ("schedule_id", o.schedule_id.clone()),
                ("period_key", o.period_key.clone()),
                ("fire_at", cell(&o.fire_at)),
                ("status", status_text(o)),
            ];
            if let Some(m) = &o.missed {
                fields.push(("reason", m.reason.clone()));
                fields.push(("first_period", m.first_period.clone()));
                fields.push(("last_period", m.last_period.clone()));
                fields.push(("count", m.count.to_string()));
                fields.push(("recovered_at", cell(&m.recovered_at)));
            }
            print_fields(&fields);
            if !o.channels.is_empty() {
                println!();
                let rows: Vec<Vec<String>> = o
                    .channels
                    .iter()
                    .map(|c| {
                        vec![
                            c.channel.clone(),
                            c.status.clone(),
                            c.total.to_string(),
                            c.states
                                .iter()
                                .map(|(s, n)| format!("{s} {n}"))
                                .collect::<Vec<_>>()
                                .join(", "),
                        ]
                    })
                    .collect();
                print_table(&["CHANNEL", "STATUS", "JOBS", "STATES"], &rows);
            }
            Ok(())
        }
    }
}
