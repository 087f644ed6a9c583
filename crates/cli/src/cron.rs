//! `kairos cron next`: the next firings of a cron expression in a time zone.

use crate::common::{CliError, CliResult};
use chrono::{DateTime, Utc};
use kairos_core::schedule::{ScheduleSpec, format_local, parse_timezone};
use kairos_core::{Clock, SystemClock};

/// Most firings one call prints.
const MAX_N: usize = 10_000;

/// `kairos cron …`.
#[derive(Debug, clap::Subcommand)]
pub enum CronCmd {
    /// Print the next firings, one RFC 3339 instant per line in the zone's offset.
    Next {
        /// A cron expression: 5 fields, 6 with leading seconds, or a macro like @daily.
        expr: String,
        /// IANA time zone the expression is read in.
        #[arg(long, default_value = "UTC")]
        tz: String,
        /// How many firings.
        #[arg(short = 'n', default_value_t = 5)]
        n: usize,
        /// Start from this instant (RFC 3339; default now): the first firing is strictly after.
        #[arg(long)]
        from: Option<String>,
    },
}

/// One firing of `kairos cron next --json`.
#[derive(Debug, serde::Serialize)]
struct Firing {
    /// RFC 3339 in the zone's offset.
    local: String,
    /// RFC 3339 UTC.
    utc: String,
}

/// Run a `cron` command; `json`: print `{"expr", "timezone", "firings": [{"local", "utc"}]}`.
pub fn run(cmd: CronCmd, json: bool) -> CliResult {
    match cmd {
        CronCmd::Next { expr, tz, n, from } => {
            let tz_name = tz;
            let tz = parse_timezone(&tz_name)?;
            let spec = ScheduleSpec::Cron { expr: expr.clone() };
            spec.validate()?;
            if n == 0 || n > MAX_N {
                return Err(CliError::usage(
                    "n",
                    format!("must be between 1 and {MAX_N}"),
                ));
            }
            let mut t: DateTime<Utc> = match from {
                Some(s) => DateTime::parse_from_rfc3339(s.trim())
                    .map(|t| t.to_utc())
                    .map_err(|e| {
                        CliError::usage(
                            "from",
                            format!("{s:?} is not an RFC 3339 instant like 2026-03-07T00:00:00-05:00: {e}"),
                        )
                    })?,
                None => SystemClock.now(),
            };
            let mut firings = Vec::new();
            for _ in 0..n {
                match spec.next_after(tz, t) {
                    Some(next) => {
                        if json {
                            firings.push(Firing {
                                local: format_local(tz, next),
                                utc: kairos_server::views::ts(next),
                            });
                        } else {
                            println!("{}", format_local(tz, next));
                        }
                        t = next;
                    }
                    None => break,
                }
            }
            if json {
                return crate::common::print_json(&serde_json::json!({
                    "expr": expr,
                    "timezone": tz_name.trim(),
                    "firings": firings,
                }));
            }
            Ok(())
        }
    }
}
