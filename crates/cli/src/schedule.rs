//! `kairos schedule add|list|show|pause|resume|delete|fire|backfill`, on the database directly.

use crate::common::*;
use crate::remote::{Backend, Remote};
use kairos_engine::Kairos;
use kairos_engine::ops::NewSchedule;
use kairos_server::views::{BackfillPlanView, BackfillView, FiredView, ScheduleList, ScheduleView};
use kairos_store::Schedule;

/// `kairos schedule …`.
#[derive(Debug, clap::Subcommand)]
pub enum ScheduleCmd {
    /// Create a schedule from flags.
    Add(Box<AddArgs>),
    /// Create a schedule from the same JSON body as `POST /v1/schedules` (with `channels`,
    /// `topic`, `http`, `digest` …): `kairos schedule create --body '{"name": …}'`, or
    /// `--body @file.json`, or `--body -` for standard input.
    Create {
        /// The JSON body, `@path` to read it from a file, or `-` for standard input.
        #[arg(long)]
        body: String,
    },
    /// List schedules, newest first.
    List {
        /// `active`, `paused` or `finished`.
        #[arg(long)]
        state: Option<String>,
        /// At most this many.
        #[arg(long)]
        limit: Option<i64>,
    },
    /// Show a schedule and its next firings.
    Show {
        /// Schedule id (`sch_…`).
        id: String,
    },
    /// Pause a schedule.
    Pause {
        /// Schedule id.
        id: String,
    },
    /// Resume a schedule (from now: missed firings are not made up).
    Resume {
        /// Schedule id.
        id: String,
    },
    /// Delete a schedule (its jobs stay).
    Delete {
        /// Schedule id.
        id: String,
    },
    /// Fire now for the current period (a repeat creates nothing).
    Fire {
        /// Schedule id.
        id: String,
    },
    /// Create the firings of a past range, each deduplicated like a regular firing (a period
    /// that ran is not run again). A range of more than 1,000 firings is split into calls of
    /// at most 1,000, with a progress bar on standard error.
    Backfill {
        /// Schedule id.
        id: String,
        /// The first instant of the range (RFC 3339).
        #[arg(long)]
        from: String,
        /// The last instant of the range (RFC 3339), not in the future.
        #[arg(long)]
        to: String,
    },
}

/// `kairos schedule add`.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// Unique name.
    #[arg(long)]
    pub name: String,
    /// Cron expression (5 fields, 6 with seconds, or @daily …).
    #[arg(long, conflicts_with_all = ["at", "every"])]
    pub cron: Option<String>,
    /// A single instant (RFC 3339).
    #[arg(long, conflicts_with = "every")]
    pub at: Option<String>,
    /// A fixed interval ("30s", "1h").
    #[arg(long)]
    pub every: Option<String>,
    /// Anchor of --every (RFC 3339, default now).
    #[arg(long)]
    pub start_at: Option<String>,
    /// IANA time zone (default UTC).
    #[arg(long)]
    pub tz: Option<String>,
    /// Job kind (default webhook).
    #[arg(long)]
    pub kind: Option<String>,
    /// Webhook URL.
    #[arg(long)]
    pub url: Option<String>,
    /// Webhook signing secret (whsec_…).
    #[arg(long)]
    pub secret: Option<String>,
    /// Payload of each job (JSON).
    #[arg(long)]
    pub payload: Option<String>,
    /// For kind http: what to call, as the API's `http` object (JSON:
    /// `{"url", "method", "headers", "body", "timeout", "deadline", "bearer_token"}`).
    #[arg(long)]
    pub http: Option<String>,
    /// Retry delays, comma-separated ("1s,2s").
    #[arg(long)]
    pub retry_delays: Option<String>,
    /// Maximum attempts.
    #[arg(long)]
    pub max_attempts: Option<u32>,
    /// What a firing later than the misfire threshold does: once (default: it runs late),
    /// skip, all, all:N.
    #[arg(long)]
    pub misfire: Option<String>,
    /// A firing later than this follows --misfire ("60s", "5m"; default: the node's
    /// KAIROS_MISFIRE_THRESHOLD, 60s).
    #[arg(long)]
    pub misfire_threshold: Option<String>,
    /// A firing later than this is not run and is recorded as missed ("7d" default).
    #[arg(long)]
    pub misfire_window: Option<String>,
    /// While the previous occurrence still has open jobs: allow (default: run beside it),
    /// skip, buffer_one (run when it ends) or cancel_previous.
    #[arg(long)]
    pub overlap: Option<String>,
    /// Period key unit: occurrence (default), minute, hour, day, week, month, year.
    #[arg(long)]
    pub period: Option<String>,
    /// Create paused.
    #[arg(long)]
    pub paused: bool,
    /// At most --concurrency-max jobs with this key run at once, across every node: a
    /// template over the payload ("account:{{ payload.account_id }}").
    #[arg(long)]
    pub concurrency_key: Option<String>,
    /// How many jobs of --concurrency-key may run at once (default 1).
    #[arg(long)]
    pub concurrency_max: Option<i64>,
}

