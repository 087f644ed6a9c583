//! Shared set-up of the digest tests: a real SQLite file, a manual clock, an engine whose
//! `digest` kind talks to local HTTP servers standing in for the feeds and the model APIs
//! (speaking RSS/Atom, Gemini's generateContent and OpenAI's chat completions).
#![allow(dead_code)]

use chrono::{DateTime, Utc};
use kairos_channels::WebhookConfig;
use kairos_channels::digest::{DigestConfig, ModelApi};
use kairos_core::{Clock, ManualClock};
use kairos_engine::KindSettings;
use kairos_engine::handlers::builtin;
use kairos_engine::{Engine, EngineConfig, Handler, Kairos};
use kairos_store::Store;
use kairos_store_sqlite::SqliteStore;
use kairos_testkit::Reply;
use std::sync::Arc;
use std::time::Duration;
use tempfile::TempDir;

pub const GEMINI_KEY: &str = "test-gemini-key-not-a-secret-0001";
pub const OPENAI_KEY: &str = "test-openai-key-not-a-secret-0002";

pub struct World {
    pub dir: TempDir,
    pub store: Arc<dyn Store>,
    pub clock: Arc<ManualClock>,
    pub engine: Engine,
    pub kairos: Kairos,
}

/// A digest configuration pointing at `gemini` / `openai` base URLs, with a short model
/// timeout (the hang tests must not take two real minutes) and private targets allowed (the
/// servers are on 127.0.0.1).
pub fn digest_config(gemini: &str, openai: &str, model_timeout: Duration) -> DigestConfig {
    DigestConfig {
        feed_timeout: Duration::from_secs(5),
        model_timeout,
        allow_private_targets: true,
        gemini: ModelApi {
            url: gemini.into(),
            api_key: Some(GEMINI_KEY.into()),
            model: "gemini-2.5-flash".into(),
        },
        openai: ModelApi {
            url: openai.into(),
            api_key: Some(OPENAI_KEY.into()),
            model: "gpt-4o-mini".into(),
        },
        ..DigestConfig::default()
    }
}

impl World {
    pub async fn new(start: DateTime<Utc>, digest: DigestConfig) -> Self {
        Self::with(start, digest, &[]).await
    }

    pub async fn with(
        start: DateTime<Utc>,
        digest: DigestConfig,
        custom: &[(&'static str, Arc<dyn Handler>)],
    ) -> Self {
        kairos_testkit::init_crypto();
        let dir = tempfile::tempdir().expect("tempdir");
        let store: Arc<dyn Store> = Arc::new(
            SqliteStore::open(&dir.path().join("kairos.db"))
                .await
                .expect("open sqlite"),
        );
        let clock = Arc::new(ManualClock::new(start));
        let dyn_clock: Arc<dyn Clock> = clock.clone();
        let mut registry = builtin(KindSettings {
            digest,
            ..KindSettings::new(
                store.clone(),
                dyn_clock.clone(),
                WebhookConfig {
                    allow_private_targets: true,
                    ..Default::default()
                },
            )
        })
        .expect("built-in kinds");
        for (kind, h) in custom {
            registry = registry.with_handler(kind, h.clone());
        }
        let kinds = std::sync::Arc::new(registry);
        let engine = Engine::new(
            EngineConfig::default(),
            store.clone(),
            dyn_clock.clone(),
            kinds.clone(),
        )
        .expect("engine");
        let kairos =
            Kairos::new(store.clone(), dyn_clock, engine.wake(), kinds).allow_private_targets(true);
        World {
            dir,
            store,
            clock,
            engine,
            kairos,
        }
    }

    /// Set the clock to `at`, run a scheduler tick and then the executor there.
    pub async fn tick(&self, at: DateTime<Utc>) {
        self.clock.set(at);
        self.engine
            .scheduler()
            .run_once(at)
            .await
            .expect("scheduler");
        self.engine.executor().run_once(at).await.expect("executor");
    }

    /// Run every event (due jobs, catch-ups) up to `until`, in time order, a bounded number
    /// of steps. `hook(t)` runs before each step (to change what the servers answer).
    pub async fn run_until(
        &self,
        until: DateTime<Utc>,
        mut hook: impl FnMut(DateTime<Utc>),
    ) -> usize {
        let mut steps = 0;
        for _ in 0..200 {
            let now = self.clock.now();
            let next_job = self.store.job_next_run_at().await.expect("next run");
            let next_catch_up = self.store.catch_up_next_at().await.expect("next catch-up");
            let next = [next_job, next_catch_up].into_iter().flatten().min();
            let Some(next) = next else { break };
            if next >= until {
                break;
            }
            let at = next.max(now);
            hook(at);
            self.tick(at).await;
            steps += 1;
        }
        steps
    }
}

/// An RSS 2.0 document with `items` of (title, link, description, pubDate RFC 2822).
pub fn rss(title: &str, items: &[(String, String, String, String)]) -> String {
    let mut s = format!(
        "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>{title}</title>\
         <link>https://example.com/</link><description>{title}</description>"
    );
    for (t, l, d, p) in items {
        s.push_str(&format!(
            "<item><title>{t}</title><link>{l}</link><description>{d}</description>\
             <pubDate>{p}</pubDate><guid>{l}</guid></item>"
        ));
    }
    s.push_str("</channel></rss>");
    s
}

/// An Atom document with `entries` of (title, link, summary, updated RFC 3339).
pub fn atom(title: &str, entries: &[(String, String, String, String)]) -> String {
    let mut s = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><feed xmlns=\"http://www.w3.org/2005/Atom\">\
         <title>{title}</title><id>urn:kairos:test:{title}</id><updated>2026-10-01T00:00:00Z</updated>"
    );
    for (t, l, sum, u) in entries {
        s.push_str(&format!(
            "<entry><title>{t}</title><link href=\"{l}\"/><id>{l}</id><updated>{u}</updated>\
             <summary>{sum}</summary></entry>"
        ));
    }
    s.push_str("</feed>");
    s
}

/// Gemini's generateContent answer with `text`.
pub fn gemini_ok(text: &str) -> Reply {
    let body = serde_json::json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
        "modelVersion": "gemini-2.5-flash"
    });
    Reply::status(200)
        .with_header("content-type", "application/json")
        .with_body(body.to_string())
}

/// Gemini's 503 when the model is overloaded (the seed's "high demand").
pub fn gemini_503() -> Reply {
    let body = serde_json::json!({"error": {"code": 503,
        "message": "The model is overloaded due to high demand. Please try again later.",
        "status": "UNAVAILABLE"}});
    Reply::status(503)
        .with_header("content-type", "application/json")
        .with_body(body.to_string())
}

/// OpenAI's chat completion answer with `text`.
pub fn openai_ok(text: &str) -> Reply {
    let body = serde_json::json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]
    });
    Reply::status(200)
        .with_header("content-type", "application/json")
        .with_body(body.to_string())
}

/// An RFC 3339 instant.
pub fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .unwrap_or_else(|e| panic!("{s:?}: {e}"))
        .to_utc()
}
