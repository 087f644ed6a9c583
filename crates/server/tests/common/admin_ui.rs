//! The admin UI over plain HTTP, as the admin tests drive it (`admin.rs`, `admin_pages.rs`).

use super::TestApp;
use chrono::{DateTime, Utc};
use kairos_core::Clock;
use kairos_testkit::{Reply, TestReceiver};
use reqwest::StatusCode;
use serde_json::json;

pub const TOKEN: &str = "admin-test-token-of-at-least-32-chars";
pub const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// An operator's browser over plain HTTP: the app, a webhook receiver, the session cookie.
pub struct Ui {
    /// The app.
    pub app: TestApp,
    /// Where webhook jobs post.
    pub receiver: TestReceiver,
    /// The session cookie once logged in.
    pub cookie: Option<String>,
}

impl std::ops::Deref for Ui {
    type Target = TestApp;
    fn deref(&self) -> &TestApp {
        &self.app
    }
}

/// A response as the tests read it.
pub struct Page {
    /// The status.
    pub status: StatusCode,
    /// `Location`.
    pub location: Option<String>,
    /// `Set-Cookie`.
    pub set_cookie: Option<String>,
    /// The body.
    pub body: String,
}

/// The app's start.
pub fn start_time() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-30T10:00:00Z")
        .expect("instant")
        .to_utc()
}

impl Ui {
    pub async fn start() -> Ui {
        Ui {
            app: TestApp::start(start_time(), TOKEN).await,
            receiver: TestReceiver::start().await,
            cookie: None,
        }
    }

    /// [`Ui::start`], with a last say over the app's state.
    pub async fn start_with(
        state: impl FnOnce(kairos_server::AppState) -> kairos_server::AppState,
    ) -> Ui {
        Ui {
            app: TestApp::start_with(start_time(), TOKEN, state).await,
            receiver: TestReceiver::start().await,
            cookie: None,
        }
    }

    pub async fn send(&self, req: reqwest::RequestBuilder) -> Page {
        let req = match &self.cookie {
            Some(c) => req.header("cookie", c),
            None => req,
        };
        let res = req.send().await.expect("request");
        let header = |n: &str| {
            res.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let (location, set_cookie) = (header("location"), header("set-cookie"));
        let status = res.status();
        Page {
            status,
            location,
            set_cookie,
            body: res.text().await.expect("body"),
        }
    }

    pub async fn get(&self, path: &str) -> Page {
        self.send(self.http.get(format!("{}{path}", self.base)))
            .await
    }

    pub async fn post_form(&self, path: &str, form: &[(&str, &str)]) -> Page {
        let body = super::form_body(form);
        self.send(
            self.http
                .post(format!("{}{path}", self.base))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body),
        )
        .await
    }

    pub async fn login(&mut self) {
        let p = self.post_form("/admin/login", &[("token", TOKEN)]).await;
        assert_eq!(p.status, StatusCode::SEE_OTHER, "{}", p.body);
        let c = p.set_cookie.expect("a session cookie");
        assert!(
            c.contains("HttpOnly") && c.contains("SameSite=Strict"),
            "{c}"
        );
        self.cookie = Some(c.split(';').next().expect("cookie pair").to_string());
    }

    /// The CSRF token embedded in a page's forms.
    pub fn csrf_of(page: &Page) -> String {
        let marker = "name=\"csrf\" value=\"";
        let i = page.body.find(marker).expect("a form with a csrf field") + marker.len();
        page.body[i..]
            .split('"')
            .next()
            .expect("csrf value")
            .to_string()
    }

    /// Enqueue a webhook job with one attempt; the receiver's next reply decides its fate.
    pub async fn job(&self, reply: u16) -> String {
        self.job_replying(Reply::status(reply), 1).await
    }

    /// A webhook job with the kind's default retries whose first attempt fails (500):
    /// `available` again, waiting for its retry.
    pub async fn job_with_retries(&self) -> String {
        self.job_replying(Reply::status(500), 0).await
    }

    /// Enqueue a webhook job due now to the receiver, and leave it to wait.
    pub async fn enqueue_due(&self) -> kairos_core::Job {
        self.kairos
            .job_enqueue(kairos_engine::ops::NewJob {
                webhook: Some(kairos_engine::ops::WebhookTarget {
                    url: self.receiver.url("/hook"),
                    secret: SECRET.into(),
                }),
                ..Default::default()
            })
            .await
            .expect("enqueue")
            .0
    }

    /// Enqueue a webhook job with `max_attempts` (0: the kind's default retries) and run it
    /// once against `reply`.
    pub async fn job_replying(&self, reply: Reply, max_attempts: u32) -> String {
        self.receiver.respond_with(vec![reply]);
        let (job, _) = self
            .kairos
            .job_enqueue(kairos_engine::ops::NewJob {
                webhook: Some(kairos_engine::ops::WebhookTarget {
                    url: self.receiver.url("/hook"),
                    secret: SECRET.into(),
                }),
                payload: Some(json!({"n": 1})),
                retry: (max_attempts > 0).then(|| {
                    serde_json::from_value(json!({"max_attempts": max_attempts})).expect("retry")
                }),
                ..Default::default()
            })
            .await
            .expect("enqueue");
        self.engine
            .executor()
            .run_once(self.clock.now())
            .await
            .expect("executor");
        job.id
    }
}

impl Page {
    /// The body with the HTML escapes undone (`&#x2f;`, `&amp;`, …), to look for plain text.
    pub fn text(&self) -> String {
        self.body
            .replace("&#x2f;", "/")
            .replace("&quot;", "\"")
            .replace("&#x27;", "'")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
    }
}
