//! What decides and records audience sends: suppressions, expansions and exposures.

use crate::*;
use async_trait::async_trait;

/// The suppression list, the paged expansion of an audience firing into jobs, and the
/// exposure counts of a topic's variants.
#[async_trait]
pub trait DeliveryStore: Send + Sync {
    /// Suppress an address; `false` if it was suppressed already (the first reason stays).
    async fn suppression_add(&self, p: SuppressionAdd) -> Result<bool>;
    /// Suppress an address and disable every subscription of every recipient with it, in one
    /// transaction.
    async fn suppression_apply(&self, p: SuppressionApply) -> Result<SuppressionApplied>;
    /// The suppression of an address (compared normalized), if any.
    async fn suppression_get(&self, address: &str) -> Result<Option<Suppression>>;
    /// The suppression list by address, keyset-paginated.
    async fn suppression_list(&self, p: SuppressionList) -> Result<Vec<Suppression>>;
    /// Remove an address from the suppression list, logging the reason; `false` if it was not
    /// on it.
    async fn suppression_remove(&self, p: SuppressionRemove) -> Result<bool>;
    /// Record that a firing must be expanded; `false` if it was recorded already.
    async fn expansion_begin(&self, p: ExpansionBegin) -> Result<bool>;
    /// Expansions not done, least recently advanced first.
    async fn expansion_pending(&self, limit: i64) -> Result<Vec<Expansion>>;
    /// One expansion.
    async fn expansion_get(&self, schedule_id: &str, period_key: &str)
    -> Result<Option<Expansion>>;
    /// Insert a page of jobs and move the cursor in one transaction; `None` (nothing
    /// written) if the cursor was not `expected_cursor` any more.
    async fn expansion_advance(&self, p: ExpansionAdvance) -> Result<Option<Vec<String>>>;
    /// Exposures (successful sends) per variant of a topic.
    async fn exposure_counts(&self, topic: &str) -> Result<Vec<ExposureCount>>;
}
