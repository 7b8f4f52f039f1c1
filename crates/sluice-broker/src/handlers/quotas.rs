//! DescribeClientQuotas, as Kafka 4.1's `ClientQuotasImage.describe` answers it, over a
//! cluster that stores no client quotas yet (`ClientQuotaRecord`s and
//! AlterClientQuotas are a later part of issue 25): the filter is checked with
//! Kafka's rules and messages, and matches nothing. `kafka-configs.sh --describe
//! --entity-type users` asks it before it describes SCRAM credentials.

use std::collections::BTreeSet;

use kafka_protocol::messages::*;
use sluice_protocol::ErrorCode;

use super::common::str_bytes;
use crate::request::RequestContext;

pub async fn describe_client_quotas(
    _context: &RequestContext,
    request: DescribeClientQuotasRequest,
) -> DescribeClientQuotasResponse {
    match check_filter(&request) {
        Ok(()) => DescribeClientQuotasResponse::default().with_entries(Some(Vec::new())),
        Err((code, message)) => DescribeClientQuotasResponse::default()
            .with_error_code(code.code())
            .with_error_message(Some(str_bytes(message)))
            .with_entries(None),
    }
}

fn check_filter(request: &DescribeClientQuotasRequest) -> Result<(), (ErrorCode, String)> {
    let invalid = |message: String| (ErrorCode::INVALID_REQUEST, message);
    let mut seen = BTreeSet::new();
    for component in &request.components {
        let entity = component.entity_type.as_str();
        if entity.is_empty() {
            return Err(invalid("Invalid empty entity type.".into()));
        }
        if !seen.insert(entity.to_string()) {
            return Err(invalid(format!(
                "Entity type {entity} cannot appear more than once in the filter."
            )));
        }
        if !["ip", "user", "client-id"].contains(&entity) {
            return Err((
                ErrorCode::UNSUPPORTED_VERSION,
                format!("Unsupported entity type {entity}"),
            ));
        }
        match (component.match_type, component._match.is_some()) {
            (0, false) => {
                return Err(invalid(
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.".into(),
                ));
            }
            (1, true) => {
                return Err(invalid(
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                        .into(),
                ));
            }
            (2, true) => {
                return Err(invalid(
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                        .into(),
                ));
            }
            (0..=2, _) => {}
            (other, _) => return Err(invalid(format!("Unknown match type {other}"))),
        }
    }
    if seen.contains("ip") && (seen.contains("user") || seen.contains("client-id")) {
        return Err(invalid(
            "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."
                .into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::describe_client_quotas_request::ComponentData;

    fn component(entity: &str, match_type: i8, name: Option<&str>) -> ComponentData {
        ComponentData::default()
            .with_entity_type(str_bytes(entity))
            .with_match_type(match_type)
            .with_match(name.map(str_bytes))
    }

    #[test]
    fn filters_are_checked_as_kafka_checks_them() {
        let check = |components: Vec<ComponentData>| {
            check_filter(&DescribeClientQuotasRequest::default().with_components(components))
        };
        assert_eq!(check(vec![]), Ok(()));
        assert_eq!(check(vec![component("user", 0, Some("alice"))]), Ok(()));
        assert_eq!(
            check(vec![
                component("user", 2, None),
                component("client-id", 1, None)
            ]),
            Ok(())
        );
        let refused = |components, code: ErrorCode, message: &str| {
            assert_eq!(check(components), Err((code, message.to_string())));
        };
        refused(
            vec![component("", 2, None)],
            ErrorCode::INVALID_REQUEST,
            "Invalid empty entity type.",
        );
        refused(
            vec![component("user", 2, None), component("user", 1, None)],
            ErrorCode::INVALID_REQUEST,
            "Entity type user cannot appear more than once in the filter.",
        );
        refused(
            vec![component("group", 2, None)],
            ErrorCode::UNSUPPORTED_VERSION,
            "Unsupported entity type group",
        );
        refused(
            vec![component("user", 0, None)],
            ErrorCode::INVALID_REQUEST,
            "Request specified MATCH_TYPE_EXACT, but set match string to null.",
        );
        refused(
            vec![component("user", 1, Some("a"))],
            ErrorCode::INVALID_REQUEST,
            "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
        );
        refused(
            vec![component("user", 7, None)],
            ErrorCode::INVALID_REQUEST,
            "Unknown match type 7",
        );
        refused(
            vec![component("ip", 2, None), component("user", 2, None)],
            ErrorCode::INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.",
        );
    }
}