/// The text of `--body`: inline JSON, `@path`, or `-` (standard input), at most 1 MiB.
fn read_body(body: &str) -> CliResult<String> {
    use std::io::Read;
    const MAX: u64 = 1024 * 1024;
    let mut text = String::new();
    let read = |r: &mut dyn Read, text: &mut String| r.take(MAX + 1).read_to_string(text);
    if body == "-" {
        read(&mut std::io::stdin(), &mut text)
            .map_err(|e| CliError::usage("--body", format!("reading standard input: {e}")))?;
    } else if let Some(path) = body.strip_prefix('@') {
        let mut f = std::fs::File::open(path)
            .map_err(|e| CliError::usage("--body", format!("cannot open {path}: {e}")))?;
        read(&mut f, &mut text)
            .map_err(|e| CliError::usage("--body", format!("reading {path}: {e}")))?;
    } else {
        text = body.to_string();
    }
    if text.len() as u64 > MAX {
        return Err(CliError::usage("--body", "larger than 1 MiB"));
    }
    Ok(text)
}

async fn view(k: &Kairos, s: &Schedule, upcoming: bool) -> CliResult<ScheduleView> {
    let ep = match &s.endpoint_id {
        Some(id) => k
            .store()
            .endpoint_get(id)
            .await
            .map_err(|e| CliError::runtime("could not read the endpoint", &e))?,
        None => None,
    };
    let v = ScheduleView::new(s, ep.as_ref());
    Ok(if upcoming {
        // As the API's single-schedule view (`routes::schedules::full_view`).
        let catch_up = k.schedule_catch_ups(&s.id).await?;
        v.with_upcoming(&k.schedule_upcoming(s, kairos_server::routes::schedules::UPCOMING))
            .with_catch_up(catch_up.into_iter().map(|c| c.at).collect())
            .with_http(s, k.store().as_ref())
            .await
            .map_err(|e| CliError::runtime("could not read the http target", &e))?
    } else {
        v
    })
}

fn spec_text(v: &ScheduleView) -> String {
    match (&v.cron, &v.at, &v.every) {
        (Some(c), _, _) => format!("cron {c}"),
        (_, Some(a), _) => format!("at {a}"),
        (_, _, Some(e)) => format!("every {e}"),
        _ => "-".into(),
    }
}

fn print_schedule(v: &ScheduleView, json: bool) -> CliResult {
    if json {
        return print_json(v);
    }
    let kind = if v.channels.len() > 1 {
        format!("{} channels", v.channels.len())
    } else {
        v.kind.clone()
    };
    let mut fields = vec![
        ("id", v.id.clone()),
        ("name", v.name.clone()),
        ("kind", kind),
        ("clock", spec_text(v)),
        ("timezone", v.timezone.clone()),
        ("state", v.state.clone()),
        ("misfire", v.misfire.clone()),
        (
            "misfire_threshold",
            v.misfire_threshold
                .clone()
                .unwrap_or_else(|| "node default".into()),
        ),
        ("misfire_window", v.misfire_window.clone()),
        ("overlap", v.overlap.as_str().to_string()),
        ("period", v.period.clone()),
        (
            "webhook",
            v.webhook
                .as_ref()
                .map(|w| w.url.clone())
                .unwrap_or_else(|| "-".into()),
        ),
        ("next_fire_at", cell(&v.next_fire_at)),
        ("last_fire_at", cell(&v.last_fire_at)),
        ("created_at", v.created_at.clone()),
    ];
    if let Some(h) = &v.http {
        fields.insert(11, ("http", http_text(h)));
    }
    if v.channels.len() > 1 {
        for c in &v.channels {
            fields.push(("channel", channel_text(c)));
        }
    }
    if let Some(up) = &v.upcoming {
        let local = v.upcoming_local.as_deref().unwrap_or_default();
        for (i, utc) in up.iter().enumerate() {
            let shown = match local.get(i) {
                Some(l) if v.timezone != "UTC" => format!("{l} ({utc})"),
                _ => utc.clone(),
            };
            fields.push(("upcoming", shown));
        }
    }
    print_fields(&fields);
    Ok(())
}

