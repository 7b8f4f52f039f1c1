//! The Sluice broker.
//!
//! So far this crate holds the broker's configuration: Kafka's `server.properties`
//! format, keys, defaults and validation ([`config`], [`properties`]). The network
//! server, the metadata log and image, and the request handlers of issue 3 build on it;
//! until they land, nothing here listens on a socket.

pub mod config;
pub mod properties;

pub use config::{BrokerConfig, ConfigError, EMBEDDED_SERVER_PROPERTIES, Listener, Role};
