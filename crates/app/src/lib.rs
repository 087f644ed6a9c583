//! # kairos-app
//!
//! One kairos node, assembled in one place. [`node::NodeBuilder`] takes the node's settings
//! ([`config::Config`]: defaults, a TOML file, `KAIROS_*`, flags), opens the database it names
//! (an SQLite file or a PostgreSQL schema, migrated, the secret key checked), builds the node's
//! kinds (the built-in ones with their handlers from the settings, plus an application's own)
//! and the engine, and starts the services with leader election and wake-ups on PostgreSQL.
//!
//! `kairos serve` and `kairos worker` start a node; every other CLI command opens the same
//! builder's facade without starting anything; `kairos-embed` builds its in-process node with
//! it. The HTTP API (`kairos-server`) is built over a node, never the other way round.
//!
//! - [`config`]: the settings and the API token file.
//! - [`node`]: the builder, the database choice ([`node::Db`]) and the started node.
//! - [`monitoring`]: the Prometheus recorder and the monitor's settings from the config.
#![deny(missing_docs)]

pub mod config;
pub mod monitoring;
pub mod node;
