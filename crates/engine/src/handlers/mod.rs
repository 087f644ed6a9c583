//! The built-in kinds with their handlers, built from a node's settings ([`builtin`]). Each
//! handler lives with its kind ([`crate::kinds`]); the modules here are their public paths.

pub use crate::kinds::KindSettings;
pub use crate::kinds::digest::handler as digest;
pub use crate::kinds::email::handler as email;
pub use crate::kinds::email::notify;
pub use crate::kinds::http::handler as http;
pub use crate::kinds::webhook::handler as webhook;

use crate::kinds::Kinds;

/// The built-in kinds with their handlers: `webhook`, `http` and `digest` always, `email`
/// (with the audience's webhook channel) when `settings` has a mail transport
/// ([`Kinds::builtin_running`]).
pub fn builtin(settings: KindSettings) -> Result<Kinds, kairos_channels::Error> {
    Kinds::builtin_running(&settings)
}
