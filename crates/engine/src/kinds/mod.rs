//! The kind layer: everything that differs between job kinds lives here, one module (folder)
//! per kind, each implementing [`Kind`]; nothing below the engine (`kairos-core`, the stores)
//! names a kind.
//!
//! A kind owns its request validation (the `webhook`, `http`, `digest` bodies), its default
//! retry policy, its deadline and per-call timeout, its handler, what a success means besides
//! the job's state (an A/B exposure for `email`, the artifact's follow-ups for `digest`), the
//! product a catch-up looks for and the one the monitor expects.
//!
//! A node owns its kinds as a value, [`Kinds`]: the built-in ones ([`Kinds::builtin`], or
//! with their handlers built from the node's settings, [`Kinds::builtin_running`]) plus an
//! application's own ([`Kinds::with`], [`AppKind`]). Nothing is global: two nodes in one
//! process can run different kinds. Adding a built-in kind is its module implementing
//! [`Kind`] (its handler included) and providing its `BUILTIN` entry, and one line in the
//! list of `builtin.rs`. A job whose kind the node does not know gets [`Plain`]'s
//! behaviour, and fails permanently for want of a handler.

pub mod digest;
pub mod email;
pub mod http;
pub mod webhook;

mod app;
mod builtin;
mod parts;

pub use app::AppKind;
use app::Handled;
pub(crate) use builtin::Builtin;
pub use builtin::KindSettings;
#[cfg(feature = "openapi")]
pub use parts::PartSchema;
pub use parts::{KindRequest, RequestParts, RequestScope};

use crate::error::OpsError;
use crate::handler::Handler;
use chrono::{DateTime, Utc};
use kairos_core::{Job, RetryPolicy};
use kairos_store::{Schedule, Store};
use std::sync::Arc;
use std::time::Duration;

/// The handler a kind holds on a node that runs its jobs; empty on a process that only
/// validates requests and reads jobs (a CLI command).
#[derive(Clone, Default)]
pub struct HandlerSlot(Option<Arc<dyn Handler>>);

impl HandlerSlot {
    /// A slot holding `handler`.
    pub fn new(handler: Arc<dyn Handler>) -> Self {
        HandlerSlot(Some(handler))
    }
    /// The handler, if any.
    pub fn get(&self) -> Option<Arc<dyn Handler>> {
        self.0.clone()
    }
}

impl std::fmt::Debug for HandlerSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "handler"
        } else {
            "no handler"
        })
    }
}

/// Whether a kind posts to a webhook endpoint (`"webhook": {"url", "secret"}` in a request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointUse {
    /// The kind does not post to an endpoint: a `webhook` target is refused.
    None,
    /// An endpoint is optional (a digest's `digest.created` events).
    Optional,
    /// An endpoint is required.
    Required,
}

/// The largest payload a job may carry.
pub const MAX_PAYLOAD_BYTES: usize = 256 * 1024;

/// A plain payload: `{}` when none is given, at most [`MAX_PAYLOAD_BYTES`].
pub fn check_payload(p: Option<serde_json::Value>) -> Result<serde_json::Value, OpsError> {
    let p = p.unwrap_or_else(|| serde_json::json!({}));
    if p.to_string().len() > MAX_PAYLOAD_BYTES {
        return Err(OpsError::invalid(
            "payload",
            format!("larger than {MAX_PAYLOAD_BYTES} bytes"),
        ));
    }
    Ok(p)
}

/// What a kind's request validation may use.
#[derive(Clone, Copy)]
pub struct RequestEnv<'a> {
    /// The store (targets are stored when a request is accepted).
    pub store: &'a dyn Store,
    /// Now.
    pub now: DateTime<Utc>,
    /// Accept targets on private and loopback addresses (`KAIROS_ALLOW_PRIVATE_TARGETS`).
    pub allow_private_targets: bool,
    /// The time budget of one digest attempt (feed reads, the model, 5 s), for budget checks.
    pub digest_attempt_timeout: Duration,
}

/// What a schedule's `topic` means for a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicUse {
    /// The kind takes no topic.
    None,
    /// An audience schedule: each firing expands into one job per subscriber and channel; the
    /// topic is required.
    Audience,
    /// The product of each period fans out to the topic's subscribers; optional.
    FanOut,
}

