//! `kairos`: the command-line interface — run a node (`serve`, `worker`), manage the
//! database (`migrate`), schedules, jobs, the dead-letter queue, topics, occurrences,
//! artifacts and the audience directly on it or, with `--server URL` (`KAIROS_URL`), through
//! a running server's API (`remote`), preview cron expressions, print the OpenAPI document,
//! show the SLO report, benchmark.
//!
//! Exit codes: 0 success, 1 runtime error, 2 usage or validation error. Errors are printed as
//! `error: <field>: <reason>` on stderr.

// Every `println!` and `print!` of the CLI goes through these (they shadow std's in every
// module below): standard output closed early (`kairos schedule show X | head -1`) ends the
// process quietly with exit 0, where std's macros panic on the broken pipe.
macro_rules! println {
    () => {
        $crate::common::write_out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::common::write_out(format_args!("{}\n", format_args!($($arg)*)))
    };
}
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::common::write_out(format_args!($($arg)*))
    };
}

mod artifact;
mod audience;
mod bench;
mod bench_email;
mod bench_plot;
mod bench_rate;
mod bench_timed;
mod bench_webhook;
mod common;
mod cron;
mod dlq;
mod endpoint;
mod job;
mod key;
mod maintenance;
mod occurrence;
mod remote;
mod render_worker;
mod schedule;
mod serve;
mod slo;
mod suppression;
mod template;
mod token;
mod topic;

use clap::{Parser, Subcommand};
use common::{CliError, CliResult, GlobalArgs};
use std::process::ExitCode;

/// kairos: schedules and jobs on a database that is the queue.
#[derive(Debug, Parser)]
#[command(name = "kairos", version, about, propagate_version = true)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Run the HTTP API and the engine (until SIGTERM / Ctrl-C).
    Serve(serve::ServeArgs),
    /// Run the engine without the API.
    Worker,
    /// Apply the database migrations.
    Migrate(serve::MigrateArgs),
    /// Cron expressions.
    #[command(subcommand)]
    Cron(cron::CronCmd),
    /// Schedules.
    #[command(subcommand)]
    Schedule(schedule::ScheduleCmd),
    /// Jobs.
    #[command(subcommand)]
    Job(job::JobCmd),
    /// The dead-letter queue.
    #[command(subcommand)]
    Dlq(dlq::DlqCmd),
    /// The secret key stored secrets are kept under (`KAIROS_SECRET_KEY`).
    #[command(subcommand)]
    Key(key::KeyCmd),
    /// Print the OpenAPI document (`kairos openapi > docs/openapi.json`).
    Openapi,
    /// Measure throughput: a burst of --jobs, or a steady --rate for --duration (with
    /// snapshots held on PostgreSQL by --hold-snapshots, and --plot to draw it).
    Bench(bench::BenchArgs),
    /// The suppression list: list, add, remove, export.
    #[command(subcommand)]
    Suppression(suppression::SuppressionCmd),
    /// Webhook endpoints: list (disabled state, last failure), enable.
    #[command(subcommand)]
    Endpoint(endpoint::EndpointCmd),
    /// Maintenance mode: on, off, status.
    #[command(subcommand)]
    Maintenance(maintenance::MaintenanceCmd),
    /// Recipients of topic mails.
    #[command(subcommand)]
    Recipient(audience::RecipientCmd),
    /// Subscriptions of recipients to topics: put, list, show, delete.
    #[command(subcommand)]
    Subscription(audience::SubscriptionCmd),
    /// Topics of audience mails: list, show.
    #[command(subcommand)]
    Topic(topic::TopicCmd),
    /// Occurrences (firings) of a schedule with their jobs per channel: list, show.
    #[command(subcommand)]
    Occurrence(occurrence::OccurrenceCmd),
    /// Artifacts of periodic jobs (a day's digest): list, show.
    #[command(subcommand)]
    Artifact(artifact::ArtifactCmd),
    /// Mail templates of topics.
    #[command(subcommand)]
    Template(template::TemplateCmd),
    /// Scoped API tokens: create (read, write or admin), list, revoke.
    #[command(subcommand)]
    Token(token::TokenCmd),
    /// The SLO report: failure rate, stuck work, missed firings, the monitor's last pass (exit
    /// 0 even with warnings, 2 when the store cannot be reached); `kairos slo ack <id>`
    /// acknowledges a dead-run or missing-artifact warning.
    Slo(slo::SloArgs),
    /// Internal: a template worker of the node's render pool (stdin/stdout, OS limits).
    #[command(name = "__render-worker", hide = true)]
    RenderWorker,
}

