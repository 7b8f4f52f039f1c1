//! The Sluice broker.
//!
//! - [`config`], [`properties`]: Kafka's `server.properties` format, keys, defaults and
//!   validation; [`topic_config`]: topic-level keys, validation, synonyms and sources.
//! - [`network`]: frames, pipelining, limits; [`apis`]: the API table and dispatch;
//!   `handlers`: one module per API family, reading the metadata image.
//! - [`broker`]: the shared state (metadata image, local replicas, the metadata log
//!   writer); [`fetch_session`]: KIP-227 incremental fetch sessions.
//! - [`node`]: runs a node (`sluice server`): log directories, metadata log, listeners,
//!   periodic log tasks, clean shutdown; [`metrics`]: the Prometheus `/metrics` endpoint.

pub mod apis;
mod append;
pub mod broker;
pub mod config;
pub mod connection_quotas;
pub mod controller;
pub mod coordinator;
pub mod elr;
pub mod endpoint;
pub mod errors;
pub mod features;
pub mod fetch_session;
pub mod forwarding;
#[doc(hidden)]
pub mod fuzzing;
pub mod group;
mod handlers;
pub mod image;
pub mod liveness;
pub mod log_cleaner;
pub mod metrics;
pub mod network;
pub mod node;
pub mod properties;
pub mod quorum;
pub mod replica;
pub mod replication;
pub mod request;
pub mod topic_config;
pub mod txn;

pub use apis::decode_request;
pub use config::{BrokerConfig, ConfigError, EMBEDDED_SERVER_PROPERTIES, Listener, Role};
