//! `authorizer.class.name`, `super.users` and `allow.everyone.if.no.acl.found`: whether
//! requests are authorized against the cluster's ACLs, and how.

use sluice_metadata::acl::AuthorizerSettings;

use crate::refused::Refused;

/// Kafka's KRaft authorizer, the one Sluice implements (its rules are in
/// `sluice_metadata::acl`).
pub const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// The authorizer's settings, or `None` when `authorizer.class.name` is empty (Kafka's
/// default: every request is allowed, and the ACL APIs answer SECURITY_DISABLED).
///
/// Requests are not authorized yet (issue 25): until they are, a configuration that
/// asks for an authorizer is refused at load, as a TLS listener was, rather than served
/// without the checks it asked for.
pub fn authorizer(
    class: &str,
    super_users: &str,
    allow_everyone_if_no_acl_found: bool,
) -> Result<Option<AuthorizerSettings>, Refused> {
    match parse(class, super_users, allow_everyone_if_no_acl_found)? {
        None => Ok(None),
        Some(_) => Err(invalid(
            "authorizer.class.name",
            STANDARD_AUTHORIZER,
            "requests are not authorized by ACLs yet; leave authorizer.class.name unset".into(),
        )),
    }
}

fn invalid(key: &str, value: &str, reason: String) -> Refused {
    Refused {
        key: key.into(),
        value: value.into(),
        reason,
    }
}

/// Checks the three keys as Kafka reads them: a class other than StandardAuthorizer is
/// refused rather than run unauthorized; `super.users` is `;`-separated principals.
fn parse(
    class: &str,
    super_users: &str,
    allow_everyone_if_no_acl_found: bool,
) -> Result<Option<AuthorizerSettings>, Refused> {
    let class = class.trim();
    if class.is_empty() {
        return Ok(None);
    }
    if class != STANDARD_AUTHORIZER {
        return Err(invalid(
            "authorizer.class.name",
            class,
            format!(
                "Sluice's authorizer is {STANDARD_AUTHORIZER} (ACLs in the metadata log); other classes cannot be loaded"
            ),
        ));
    }
    let settings = AuthorizerSettings::new(super_users, allow_everyone_if_no_acl_found);
    if let Some(principal) = settings.super_users.iter().find(|p| !p.contains(':')) {
        return Err(invalid(
            "super.users",
            super_users,
            format!(
                "{principal} is not a principal (Type:name, e.g. User:admin); entries are separated by ';'"
            ),
        ));
    }
    Ok(Some(settings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BrokerConfig;

    #[test]
    fn no_authorizer_by_default_and_a_configured_one_refused_until_requests_are_checked() {
        let base = "node.id=1\nprocess.roles=broker,controller\nlisteners=PLAINTEXT://:9092,CONTROLLER://:9093\ncontroller.listener.names=CONTROLLER\n";
        let loaded = BrokerConfig::load(base, &[]).unwrap();
        assert_eq!(loaded.config.settings().authorizer, None);
        let error = BrokerConfig::load(
            &format!("{base}authorizer.class.name={STANDARD_AUTHORIZER}\n"),
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("not authorized by ACLs yet"), "{error}");
    }

    #[test]
    fn the_standard_authorizer_reads_its_super_users_and_default() {
        let settings = parse(STANDARD_AUTHORIZER, "User:admin; User:ops", false)
            .unwrap()
            .unwrap();
        assert_eq!(settings.super_users, vec!["User:admin", "User:ops"]);
        assert!(!settings.allow_everyone_if_no_acl_found);
        let open = parse(STANDARD_AUTHORIZER, "", true).unwrap().unwrap();
        assert!(open.allow_everyone_if_no_acl_found);
        assert!(open.super_users.is_empty());
        assert_eq!(parse(" ", "User:admin", true).unwrap(), None);
    }

    #[test]
    fn another_class_or_a_bad_super_user_is_refused_naming_the_key() {
        let error = parse("kafka.security.authorizer.AclAuthorizer", "", false)
            .unwrap_err()
            .to_string();
        assert!(error.contains("authorizer.class.name"), "{error}");
        let error = parse(STANDARD_AUTHORIZER, "User:a;admin", false)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("super.users") && error.contains("admin is not a principal"),
            "{error}"
        );
    }
}
