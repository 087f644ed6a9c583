//! `kairos bench --email file|smtp://host:port`: email throughput end to end on a fresh
//! SQLite database — N recipients subscribed to a topic, one audience firing expanded into N
//! jobs (paged, as the scheduler does), and the real `email` handler sending them through the
//! file transport (`.eml` files in a temp dir) or an SMTP server (for a local one:
//! `python3 -m aiosmtpd -n -l 127.0.0.1:2525`). The last line on stdout is one JSON object.

use kairos_channels::email::{EmailTransport, TransportConfig};
use kairos_core::{Clock, SystemClock};
use kairos_engine::executor::ExecutorConfig;
use kairos_engine::handlers::email::EmailConfig;
use kairos_engine::ops::{NewRecipient, NewSchedule, NewSubscription, NewTopic};
use kairos_engine::{Engine, EngineConfig, Kairos, KindSettings};
use kairos_store_sqlite::SqliteStore;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Run the email benchmark with `transport` (`file` or an `smtp://` URL).
pub async fn run(
    jobs: usize,
    concurrency: usize,
    transport: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    if jobs == 0 || jobs > 1_000_000 {
        return Err("--jobs: must be between 1 and 1000000".into());
    }
    let tmp = tempfile::tempdir()?;
    let store = SqliteStore::open(&tmp.path().join("kairos.db"))
        .await?
        .shared();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    // Every mail job of the run finishes after this instant (a second of margin).
    let started = clock.now() - chrono::Duration::seconds(1);
    let tcfg = match transport {
        "file" => TransportConfig::File {
            dir: tmp.path().join("outbox"),
        },
        url if url.starts_with("smtp://") || url.starts_with("smtps://") => TransportConfig::Smtp {
            url: url.to_string(),
            timeout: Duration::from_secs(30),
        },
        _ => return Err("--email: must be \"file\" or an smtp:// URL".into()),
    };
    let kinds = std::sync::Arc::new(kairos_engine::handlers::builtin(KindSettings {
        email: Some((EmailTransport::new(tcfg)?, EmailConfig::default())),
        ..KindSettings::new(store.clone(), clock.clone(), Default::default())
    })?);
    let ecfg = EngineConfig {
        executor: ExecutorConfig {
            concurrency,
            max_batch: 1000,
            poll_interval: Duration::from_millis(50),
            ..Default::default()
        },
        ..Default::default()
    }
    .with_node("bench-email");
    let engine = Engine::new(ecfg, store.clone(), clock.clone(), kinds.clone())?;
    let k = Kairos::new(store.clone(), clock, engine.wake(), kinds);
    let topic: NewTopic = serde_json::from_value(serde_json::json!({
        "subject": "Your week {{ period.key }}",
        "html": "<p>Hello {{ recipient.attributes.name }}</p>",
        "text": "Hello {{ recipient.attributes.name }}"}))?;
    k.topic_put("bench", topic).await?;
    let t = Instant::now();
    for chunk in (0..jobs).collect::<Vec<_>>().chunks(5_000) {
        let rs: Vec<NewRecipient> = chunk
            .iter()
            .map(|i| {
                serde_json::from_value(serde_json::json!({"id": format!("r{i:07}"),
                    "email": format!("r{i}@bench.invalid"), "attributes": {"name": format!("R{i}")}}))
            })
            .collect::<Result<_, _>>()?;
        k.recipient_put_many(rs).await?;
    }
    for i in 0..jobs {
        let sub = NewSubscription {
            channels: None,
            target: None,
            targets: None,
            enabled: None,
        };
        k.subscription_put(&format!("r{i:07}"), "bench", sub)
            .await?;
    }
    let setup_secs = t.elapsed().as_secs_f64();
    let sched: NewSchedule = serde_json::from_value(serde_json::json!({
        "name": "bench-weekly", "kind": "email", "topic": "bench", "cron": "0 9 * * 1",
        "timezone": "UTC", "period": "iso_week"}))?;
    let s = k.schedule_create(sched).await?;
    let t = Instant::now();
    let fired = k.schedule_fire_now(&s.id).await?;
    let expand_secs = t.elapsed().as_secs_f64();
    let cancel = CancellationToken::new();
    let run = {
        let (engine, cancel) = (engine.clone(), cancel.clone());
        tokio::spawn(async move { engine.run(cancel).await })
    };
    let t = Instant::now();
    let target = fired.created.len() as i64;
    let limit = Duration::from_secs(600);
    loop {
        if crate::bench_timed::succeeded(store.as_ref(), started).await? >= target {
            break;
        }
        if t.elapsed() > limit {
            cancel.cancel();
            return Err(format!("not all {target} mails were sent within {limit:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let send_secs = t.elapsed().as_secs_f64();
    cancel.cancel();
    let _ = run.await;
    let out = serde_json::json!({
        "bench": "email", "transport": if transport == "file" { "file" } else { "smtp" },
        "mails": target, "setup_secs": setup_secs,
        "expand_secs": expand_secs, "expand_per_sec": target as f64 / expand_secs.max(1e-9),
        "send_secs": send_secs, "send_per_sec": target as f64 / send_secs.max(1e-9),
        "concurrency": concurrency,
    });
    eprintln!(
        "email ({}): expanded {target} jobs in {expand_secs:.2}s, sent in {send_secs:.2}s ({:.0}/s)",
        out["transport"],
        out["send_per_sec"].as_f64().unwrap_or(0.0)
    );
    println!("{out}");
    Ok(())
}
