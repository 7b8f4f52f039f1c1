//! Where a broker is reached: its advertised endpoints, from the metadata image.

use sluice_metadata::MetadataImage;

/// One advertised endpoint of this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub listener: String,
    pub host: String,
    pub port: u16,
}

/// A registered, unfenced broker's endpoint on `listener` (the one a client connected
/// to), from the metadata image.
pub fn endpoint_of(image: &MetadataImage, broker_id: i32, listener: &str) -> Option<Endpoint> {
    let broker = image.broker(broker_id).filter(|b| !b.fenced)?;
    broker
        .endpoints
        .iter()
        .find(|e| e.name == listener)
        .map(|e| Endpoint {
            listener: e.name.clone(),
            host: e.host.clone(),
            port: e.port,
        })
}
