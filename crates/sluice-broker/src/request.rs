//! What a request handler is given and returns: the request's context (the node's
//! services through [`Broker`], the listener, the client) and the [`Outcome`] the
//! connection acts on, with the helpers that decode a request body and encode a
//! response.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::{Decodable, Encodable};

use crate::broker::Broker;

/// What the connection does with a request.
#[derive(Debug)]
pub enum Outcome {
    /// Send this response body (encoded at the version the response goes out at).
    Respond { body: Bytes, response_version: i16 },
    /// Send nothing (Produce with acks=0).
    NoResponse,
    /// Close the connection, as Kafka does for a request it cannot serve.
    Close { reason: String },
}

pub use crate::principal::Principal;

/// Who sent a request and where.
#[derive(Debug, Clone)]
pub struct RequestContext {
    pub broker: Arc<Broker>,
    /// Who the request acts as.
    pub principal: Principal,
    /// The listener the request came in on (its advertised endpoint answers Metadata).
    pub listener: Arc<str>,
    pub version: i16,
    pub client_id: Option<String>,
    /// The client's address as Kafka shows it in groups (`/127.0.0.1`).
    pub client_host: Arc<str>,
    /// Relayed by another node to this one as the active controller
    /// ([`crate::forwarding`]): served here, never forwarded again.
    pub forwarded: bool,
}

/// Encodes a response at `version`.
pub fn respond<R: Encodable>(response: &R, version: i16) -> Outcome {
    let mut out = BytesMut::new();
    match response.encode(&mut out, version) {
        Ok(()) => Outcome::Respond {
            body: out.freeze(),
            response_version: version,
        },
        // A handler set a field this version cannot carry: a bug, but not the client's
        // to pay for with a hang.
        Err(error) => Outcome::Close {
            reason: format!("response does not encode at v{version}: {error}"),
        },
    }
}

/// Decodes a request body, or says why the connection closes.
pub fn decode<R: Decodable>(api_key: ApiKey, body: &mut Bytes, version: i16) -> Result<R, Outcome> {
    R::decode(body, version).map_err(|error| Outcome::Close {
        reason: format!("malformed {api_key:?} v{version} request: {error}"),
    })
}
