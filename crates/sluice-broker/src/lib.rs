//! The Sluice broker.
//!
//! So far this crate holds the broker's configuration (Kafka's `server.properties`
//! format, keys, defaults and validation: [`config`], [`properties`]) and its network
//! layer ([`network`]: frames, pipelining, limits) with the API table ([`apis`]), which
//! serves ApiVersions only. The metadata log and image and the other request handlers
//! of issue 3 build on them. [`node`] runs a node (`sluice server`): log directories,
//! listeners, clean shutdown.

pub mod apis;
pub mod config;
pub mod network;
pub mod node;
pub mod properties;

pub use config::{BrokerConfig, ConfigError, EMBEDDED_SERVER_PROPERTIES, Listener, Role};
