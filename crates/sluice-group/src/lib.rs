//! Consumer-group logic that needs no I/O, shared by the broker's group coordinator:
//!
//! - [`records`]: the keys and values of `__consumer_offsets` in Kafka's formats
//!   (committed offsets and classic group metadata), so Kafka's tools read them;
//! - [`assignor`]: the server-side assignors of KIP-848 (`uniform`, `range`);
//! - [`classic`]: the classic group (JoinGroup/SyncGroup/Heartbeat/LeaveGroup) state
//!   machine;
//! - [`consumer`]: the KIP-848 consumer group (ConsumerGroupHeartbeat) state machine;
//! - [`migration`]: classic-protocol members inside a consumer group and the online
//!   upgrade/downgrade between classic and consumer groups.
//!
//! The broker (`sluice-broker`'s `group` module) owns the I/O: requests, timers, and
//! the reads and writes of `__consumer_offsets`.

pub mod assignor;
pub mod classic;
pub mod consumer;
#[doc(hidden)]
pub mod fuzzing;
pub mod migration;
pub mod records;