/// One job kind. Every method but [`Kind::name`] has the behaviour of a plain notification as
/// its default.
#[async_trait::async_trait]
pub trait Kind: Send + Sync + 'static {
    /// The kind's name, as stored in `jobs.kind`.
    fn name(&self) -> &'static str;

    /// The field of a request the kind owns besides `payload` (`http`, `digest`), if any:
    /// given for another kind, it is refused. The facade takes it from any job, schedule or
    /// channel request as raw JSON and hands it to [`Kind::request_payload`]
    /// ([`KindRequest::part`]); a field that is no kind's part is refused as unknown.
    fn request_part(&self) -> Option<&'static str> {
        None
    }

    /// Whether a job enqueued on its own (`POST /v1/jobs`) may give the kind's part; else only
    /// a schedule (and its channels) may. A `digest` job carries its definition as its
    /// `payload`, so `digest` is a schedule's part only.
    fn request_part_on_jobs(&self) -> bool {
        true
    }

    /// The OpenAPI schema of the kind's part, documented on the request bodies that take it
    /// (`JobBody`, `ScheduleBody`, `ChannelBody`); `None`: documented as any object.
    #[cfg(feature = "openapi")]
    fn request_part_schema(&self) -> Option<PartSchema> {
        None
    }

    /// What the kind does once a request giving its `part` is accepted (a job prepared, a
    /// schedule saved): the `http` kind sets the host limits its part declares. Default:
    /// nothing.
    async fn request_accepted(
        &self,
        _env: &RequestEnv<'_>,
        _part: &serde_json::Value,
    ) -> Result<(), OpsError> {
        Ok(())
    }

    /// The payload stored for a request of this kind: the kind validates its part of the
    /// request (and stores what it needs, such as an `http` target) and refuses the parts of
    /// other kinds. The default: a plain payload (`{}` when none is given).
    async fn request_payload(
        &self,
        _env: &RequestEnv<'_>,
        req: KindRequest<'_>,
    ) -> Result<serde_json::Value, OpsError> {
        req.refuse_foreign(self.name(), self.request_part())?;
        check_payload(req.payload.cloned())
    }

    /// The retry policy of its jobs when the request gives none.
    fn default_retry(&self) -> RetryPolicy {
        RetryPolicy::notification()
    }

    /// The longest a job may take from its firing to its last attempt, waits included; a
    /// retry that would start later ends the job `dead`, and a policy whose worst case exceeds
    /// it is refused when saved. `None`: no deadline.
    fn deadline(&self) -> Option<Duration> {
        None
    }

    /// The deadline of one job: the request's own (an `http` job's `http.deadline`, carried in
    /// its payload) or else the kind's.
    fn job_deadline(&self, job: &kairos_core::Job) -> Option<Duration> {
        let _ = job;
        self.deadline()
    }

    /// The default timeout of one external call of an attempt, if the kind makes one whose
    /// timeout the request may set.
    fn call_timeout(&self) -> Option<Duration> {
        None
    }

    /// Whether its jobs post to a webhook endpoint.
    fn endpoint(&self) -> EndpointUse {
        EndpointUse::None
    }

    /// What a schedule's `topic` means for this kind.
    fn topic(&self) -> TopicUse {
        TopicUse::None
    }

    /// After a success, record the job's A/B exposure (in the completion's transaction).
    fn records_exposure(&self) -> bool {
        false
    }

    /// Whether a job of this kind without a schedule delivers to the audience topic named in
    /// its payload (its skips count towards that topic's skip rate).
    fn delivers_to_topic(&self) -> bool {
        false
    }

    /// Whether it can be one of a schedule's `channels`.
    fn is_channel(&self) -> bool {
        true
    }

    /// Whether a schedule of this kind may have catch-up times.
    fn allows_catch_up(&self) -> bool {
        true
    }

    /// The artifact a period of schedule `s` produces, by name, when the kind's product is an
    /// artifact rather than a succeeded job: what a catch-up looks for before running a period
    /// again, and what the monitor's `missing_artifacts` check expects.
    fn artifact_of(&self, _s: &Schedule) -> Option<String> {
        None
    }

    /// The handler that runs this kind's jobs on this node; `None`: this node does not run
    /// them (a job claimed anyway fails permanently, saying so).
    fn handler(&self) -> Option<Arc<dyn Handler>> {
        None
    }

    /// The handler this kind runs a job of another kind with, instead of that kind's own:
    /// the `email` kind runs the audience notifications sent on the `webhook` channel
    /// (recipient checks, templates), which are stored as `webhook` jobs.
    fn runs_instead(&self, _job: &Job) -> Option<Arc<dyn Handler>> {
        None
    }
}

