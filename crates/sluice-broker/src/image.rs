//! How services see the metadata image without knowing who applies it: an
//! [`ImageView`] reads the current image (replaced whole after each metadata change),
//! and a [`MetadataPublisher`] is told of each new image, in the order `Broker::new`
//! lists them (the dynamic settings, the replicas, then the coordinators that wait on
//! their roles).

use std::sync::Arc;

use sluice_metadata::MetadataImage;
use tokio::sync::watch;

/// A read handle on the node's current metadata image.
#[derive(Debug, Clone)]
pub struct ImageView(watch::Receiver<Arc<MetadataImage>>);

impl ImageView {
    pub fn new(receiver: watch::Receiver<Arc<MetadataImage>>) -> ImageView {
        ImageView(receiver)
    }

    /// A view of a fixed image (tests).
    pub fn fixed(image: MetadataImage) -> ImageView {
        let (sender, receiver) = watch::channel(Arc::new(image));
        // The view keeps the last value after the sender is gone.
        drop(sender);
        ImageView(receiver)
    }

    /// The image as last applied.
    pub fn current(&self) -> Arc<MetadataImage> {
        self.0.borrow().clone()
    }
}

/// A service that follows the metadata image (Kafka's `MetadataPublisher`).
pub trait MetadataPublisher: Send + Sync {
    /// Called once per applied image, after the image is current.
    fn publish(&self, image: &Arc<MetadataImage>);
}
