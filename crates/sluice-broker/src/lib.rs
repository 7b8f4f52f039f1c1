//! The Sluice broker.
//!
//! So far this crate holds the broker's configuration (Kafka's `server.properties`
//! format, keys, defaults and validation: [`config`], [`properties`]) and its network
//! layer ([`network`]: frames, pipelining, limits) with the API table ([`apis`]), which
//! serves ApiVersions only. The metadata log and image and the other request handlers
//! of issue 3 build on them; the `sluice server` command arrives with them.

pub mod apis;
pub mod config;
pub mod network;
pub mod properties;

pub use config::{BrokerConfig, ConfigError, EMBEDDED_SERVER_PROPERTIES, Listener, Role};
