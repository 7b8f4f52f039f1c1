//! Partition replication: follower fetchers, the leader's view of its followers, the
//! high watermark and the in-sync replica set.

use std::sync::Arc;

use sluice_metadata::MetadataImage;

use crate::broker::Broker;

/// Called after every change of the metadata image on this node (from the metadata
/// apply path; it must not block: start or stop tasks and return).
pub fn on_image_change(_broker: &Arc<Broker>, _image: &Arc<MetadataImage>) {}
