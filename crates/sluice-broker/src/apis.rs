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
/// Kafka's INVALID_REQUEST error code.
pub const INVALID_REQUEST: i16 = 42;

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

/// ApiVersions, as Kafka 4.1 answers it:
/// - a version Sluice does not serve gets a v0 response with UNSUPPORTED_VERSION that
///   lists only ApiVersions' own range, so the client retries with one it shares (KIP-511);
/// - v3+ checks the client software name and version (KIP-511's pattern) and answers
///   INVALID_REQUEST with no API list when they do not match;
/// - a body that does not decode closes the connection.
fn api_versions(version: i16, min: i16, max: i16, body: &mut Bytes) -> Outcome {
    let entry = |key: ApiKey, min: i16, max: i16| {
        let mut entry = ApiVersion::default();
        entry.api_key = key as i16;
        entry.min_version = min;
        entry.max_version = max;
        entry
    };
    let mut response = ApiVersionsResponse::default();
    let response_version = if version > max || version < min {
        response.error_code = UNSUPPORTED_VERSION;
        response.api_keys = vec![entry(ApiKey::ApiVersions, min, max)];
        0
    } else {
        let request = match ApiVersionsRequest::decode(body, version) {
            Ok(request) => request,
            Err(error) => {
                return Outcome::Close {
                    reason: format!("malformed ApiVersions v{version} request: {error}"),
                };
            }
        };
        if version >= 3
            && !(valid_client_software(&request.client_software_name)
                && valid_client_software(&request.client_software_version))
        {
            response.error_code = INVALID_REQUEST;
        } else {
            response.api_keys = SUPPORTED_APIS
                .iter()
                .map(|(key, min, max)| entry(*key, *min, *max))
                .collect();
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

/// Kafka's rule for ApiVersions v3+ client software names and versions:
/// `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`.
fn valid_client_software(text: &str) -> bool {
    let bytes = text.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_software_names_follow_kafkas_pattern() {
        let cases = [
            ("librdkafka", true),
            ("apache-kafka-java", true),
            ("4.1.1", true),
            ("a", true),
            ("", false),
            ("-leading", false),
            ("trailing.", false),
            ("with space", false),
            ("under_score", false),
        ];
        for (text, valid) in cases {
            assert_eq!(valid_client_software(text), valid, "{text:?}");
        }
    }
}
