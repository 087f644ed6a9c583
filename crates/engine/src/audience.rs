//! Audience schedules: their expansion into one job per subscription × channel lives with the
//! `email` kind ([`crate::kinds::email::audience`]); this is its public path.

pub use crate::kinds::email::audience::*;