/// One line of what an `http` job calls: `POST https://user:***@host/path?token=***`, and
/// the limits its origin has (`; host https://host:443: 20/s burst 20, 4 in flight`).
pub fn http_text(h: &kairos_server::views::HttpTargetView) -> String {
    let mut limits = Vec::new();
    if let Some(r) = &h.rate_limit {
        limits.push(format!("{}/s burst {}", r.per_second, r.burst));
    }
    if let Some(m) = h.max_in_flight {
        limits.push(format!("{m} in flight"));
    }
    match (&h.origin, limits.is_empty()) {
        (Some(o), false) => format!("{} {}; host {o}: {}", h.method, h.url, limits.join(", ")),
        _ => format!("{} {}", h.method, h.url),
    }
}

/// One channel of a multi-channel schedule: its name, kind and target.
fn channel_text(c: &kairos_server::views::ScheduleChannelView) -> String {
    let target = match (&c.http, &c.endpoint_id) {
        (Some(h), _) => http_text(h),
        (None, Some(ep)) => ep.clone(),
        (None, None) => "-".into(),
    };
    format!("{} ({}) {target}", c.name, c.kind)
}

/// Run a `schedule` command.
pub async fn run(global: &GlobalArgs, cmd: ScheduleCmd) -> CliResult {
    let read_only = matches!(cmd, ScheduleCmd::List { .. } | ScheduleCmd::Show { .. });
    let json = global.json;
    let k = match Backend::open(global, read_only).await? {
        Backend::Local(k) => k,
        Backend::Remote(r) => return run_remote(&r, cmd, json).await,
    };
    match cmd {
        ScheduleCmd::Add(a) => {
            let req = NewSchedule {
                name: a.name,
                cron: a.cron,
                at: a.at,
                every: a.every,
                start_at: a.start_at,
                timezone: a.tz,
                kind: a.kind,
                channels: None,
                webhook: webhook_target(a.url, a.secret)?,
                payload: parse_payload(a.payload.as_deref())?,
                retry: retry_spec(a.retry_delays.as_deref(), a.max_attempts),
                misfire: a.misfire,
                misfire_threshold: a.misfire_threshold,
                misfire_window: a.misfire_window,
                overlap: a.overlap,
                period: a.period,
                paused: a.paused.then_some(true),
                catch_up: None,
                topic: None,
                concurrency: concurrency_spec(a.concurrency_key, a.concurrency_max)?,
                parts: crate::common::http_parts(a.http.as_deref())?,
            };
            let s = k.schedule_create(req).await?;
            print_schedule(&view(&k, &s, true).await?, json)
        }
        ScheduleCmd::Create { body } => {
            let text = read_body(&body)?;
            let req: NewSchedule = serde_json::from_str(&text).map_err(|e| {
                CliError::usage("--body", format!("not a schedule definition: {e}"))
            })?;
            let s = k.schedule_create(req).await?;
            print_schedule(&view(&k, &s, true).await?, json)
        }
        ScheduleCmd::List { state, limit } => {
            let list = k.schedule_list(state, limit).await?;
            let mut views = Vec::with_capacity(list.len());
            for s in &list {
                views.push(view(&k, s, false).await?);
            }
            print_schedules(views, json)
        }
        ScheduleCmd::Show { id } => {
            let s = k.schedule_get(&id).await?;
            print_schedule(&view(&k, &s, true).await?, json)
        }
        ScheduleCmd::Pause { id } => {
            let s = k.schedule_pause(&id, true).await?;
            print_schedule(&view(&k, &s, false).await?, json)
        }
        ScheduleCmd::Resume { id } => {
            let s = k.schedule_pause(&id, false).await?;
            print_schedule(&view(&k, &s, true).await?, json)
        }
        ScheduleCmd::Delete { id } => {
            k.schedule_delete(&id).await?;
            print_deleted(&id, json)
        }
        ScheduleCmd::Backfill { id, from, to } => backfill(&k, &id, &from, &to, json).await,
        ScheduleCmd::Fire { id } => print_fired(&k.schedule_fire_now(&id).await?.into(), json),
    }
}

