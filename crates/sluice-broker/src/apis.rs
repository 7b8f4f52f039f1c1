//! The Kafka APIs this broker serves, their version ranges, and request dispatch.
//!
//! Apache Kafka 4.1 is the reference: each API is advertised from Kafka 4.1's minimum
//! version up to the highest version whose fields Sluice implements; an API Sluice does
//! not serve is absent from ApiVersions. Versions grow as later work adds fields.
//!
//! Error codes for this API family are mapped here and nowhere else.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader};
use kafka_protocol::protocol::{Decodable, Encodable};

/// Kafka's UNSUPPORTED_VERSION error code.
pub const UNSUPPORTED_VERSION: i16 = 35;

/// (API, Kafka 4.1's minimum version, the highest version Sluice implements).
pub const SUPPORTED_APIS: &[(ApiKey, i16, i16)] = &[(ApiKey::ApiVersions, 0, 4)];

/// The version range Sluice serves for `api_key`, if it serves it.
pub fn supported_versions(api_key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED_APIS
        .iter()
        .find(|(key, _, _)| *key == api_key)
        .map(|(_, min, max)| (*min, *max))
}

/// What the connection does with a request.
#[derive(Debug)]
pub enum Outcome {
    /// Send this response body (encoded at the version the response goes out at).
    Respond { body: Bytes, response_version: i16 },
    /// Close the connection, as Kafka does for a request it cannot serve.
    Close { reason: String },
}

/// Routes one decoded request to its handler.
pub fn dispatch(api_key: ApiKey, header: &RequestHeader, mut body: Bytes) -> Outcome {
    let version = header.request_api_version;
    let Some((min, max)) = supported_versions(api_key) else {
        return Outcome::Close {
            reason: format!("unsupported API {api_key:?}"),
        };
    };
    if api_key == ApiKey::ApiVersions {
        return api_versions(version, min, max, &mut body);
    }
    if version < min || version > max {
        return Outcome::Close {
            reason: format!("unsupported version {version} of {api_key:?} (serving {min}..={max})"),
        };
    }
    Outcome::Close {
        reason: format!("{api_key:?} has no handler"),
    }
}

/// ApiVersions. A version newer than Sluice serves is answered at version 0 with
/// UNSUPPORTED_VERSION and the supported ranges, so the client can retry with one it
/// shares (KIP-511); a request that does not decode closes the connection.
fn api_versions(version: i16, min: i16, max: i16, body: &mut Bytes) -> Outcome {
    let mut response = ApiVersionsResponse::default();
    response.api_keys = SUPPORTED_APIS
        .iter()
        .map(|(key, min, max)| {
            let mut entry = ApiVersion::default();
            entry.api_key = *key as i16;
            entry.min_version = *min;
            entry.max_version = *max;
            entry
        })
        .collect();
    let response_version = if version > max || version < min {
        response.error_code = UNSUPPORTED_VERSION;
        0
    } else {
        if let Err(error) = ApiVersionsRequest::decode(body, version) {
            return Outcome::Close {
                reason: format!("malformed ApiVersions v{version} request: {error}"),
            };
        }
        version
    };
    let mut out = BytesMut::new();
    response
        .encode(&mut out, response_version)
        .expect("an ApiVersions response of supported fields encodes");
    Outcome::Respond {
        body: out.freeze(),
        response_version,
    }
}