/// The behaviour of a kind nobody registered here: a plain notification.
#[derive(Debug)]
pub struct Plain;

#[async_trait::async_trait]
impl Kind for Plain {
    fn name(&self) -> &'static str {
        ""
    }
}

/// The kinds a node knows: their names, request parts, defaults and handlers. A value the
/// node owns (cheap to clone and share), never a global.
#[derive(Clone)]
pub struct Kinds {
    kinds: Vec<Arc<dyn Kind>>,
}

impl std::fmt::Debug for Kinds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.kinds.iter().map(|k| k.name()))
            .finish()
    }
}

impl Default for Kinds {
    fn default() -> Self {
        Kinds::builtin()
    }
}

impl Kinds {
    /// A set of `kinds` (a later kind of the same name replaces an earlier one).
    pub fn new(kinds: Vec<Box<dyn Kind>>) -> Self {
        let mut out = Kinds { kinds: Vec::new() };
        for k in kinds {
            out.push(Arc::from(k));
        }
        out
    }

    fn push(&mut self, k: Arc<dyn Kind>) {
        match self.kinds.iter().position(|o| o.name() == k.name()) {
            Some(i) => self.kinds[i] = k,
            None => self.kinds.push(k),
        }
    }

    /// These kinds and `kind` (replacing a kind of the same name).
    pub fn with(mut self, kind: impl Kind) -> Self {
        self.push(Arc::new(kind));
        self
    }

    /// These kinds and `kind`, shared (replacing a kind of the same name).
    pub fn with_shared(mut self, kind: Arc<dyn Kind>) -> Self {
        self.push(kind);
        self
    }

    /// These kinds with `handler` running the jobs of kind `name`: a known kind keeps its
    /// description (request part, defaults) and gets this handler; an unknown name becomes
    /// an [`AppKind`] with the plain defaults.
    pub fn with_handler(mut self, name: &'static str, handler: Arc<dyn Handler>) -> Self {
        match self.kinds.iter().position(|o| o.name() == name) {
            Some(i) => {
                let inner = self.kinds[i].clone();
                self.kinds[i] = Arc::new(Handled { inner, handler });
            }
            None => self.kinds.push(Arc::new(AppKind::new(name, handler))),
        }
        self
    }

    /// The handler that runs `job` on this node: the one a kind runs instead of the job's
    /// own kind ([`Kind::runs_instead`]), else its kind's.
    pub fn handler_for(&self, job: &Job) -> Option<Arc<dyn Handler>> {
        self.kinds
            .iter()
            .find_map(|k| k.runs_instead(job))
            .or_else(|| self.find(job.kind.as_str())?.handler())
    }

    /// The kind named `name`, if registered.
    pub fn find(&self, name: &str) -> Option<&dyn Kind> {
        self.kinds
            .iter()
            .find(|k| k.name() == name)
            .map(|k| k.as_ref())
    }

    /// The kind named `name`; [`Plain`] when none is registered.
    pub fn get(&self, name: &str) -> &dyn Kind {
        self.find(name).unwrap_or(&Plain)
    }

