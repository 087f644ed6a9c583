//! Who receives audience sends: recipients, topics and subscriptions.

use crate::*;
use async_trait::async_trait;

/// Recipients, topics and the subscriptions between them, including a person's erasure.
#[async_trait]
pub trait AudienceStore: Send + Sync {
    /// Create or replace a recipient.
    async fn recipient_upsert(&self, p: RecipientUpsert) -> Result<Recipient>;
    /// Create or replace many recipients in one transaction. Returns how many were written.
    async fn recipient_upsert_many(&self, p: Vec<RecipientUpsert>) -> Result<u64>;
    /// A recipient by id.
    async fn recipient_get(&self, id: &str) -> Result<Option<Recipient>>;
    /// Recipients by id, ascending.
    async fn recipient_list(&self, p: RecipientList) -> Result<Vec<Recipient>>;
    /// Erase a recipient in one transaction: delete the recipient (with their attributes) and
    /// subscriptions, store the suppression of their address as its keyed hash (creating the
    /// erasure key on first use), and replace the address in stored inbound events and in
    /// the stored texts of their jobs. Their pending jobs are cancelled by the caller first
    /// (`job_bulk_cancel`). `None` if the recipient does not exist.
    async fn recipient_erase(&self, p: RecipientErase) -> Result<Option<RecipientErased>>;
    /// Create or replace a topic.
    async fn topic_put(&self, p: TopicPut) -> Result<Topic>;
    /// A topic by name.
    async fn topic_get(&self, name: &str) -> Result<Option<Topic>>;
    /// Topics by name (at most 1000).
    async fn topic_list(&self) -> Result<Vec<Topic>>;
    /// Delete a topic and every subscription to it, in one transaction; `false` if it did not
    /// exist.
    async fn topic_delete(&self, name: &str) -> Result<bool>;
    /// Create or replace the subscription of (recipient, topic). An unknown recipient is a
    /// `Conflict`.
    async fn subscription_put(&self, p: SubscriptionPut) -> Result<Subscription>;
    /// The subscription of (recipient, topic).
    async fn subscription_get(
        &self,
        recipient_id: &str,
        topic: &str,
    ) -> Result<Option<Subscription>>;
    /// Subscriptions by (recipient_id, topic), keyset-paginated.
    async fn subscription_list(&self, p: SubscriptionList) -> Result<Vec<Subscription>>;
    /// Disable the subscription of (recipient, topic); `false` if it was not enabled (or does
    /// not exist): the one-click unsubscribe.
    async fn subscription_disable(&self, p: SubscriptionDisable) -> Result<bool>;
    /// Delete the subscription of (recipient, topic); `false` if it did not exist.
    async fn subscription_delete(&self, p: SubscriptionDelete) -> Result<bool>;
}
