//! The role traits of the storage seam: one trait per thing the engine needs from a
//! database, each small enough to read on one screen. [`crate::Store`] is all of them.

mod artifacts;
mod audience;
mod delivery;
mod endpoints;
mod inbound;
mod insight;
mod job_admin;
mod jobs;
mod node;
mod schedules;

pub use artifacts::ArtifactStore;
pub use audience::AudienceStore;
pub use delivery::DeliveryStore;
pub use endpoints::EndpointStore;
pub use inbound::InboundStore;
pub use insight::InsightStore;
pub use job_admin::JobAdminStore;
pub use jobs::JobStore;
pub use node::NodeStore;
pub use schedules::ScheduleStore;
