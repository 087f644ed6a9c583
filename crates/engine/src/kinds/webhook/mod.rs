//! The `webhook` kind: one signed POST (Standard Webhooks) to a stored endpoint. The default
//! kind of a job or schedule that names none.

mod endpoints;
pub(crate) use endpoints::EndpointReads;
pub mod handler;

use super::{EndpointUse, Kind};

/// The kind's name.
pub const NAME: &str = "webhook";

/// The `webhook` kind.
#[derive(Debug, Clone, Copy)]
pub struct Webhook;

impl Kind for Webhook {
    fn name(&self) -> &'static str {
        NAME
    }

    fn endpoint(&self) -> EndpointUse {
        EndpointUse::Required
    }
}
