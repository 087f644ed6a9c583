//! What providers tell us: inbound events (bounces, complaints, unsubscribes), and the
//! deliverability they add up to.

use crate::*;
use async_trait::async_trait;

/// Inbound provider events, stored once and applied once.
#[async_trait]
pub trait InboundStore: Send + Sync {
    /// Store a provider event once (`ON CONFLICT DO NOTHING RETURNING`), matched to the job
    /// whose attempt recorded its provider message id, and (only on its first delivery)
    /// apply its suppressions with their cascade, all in one transaction.
    async fn inbound_event_record(&self, p: InboundEventRecord) -> Result<InboundEventRecorded>;
    /// A stored inbound event.
    async fn inbound_event_get(&self, source: &str, id: &str) -> Result<Option<InboundEvent>>;
    /// Delete inbound events received before a time, oldest first, at most `limit`; returns
    /// how many (the pruner's retention of events).
    async fn inbound_event_prune(&self, p: InboundEventPrune) -> Result<u64>;
    /// Per A/B variant of a topic, its exposures and how many of those mails each provider
    /// outcome reached (variant stats).
    async fn exposure_outcome_count(
        &self,
        p: ExposureOutcomeCount,
    ) -> Result<Vec<MailOutcomeCount>>;
    /// Inbound events of one action received in a window, per source and type (the
    /// `inbound_unknown` check).
    async fn inbound_event_count(&self, p: InboundEventCount) -> Result<Vec<InboundEventTally>>;
}
