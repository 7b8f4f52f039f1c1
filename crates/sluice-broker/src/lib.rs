//! The Sluice broker. Its modules form layers with no import circle between them
//! (`scripts/check-import-cycles`), from the bottom:
//!
//! - pure modules: [`config`], [`properties`] (Kafka's `server.properties` format, keys,
//!   defaults, validation), [`topic_config`] (topic keys, synonyms, sources),
//!   [`errors`], [`features`], [`endpoint`], [`liveness`], [`elr`], [`image`] (how
//!   services read and follow the metadata image), [`scram`] (RFC 5802/7677 against
//!   the image's credentials), [`principal`], [`security_protocol`], [`tls`] (rustls
//!   listeners and mTLS principals);
//! - [`coordinator`] (the runtime under [`group`] and [`txn`]; it writes through the
//!   `PartitionWriter` trait, which the replica manager implements);
//! - the replica layer: [`replica`], [`replication`] (`ReplicaManager`: the hosted
//!   replicas and their logs, leader append, high-watermark waits, follower fetching,
//!   ISR changes), [`fetch_session`];
//! - [`broker`]: the node's state holding those services; [`quorum`]: the Raft metadata
//!   quorum;
//! - what uses a `Broker`: [`controller`], [`forwarding`], [`request`] (the request
//!   context), `handlers` (one module per API family), [`apis`] (the API table and
//!   dispatch, the quorum's private requests), [`network`] (frames, pipelining, limits;
//!   [`connection_quotas`]),
//!   [`tls_reload`] (certificates reloaded on a dynamic config change), [`log_cleaner`],
//!   [`metrics`] (the Prometheus `/metrics` endpoint), and [`node`],
//!   which runs a node (`sluice server`) and wires the services together.

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
pub mod principal;
pub mod properties;
pub mod quorum;
pub mod refused;
pub mod replica;
pub mod replication;
pub mod request;
pub mod sasl;
pub mod scram;
pub mod security_protocol;
pub mod tls;
pub mod tls_reload;
pub mod topic_config;
pub mod txn;

pub use apis::decode_request;
pub use config::{BrokerConfig, ConfigError, EMBEDDED_SERVER_PROPERTIES, Listener, Role};