    /// The names, in the order they were added.
    pub fn names(&self) -> Vec<&'static str> {
        self.kinds.iter().map(|k| k.name()).collect()
    }

    /// The names of the kinds whose jobs this node runs (that have a handler), sorted.
    pub fn running(&self) -> Vec<&'static str> {
        let mut n: Vec<_> = self
            .kinds
            .iter()
            .filter(|k| k.handler().is_some())
            .map(|k| k.name())
            .collect();
        n.sort_unstable();
        n
    }

    /// The kinds whose jobs post to their endpoint ([`EndpointUse::Required`]): the sends
    /// an endpoint's health counts.
    pub fn posting_to_endpoints(&self) -> Vec<String> {
        self.kinds
            .iter()
            .filter(|k| k.endpoint() == EndpointUse::Required)
            .map(|k| k.name().to_string())
            .collect()
    }

    /// The default retry policy of kind `name`.
    pub fn default_retry(&self, name: &str) -> RetryPolicy {
        self.get(name).default_retry()
    }

    /// A job's retry policy: its own, or its kind's default when it was stored without one.
    pub fn retry_of(&self, job: &Job) -> RetryPolicy {
        job.retry
            .clone()
            .unwrap_or_else(|| self.default_retry(job.kind.as_str()))
    }

    /// Whether `policy` is the default of kind `name` (then it is stored as NULL).
    pub fn is_default_retry(&self, name: &str, policy: &RetryPolicy) -> bool {
        *policy == self.default_retry(name)
    }

    /// The names of the kinds whose jobs without a schedule deliver to a payload's topic.
    pub fn topic_kinds(&self) -> Vec<String> {
        self.kinds
            .iter()
            .filter(|k| k.delivers_to_topic())
            .map(|k| k.name().to_string())
            .collect()
    }

    /// The names of the kinds that send mail (a success records an A/B exposure): the mails
    /// sent of the deliverability checks.
    pub fn mail_kinds(&self) -> Vec<String> {
        self.kinds
            .iter()
            .filter(|k| k.records_exposure())
            .map(|k| k.name().to_string())
            .collect()
    }

    /// The names of the kinds that take a schedule `topic`.
    pub fn topic_takers(&self) -> Vec<&'static str> {
        self.kinds
            .iter()
            .filter(|k| k.topic() != TopicUse::None)
            .map(|k| k.name())
            .collect()
    }

    /// The artifact a period of `s` produces, if its kind's product is one.
    pub fn artifact_of(&self, s: &Schedule) -> Option<String> {
        self.get(s.kind.as_str()).artifact_of(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_kinds_own_their_defaults() {
        let k = Kinds::builtin();
        assert_eq!(k.names(), ["webhook", "http", "email", "digest"]);
        assert_eq!(k.default_retry("http"), RetryPolicy::http_call());
        assert_eq!(k.default_retry("digest"), RetryPolicy::http_call());
        assert_eq!(k.default_retry("webhook"), RetryPolicy::notification());
        assert_eq!(k.default_retry("email"), RetryPolicy::notification());
        // A kind nobody registered behaves as a plain notification.
        assert_eq!(k.default_retry("bench"), RetryPolicy::notification());
        assert_eq!(k.get("digest").deadline(), Some(Duration::from_secs(900)));
        assert_eq!(k.get("http").deadline(), None);
        assert_eq!(k.get("webhook").deadline(), None);
        assert_eq!(k.get("http").call_timeout(), Some(Duration::from_secs(120)));
        assert_eq!(
            k.get("digest").call_timeout(),
            Some(Duration::from_secs(120))
        );
        assert_eq!(k.get("webhook").call_timeout(), None);
        assert!(k.get("email").records_exposure());
        assert!(!k.get("webhook").records_exposure());
        assert_eq!(k.topic_kinds(), ["email"]);
        assert_eq!(k.mail_kinds(), ["email"]);
        assert_eq!(k.topic_takers(), ["email", "digest"]);
    }

    #[test]
    fn a_later_registration_replaces_an_earlier_one() {
        struct Slow;
        impl Kind for Slow {
            fn name(&self) -> &'static str {
                "webhook"
            }
            fn deadline(&self) -> Option<Duration> {
                Some(Duration::from_secs(1))
            }
        }
        let k = Kinds::new(vec![Box::new(webhook::Webhook::default()), Box::new(Slow)]);
        assert_eq!(k.names(), ["webhook"]);
        assert_eq!(k.get("webhook").deadline(), Some(Duration::from_secs(1)));
    }
}