fn print_schedules(views: Vec<ScheduleView>, json: bool) -> CliResult {
    if json {
        return print_json(&ScheduleList { data: views });
    }
    let rows: Vec<Vec<String>> = views
        .iter()
        .map(|v| {
            vec![
                v.id.clone(),
                v.name.clone(),
                v.state.clone(),
                spec_text(v),
                v.timezone.clone(),
                cell(&v.next_fire_at),
            ]
        })
        .collect();
    print_table(
        &["ID", "NAME", "STATE", "CLOCK", "TIMEZONE", "NEXT FIRE"],
        &rows,
    );
    Ok(())
}

fn print_deleted(id: &str, json: bool) -> CliResult {
    if json {
        print_json(&serde_json::json!({ "deleted": id }))
    } else {
        println!("deleted {id}");
        Ok(())
    }
}

fn print_fired(f: &FiredView, json: bool) -> CliResult {
    if json {
        return print_json(f);
    }
    println!(
        "created {} job(s) for period {} (fire_at {})",
        f.created, f.period_key, f.fire_at
    );
    for id in &f.job_ids {
        println!("{id}");
    }
    Ok(())
}

/// The body of `POST /v1/schedules` for `kairos schedule add` (the API's `ScheduleBody`).
fn add_body(a: AddArgs) -> CliResult<serde_json::Value> {
    let http = crate::common::http_object(a.http.as_deref())?;
    let webhook = webhook_target(a.url, a.secret)?
        .map(|w| serde_json::json!({ "url": w.url, "secret": w.secret }));
    let retry = retry_spec(a.retry_delays.as_deref(), a.max_attempts)
        .map(|r| serde_json::to_value(r).unwrap_or_default());
    let concurrency = concurrency_spec(a.concurrency_key, a.concurrency_max)?
        .map(|c| serde_json::to_value(c).unwrap_or_default());
    let mut v = serde_json::json!({
        "name": a.name, "cron": a.cron, "at": a.at, "every": a.every,
        "start_at": a.start_at, "timezone": a.tz, "kind": a.kind, "webhook": webhook,
        "payload": parse_payload(a.payload.as_deref())?, "retry": retry,
        "misfire": a.misfire, "misfire_threshold": a.misfire_threshold,
        "misfire_window": a.misfire_window, "overlap": a.overlap, "period": a.period,
        "paused": a.paused.then_some(true), "http": http, "concurrency": concurrency,
    });
    strip_nulls(&mut v);
    Ok(v)
}