/// The name of a command without an API, which refuses `--server`; `None` for a command
/// that runs through the API with it (or, like `cron`, reads no data and ignores it).
fn local_only(cmd: &Cmd) -> Option<&'static str> {
    Some(match cmd {
        Cmd::Serve(_) => "serve",
        Cmd::Worker => "worker",
        Cmd::Migrate(_) => "migrate",
        Cmd::Key(_) => "key",
        Cmd::Openapi => "openapi",
        Cmd::Bench(_) => "bench",
        Cmd::Maintenance(_) => "maintenance",
        Cmd::Template(_) => "template",
        Cmd::Token(_) => "token",
        Cmd::RenderWorker => "__render-worker",
        _ => return None,
    })
}

async fn run(cli: Cli) -> CliResult {
    let g = &cli.global;
    if let Some(name) = local_only(&cli.cmd) {
        remote::refuse(g, name)?;
    }
    match cli.cmd {
        Cmd::Serve(a) => serve::serve(g, a).await,
        Cmd::Worker => serve::worker(g).await,
        Cmd::Migrate(a) => serve::migrate(g, &a).await,
        Cmd::Cron(c) => cron::run(c, g.json),
        Cmd::Key(c) => key::run(g, c).await,
        Cmd::Schedule(c) => schedule::run(g, c).await,
        Cmd::Job(c) => job::run(g, c).await,
        Cmd::Dlq(c) => dlq::run(g, c).await,
        Cmd::Openapi => {
            print!("{}", kairos_server::openapi::openapi_json());
            Ok(())
        }
        Cmd::Slo(a) => slo::run(g, a).await,
        Cmd::Suppression(c) => suppression::run(g, c).await,
        Cmd::Endpoint(c) => endpoint::run(g, c).await,
        Cmd::Maintenance(c) => maintenance::run(g, c).await,
        Cmd::Template(c) => template::run(g, c).await,
        Cmd::Token(c) => token::run(g, c).await,
        Cmd::Recipient(c) => audience::run_recipient(g, c).await,
        Cmd::Subscription(c) => audience::run_subscription(g, c).await,
        Cmd::Topic(c) => topic::run(g, c).await,
        Cmd::Occurrence(c) => occurrence::run(g, c).await,
        Cmd::Artifact(c) => artifact::run(g, c).await,
        // Dispatched in `main`, before a runtime exists.
        Cmd::RenderWorker => Ok(()),
        Cmd::Bench(a) => {
            bench::check(&a)?;
            bench::run(a, g.json)
                .await
                .map_err(|e| CliError::Runtime(format!("bench: {e}")))
        }
    }
}

/// mimalloc instead of the C library's allocator. Tasks, rows and HTTP requests are allocated
/// on one thread and freed on another all the time; glibc's arenas spent that time in
/// consolidation and in handing memory back to the system (page-table flushes on both cores).
/// Measured: signed webhook deliveries about 1.3 to 1.8 times faster, the SQLite queue about
/// 8 % (docs/benchmarks-history.md). The template worker runs it with other settings
/// (`render_worker::ALLOCATOR_ENV`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(cli.cmd, Cmd::RenderWorker) && cli.global.server.is_none() {
        // No runtime, no threads: the worker sets its limits and serves on this thread.
        return render_worker::run();
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: could not start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", common::printable(&e.to_string()));
            ExitCode::from(e.exit_code())
        }
    }
}