/// A schedule command through the API.
async fn run_remote(r: &Remote, cmd: ScheduleCmd, json: bool) -> CliResult {
    use crate::remote::seg;
    let one = |id: &str, action: &str| format!("/v1/schedules/{}{action}", seg(id));
    match cmd {
        ScheduleCmd::Add(a) => {
            let v: ScheduleView = r.post("/v1/schedules", Some(&add_body(*a)?)).await?;
            print_schedule(&v, json)
        }
        ScheduleCmd::Create { body } => {
            let text = read_body(&body)?;
            let body: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                CliError::usage("--body", format!("not a schedule definition: {e}"))
            })?;
            let v: ScheduleView = r.post("/v1/schedules", Some(&body)).await?;
            print_schedule(&v, json)
        }
        ScheduleCmd::List { state, limit } => {
            let list: ScheduleList = r
                .get(
                    "/v1/schedules",
                    &[("state", state), ("limit", limit.map(|l| l.to_string()))],
                )
                .await?;
            print_schedules(list.data, json)
        }
        ScheduleCmd::Show { id } => print_schedule(&r.get(&one(&id, ""), &[]).await?, json),
        ScheduleCmd::Pause { id } => {
            print_schedule(&r.post(&one(&id, "/pause"), None::<&()>).await?, json)
        }
        ScheduleCmd::Resume { id } => {
            print_schedule(&r.post(&one(&id, "/resume"), None::<&()>).await?, json)
        }
        ScheduleCmd::Delete { id } => {
            r.delete(&one(&id, ""), &[]).await?;
            print_deleted(&id, json)
        }
        ScheduleCmd::Fire { id } => {
            print_fired(&r.post(&one(&id, "/fire"), None::<&()>).await?, json)
        }
        ScheduleCmd::Backfill { id, from, to } => {
            // The server plans the calls (each of at most 1,000 firings, which is all one
            // call takes), as the local mode does, then each is sent in turn.
            let plan: BackfillPlanView = r
                .get(
                    &one(&id, "/backfill"),
                    &[("from", Some(from)), ("to", Some(to))],
                )
                .await?;
            let path = one(&id, "/backfill");
            let calls = plan.calls.into_iter().map(|c| (c.from, c.to)).collect();
            backfill_calls(calls, json, async |a: &str, b: &str| {
                r.post(&path, Some(&serde_json::json!({ "from": a, "to": b })))
                    .await
            })
            .await
        }
    }
}

async fn backfill(k: &Kairos, id: &str, from: &str, to: &str, json: bool) -> CliResult {
    let per_call = kairos_engine::ops::MAX_BACKFILL_FIRINGS;
    let ranges = k.schedule_backfill_ranges(id, from, to, per_call).await?;
    let calls = ranges
        .into_iter()
        .map(|(a, b)| {
            let ts = kairos_server::views::ts;
            (ts(a), ts(b))
        })
        .collect();
    backfill_calls(calls, json, async |a: &str, b: &str| {
        Ok(k.schedule_backfill(id, a, b).await?.into())
    })
    .await
}

/// Send the `calls` of a backfill (ranges of at most 1,000 firings, oldest first) through
/// `call` in turn, with a progress bar, and print the totals: the local and the remote mode's
/// loop.
async fn backfill_calls(
    calls: Vec<(String, String)>,
    json: bool,
    mut call: impl AsyncFnMut(&str, &str) -> CliResult<BackfillView>,
) -> CliResult {
    use indicatif::{ProgressBar, ProgressStyle};
    let bar = ProgressBar::new(calls.len() as u64).with_style(
        ProgressStyle::with_template("backfill {bar:30} {pos}/{len} calls {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut done = BackfillView {
        fired: 0,
        skipped: 0,
    };
    for (a, b) in &calls {
        let r = call(a, b).await?;
        done.fired += r.fired;
        done.skipped += r.skipped;
        bar.set_message(format!("fired {}, skipped {}", done.fired, done.skipped));
        bar.inc(1);
    }
    bar.finish_and_clear();
    if json {
        return print_json(&done);
    }
    println!(
        "fired {}, skipped {} (already ran), in {} call(s)",
        done.fired,
        done.skipped,
        calls.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kairos_server::routes::endpoints::RateLimitView;
    use kairos_server::views::HttpTargetView;

    fn target() -> HttpTargetView {
        HttpTargetView {
            target_id: "ht_1".into(),
            url: "https://api.crm.example/v2/sync".into(),
            method: "POST".into(),
            headers: vec![],
            timeout: "2m".into(),
            auth: "none".into(),
            origin: Some("https://api.crm.example:443".into()),
            rate_limit: None,
            max_in_flight: None,
        }
    }

    #[test]
    fn show_prints_the_limits_of_an_http_jobs_host_after_its_url() {
        assert_eq!(http_text(&target()), "POST https://api.crm.example/v2/sync");
        let limited = HttpTargetView {
            rate_limit: Some(RateLimitView {
                per_second: 10,
                burst: 10,
            }),
            max_in_flight: Some(4),
            ..target()
        };
        assert_eq!(
            http_text(&limited),
            "POST https://api.crm.example/v2/sync; host https://api.crm.example:443: \
             10/s burst 10, 4 in flight"
        );
    }
}
