//! Access control lists as Kafka's `StandardAuthorizer` keeps and evaluates them: the
//! ACLs of the metadata log (AccessControlEntryRecord, apiKey 18; removed by
//! RemoveAccessControlEntryRecord, apiKey 19), the filters of DescribeAcls/DeleteAcls,
//! and the decision for one action.
//!
//! The rules, as Kafka's (`org.apache.kafka.metadata.authorizer.StandardAuthorizerData`):
//! - a super user (`super.users`, e.g. `User:admin`) may do anything;
//! - the ACLs that apply to a resource are its LITERAL ones with the same name, the
//!   LITERAL `*` of its type, and the PREFIXED ones whose name starts the resource's;
//! - among those, an ACL matches the request if its principal is the request's or
//!   `User:*`, its host is the client's address or `*`, and its operation is the
//!   request's or ALL; an ALLOW ACL for READ, WRITE, DELETE or ALTER also allows
//!   DESCRIBE, and one for ALTER_CONFIGS also allows DESCRIBE_CONFIGS (a DENY ACL denies
//!   only its own operation);
//! - any matching DENY denies; else any matching ALLOW allows; else, if the resource has
//!   ACLs (for anyone), the request is denied; only a resource with no ACLs at all gets
//!   the default (`allow.everyone.if.no.acl.found`, false by default).

use std::collections::BTreeMap;
use std::fmt;

use crate::codec::Uuid;

/// A Kafka enum carried as an i8 on the wire and in records, with its unknown codes kept.
macro_rules! wire_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $code:literal => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($variant),+
        }

        impl $name {
            /// The code Kafka gives it on the wire.
            pub fn code(self) -> i8 {
                match self {
                    $($name::$variant => $code),+
                }
            }

            /// The value of a wire code; `None` for a code Kafka does not define.
            pub fn from_code(code: i8) -> Option<$name> {
                match code {
                    $($code => Some($name::$variant),)+
                    _ => None,
                }
            }

            /// Kafka's name (as `kafka-acls.sh` prints it).
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

wire_enum!(
    /// `org.apache.kafka.common.resource.ResourceType`.
    ResourceType {
        Unknown = 0 => "UNKNOWN",
        Any = 1 => "ANY",
        Topic = 2 => "TOPIC",
        Group = 3 => "GROUP",
        Cluster = 4 => "CLUSTER",
        TransactionalId = 5 => "TRANSACTIONAL_ID",
        DelegationToken = 6 => "DELEGATION_TOKEN",
        User = 7 => "USER",
    }
);

wire_enum!(
    /// `org.apache.kafka.common.resource.PatternType`.
    PatternType {
        Unknown = 0 => "UNKNOWN",
        Any = 1 => "ANY",
        Match = 2 => "MATCH",
        Literal = 3 => "LITERAL",
        Prefixed = 4 => "PREFIXED",
    }
);

wire_enum!(
    /// `org.apache.kafka.common.acl.AclOperation`.
    AclOperation {
        Unknown = 0 => "UNKNOWN",
        Any = 1 => "ANY",
        All = 2 => "ALL",
        Read = 3 => "READ",
        Write = 4 => "WRITE",
        Create = 5 => "CREATE",
        Delete = 6 => "DELETE",
        Alter = 7 => "ALTER",
        Describe = 8 => "DESCRIBE",
        ClusterAction = 9 => "CLUSTER_ACTION",
        DescribeConfigs = 10 => "DESCRIBE_CONFIGS",
        AlterConfigs = 11 => "ALTER_CONFIGS",
        IdempotentWrite = 12 => "IDEMPOTENT_WRITE",
        CreateTokens = 13 => "CREATE_TOKENS",
        DescribeTokens = 14 => "DESCRIBE_TOKENS",
        TwoPhaseCommit = 15 => "TWO_PHASE_COMMIT",
    }
);

wire_enum!(
    /// `org.apache.kafka.common.acl.AclPermissionType`.
    AclPermission {
        Unknown = 0 => "UNKNOWN",
        Any = 1 => "ANY",
        Deny = 2 => "DENY",
        Allow = 3 => "ALLOW",
    }
);

/// The wildcard resource name, principal and host.
pub const WILDCARD: &str = "*";
/// The principal every principal matches.
pub const WILDCARD_PRINCIPAL: &str = "User:*";

/// One ACL (Kafka's `StandardAcl`, an AccessControlEntryRecord without its id).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Acl {
    pub resource_type: ResourceType,
    pub resource_name: String,
    pub pattern_type: PatternType,
    /// `User:alice`, `User:*`.
    pub principal: String,
    /// A client address (`127.0.0.1`) or `*`.
    pub host: String,
    pub operation: AclOperation,
    pub permission: AclPermission,
}

/// Why an ACL cannot be stored (CreateAcls answers INVALID_REQUEST with the message, as
/// Kafka's `StandardAcl.fromAclBinding` and `AclControlManager.validateNewAcl` refuse).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidAcl {
    #[error("Invalid resourceType {0}")]
    ResourceType(ResourceType),
    #[error("Invalid patternType {0}")]
    PatternType(PatternType),
    #[error("Invalid operation {0}")]
    Operation(AclOperation),
    #[error("Invalid permissionType {0}")]
    Permission(AclPermission),
    #[error("Resource name should not be empty")]
    EmptyName,
    #[error(
        "Could not parse principal from `{0}` (no colon is present separating the principal type from the principal name)"
    )]
    Principal(String),
}

impl Acl {
    /// Checks that the ACL names one concrete thing, as Kafka requires before storing it:
    /// no ANY/MATCH/UNKNOWN values, a name, and a `Type:name` principal.
    pub fn validate(&self) -> Result<(), InvalidAcl> {
        match self.resource_type {
            ResourceType::Unknown | ResourceType::Any => {
                return Err(InvalidAcl::ResourceType(self.resource_type));
            }
            _ => {}
        }
        match self.pattern_type {
            PatternType::Literal | PatternType::Prefixed => {}
            other => return Err(InvalidAcl::PatternType(other)),
        }
        match self.operation {
            AclOperation::Unknown | AclOperation::Any => {
                return Err(InvalidAcl::Operation(self.operation));
            }
            _ => {}
        }
        match self.permission {
            AclPermission::Allow | AclPermission::Deny => {}
            other => return Err(InvalidAcl::Permission(other)),
        }
        if self.resource_name.is_empty() {
            return Err(InvalidAcl::EmptyName);
        }
        if !self.principal.contains(':') {
            return Err(InvalidAcl::Principal(self.principal.clone()));
        }
        Ok(())
    }

    /// Whether this ACL's resource pattern covers the named resource of its type.
    fn covers(&self, resource_type: ResourceType, name: &str) -> bool {
        self.resource_type == resource_type
            && match self.pattern_type {
                PatternType::Literal => {
                    self.resource_name == name || self.resource_name == WILDCARD
                }
                PatternType::Prefixed => name.starts_with(&self.resource_name),
                _ => false,
            }
    }

    /// The result this ACL gives the request, or `None` when it does not match the
    /// principal, host or operation (its resource already covers the request's).
    fn result_for(&self, principal: &str, host: &str, operation: AclOperation) -> Option<Decision> {
        if self.principal != principal && self.principal != WILDCARD_PRINCIPAL {
            return None;
        }
        if self.host != WILDCARD && self.host != host {
            return None;
        }
        if self.operation != AclOperation::All {
            let matches = match (self.permission, operation) {
                (AclPermission::Allow, AclOperation::Describe) => matches!(
                    self.operation,
                    AclOperation::Describe
                        | AclOperation::Read
                        | AclOperation::Write
                        | AclOperation::Delete
                        | AclOperation::Alter
                ),
                (AclPermission::Allow, AclOperation::DescribeConfigs) => matches!(
                    self.operation,
                    AclOperation::DescribeConfigs | AclOperation::AlterConfigs
                ),
                _ => self.operation == operation,
            };
            if !matches {
                return None;
            }
        }
        Some(match self.permission {
            AclPermission::Allow => Decision::Allowed,
            _ => Decision::Denied,
        })
    }
}

impl fmt::Display for Acl {
    /// As Kafka's `AclBinding` prints in `kafka-acls.sh --list`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(principal={}, host={}, operation={}, permissionType={}) on {}:{}:{}",
            self.principal,
            self.host,
            self.operation,
            self.permission,
            self.resource_type,
            self.pattern_type,
            self.resource_name
        )
    }
}

/// An allow or deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allowed,
    Denied,
}

/// What decided an authorization (Kafka's audit log names it the same way).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    SuperUser,
    /// The resource has no ACLs: `allow.everyone.if.no.acl.found` decided.
    DefaultAllow,
    DefaultDeny,
    /// An ACL matched.
    MatchingAcl(Acl),
    /// The resource has ACLs, none for this principal, host and operation.
    NoMatchingAcl,
}

impl Rule {
    pub fn decision(&self) -> Decision {
        match self {
            Rule::SuperUser | Rule::DefaultAllow => Decision::Allowed,
            Rule::DefaultDeny | Rule::NoMatchingAcl => Decision::Denied,
            Rule::MatchingAcl(acl) => match acl.permission {
                AclPermission::Allow => Decision::Allowed,
                _ => Decision::Denied,
            },
        }
    }
}

/// The authorizer's configuration (`super.users`, `allow.everyone.if.no.acl.found`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizerSettings {
    /// Principals (`User:admin`) allowed everything; `super.users` is `;`-separated.
    pub super_users: Vec<String>,
    pub allow_everyone_if_no_acl_found: bool,
}

impl AuthorizerSettings {
    /// From `super.users` as Kafka writes it (`User:a;User:b`) and the default.
    pub fn new(super_users: &str, allow_everyone_if_no_acl_found: bool) -> Self {
        AuthorizerSettings {
            super_users: super_users
                .split(';')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
            allow_everyone_if_no_acl_found,
        }
    }
}

/// The ACLs of the cluster by id, as the metadata log built them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AclSet {
    acls: BTreeMap<Uuid, Acl>,
}

impl AclSet {
    /// Replays an AccessControlEntryRecord (a repeated id replaces the ACL it names).
    pub fn add(&mut self, id: Uuid, acl: Acl) {
        self.acls.insert(id, acl);
    }

    pub fn contains(&self, id: &Uuid) -> bool {
        self.acls.contains_key(id)
    }

    /// Replays a RemoveAccessControlEntryRecord; answers the ACL it removed.
    pub fn remove(&mut self, id: &Uuid) -> Option<Acl> {
        self.acls.remove(id)
    }

    pub fn len(&self) -> usize {
        self.acls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.acls.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Uuid, &Acl)> {
        self.acls.iter()
    }

    /// The id of an ACL equal to `acl`, if one is stored (CreateAcls of an ACL that
    /// exists adds nothing, as Kafka's controller does).
    pub fn find(&self, acl: &Acl) -> Option<Uuid> {
        self.acls
            .iter()
            .find(|(_, stored)| *stored == acl)
            .map(|(id, _)| *id)
    }

    /// The ACLs a DescribeAcls/DeleteAcls filter selects.
    pub fn matching<'a>(
        &'a self,
        filter: &'a AclFilter,
    ) -> impl Iterator<Item = (&'a Uuid, &'a Acl)> {
        self.acls.iter().filter(move |(_, acl)| filter.matches(acl))
    }

    /// Decides whether `principal` connected from `host` may perform `operation` on the
    /// named resource, and by which rule.
    pub fn authorize(
        &self,
        settings: &AuthorizerSettings,
        principal: &str,
        host: &str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: &str,
    ) -> Rule {
        if settings.super_users.iter().any(|s| s == principal) {
            return Rule::SuperUser;
        }
        let mut has_resource_acls = false;
        let mut allow = None;
        for acl in self.acls.values() {
            if !acl.covers(resource_type, resource_name) {
                continue;
            }
            has_resource_acls = true;
            match acl.result_for(principal, host, operation) {
                Some(Decision::Denied) => return Rule::MatchingAcl(acl.clone()),
                Some(Decision::Allowed) => allow = allow.or(Some(acl)),
                None => {}
            }
        }
        match allow {
            Some(acl) => Rule::MatchingAcl(acl.clone()),
            None if has_resource_acls => Rule::NoMatchingAcl,
            None if settings.allow_everyone_if_no_acl_found => Rule::DefaultAllow,
            None => Rule::DefaultDeny,
        }
    }
}

/// A DescribeAcls/DeleteAcls filter (Kafka's `AclBindingFilter`): `None` fields and the
/// ANY values match anything; pattern type MATCH selects the ACLs that would apply to
/// the named resource (its LITERAL, the LITERAL `*`, and PREFIXED ones that start it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclFilter {
    pub resource_type: ResourceType,
    pub resource_name: Option<String>,
    pub pattern_type: PatternType,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: AclOperation,
    pub permission: AclPermission,
}

impl AclFilter {
    /// The filter that selects every ACL.
    pub fn any() -> Self {
        AclFilter {
            resource_type: ResourceType::Any,
            resource_name: None,
            pattern_type: PatternType::Any,
            principal: None,
            host: None,
            operation: AclOperation::Any,
            permission: AclPermission::Any,
        }
    }

    /// Why a filter cannot be served (Kafka refuses UNKNOWN values: INVALID_REQUEST).
    pub fn validate(&self) -> Result<(), InvalidAcl> {
        if self.resource_type == ResourceType::Unknown {
            return Err(InvalidAcl::ResourceType(self.resource_type));
        }
        if self.pattern_type == PatternType::Unknown {
            return Err(InvalidAcl::PatternType(self.pattern_type));
        }
        if self.operation == AclOperation::Unknown {
            return Err(InvalidAcl::Operation(self.operation));
        }
        if self.permission == AclPermission::Unknown {
            return Err(InvalidAcl::Permission(self.permission));
        }
        Ok(())
    }

    pub fn matches(&self, acl: &Acl) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != acl.resource_type {
            return false;
        }
        let name_matches = match (&self.resource_name, self.pattern_type) {
            (None, PatternType::Any | PatternType::Match) => true,
            (None, pattern) => pattern == acl.pattern_type,
            (Some(name), PatternType::Any) => *name == acl.resource_name,
            (Some(name), PatternType::Match) => match acl.pattern_type {
                PatternType::Literal => *name == acl.resource_name || acl.resource_name == WILDCARD,
                PatternType::Prefixed => name.starts_with(&acl.resource_name),
                _ => false,
            },
            (Some(name), pattern) => pattern == acl.pattern_type && *name == acl.resource_name,
        };
        name_matches
            && self.principal.as_ref().is_none_or(|p| *p == acl.principal)
            && self.host.as_ref().is_none_or(|h| *h == acl.host)
            && (self.operation == AclOperation::Any || self.operation == acl.operation)
            && (self.permission == AclPermission::Any || self.permission == acl.permission)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(
        resource_type: ResourceType,
        name: &str,
        pattern_type: PatternType,
        principal: &str,
        host: &str,
        operation: AclOperation,
        permission: AclPermission,
    ) -> Acl {
        Acl {
            resource_type,
            resource_name: name.into(),
            pattern_type,
            principal: principal.into(),
            host: host.into(),
            operation,
            permission,
        }
    }

    fn topic(
        name: &str,
        pattern: PatternType,
        principal: &str,
        op: AclOperation,
        perm: AclPermission,
    ) -> Acl {
        acl(ResourceType::Topic, name, pattern, principal, "*", op, perm)
    }

    fn set(acls: Vec<Acl>) -> AclSet {
        let mut set = AclSet::default();
        for (i, acl) in acls.into_iter().enumerate() {
            let mut id = [0u8; 16];
            id[15] = i as u8 + 1;
            set.add(id, acl);
        }
        set
    }

    fn decide(
        set: &AclSet,
        settings: &AuthorizerSettings,
        principal: &str,
        host: &str,
        op: AclOperation,
        name: &str,
    ) -> Decision {
        set.authorize(settings, principal, host, op, ResourceType::Topic, name)
            .decision()
    }

    use AclOperation as Op;
    use AclPermission::{Allow, Deny};
    use Decision::{Allowed, Denied};
    use PatternType::{Literal, Prefixed};

    #[test]
    fn a_resource_without_acls_gets_the_default_and_a_super_user_everything() {
        let none = AclSet::default();
        let deny_default = AuthorizerSettings::new("User:admin; User:ops", false);
        assert_eq!(deny_default.super_users, vec!["User:admin", "User:ops"]);
        assert_eq!(
            decide(
                &none,
                &deny_default,
                "User:alice",
                "127.0.0.1",
                Op::Read,
                "t"
            ),
            Denied
        );
        assert_eq!(
            none.authorize(
                &deny_default,
                "User:alice",
                "127.0.0.1",
                Op::Read,
                ResourceType::Topic,
                "t"
            ),
            Rule::DefaultDeny
        );
        assert_eq!(
            decide(
                &none,
                &deny_default,
                "User:ops",
                "127.0.0.1",
                Op::Alter,
                "t"
            ),
            Allowed
        );
        let allow_default = AuthorizerSettings::new("", true);
        assert_eq!(
            decide(
                &none,
                &allow_default,
                "User:alice",
                "127.0.0.1",
                Op::Read,
                "t"
            ),
            Allowed
        );
        // Super users are not subject to ACLs at all, a DENY naming them included.
        let denied = set(vec![topic("t", Literal, "User:admin", Op::All, Deny)]);
        assert_eq!(
            decide(
                &denied,
                &deny_default,
                "User:admin",
                "127.0.0.1",
                Op::Read,
                "t"
            ),
            Allowed
        );
    }

    #[test]
    fn acls_for_someone_else_deny_even_with_allow_everyone_if_no_acl_found() {
        let settings = AuthorizerSettings::new("", true);
        let acls = set(vec![topic("orders", Literal, "User:bob", Op::Read, Allow)]);
        assert_eq!(
            decide(&acls, &settings, "User:bob", "10.0.0.1", Op::Read, "orders"),
            Allowed
        );
        assert_eq!(
            acls.authorize(
                &settings,
                "User:alice",
                "10.0.0.1",
                Op::Read,
                ResourceType::Topic,
                "orders"
            ),
            Rule::NoMatchingAcl
        );
        // Another topic has no ACLs: the default still applies there.
        assert_eq!(
            decide(
                &acls,
                &settings,
                "User:alice",
                "10.0.0.1",
                Op::Read,
                "payments"
            ),
            Allowed
        );
    }

    #[test]
    fn deny_wins_over_allow_whatever_the_pattern_that_carries_it() {
        let settings = AuthorizerSettings::default();
        let acls = set(vec![
            topic("*", Literal, "User:*", Op::All, Allow),
            topic("pay", Prefixed, "User:alice", Op::Write, Deny),
        ]);
        assert_eq!(
            decide(&acls, &settings, "User:alice", "h", Op::Write, "payments"),
            Denied
        );
        assert_eq!(
            decide(&acls, &settings, "User:alice", "h", Op::Read, "payments"),
            Allowed
        );
        assert_eq!(
            decide(&acls, &settings, "User:alice", "h", Op::Write, "orders"),
            Allowed
        );
        assert_eq!(
            decide(&acls, &settings, "User:bob", "h", Op::Write, "payments"),
            Allowed
        );
    }

    #[test]
    fn patterns_cover_as_kafka_scans_them() {
        let settings = AuthorizerSettings::default();
        // Kafka's example (StandardAuthorizerData.findAclRule): for TOPIC "foobar" the
        // PREFIXED foobar, foo and f apply; LITERAL foob and PREFIXED fb/fa/gar do not.
        let acls = set(vec![
            topic("gar", Prefixed, "User:u", Op::Read, Allow),
            topic("foob", Literal, "User:u", Op::Read, Deny),
            topic("fb", Prefixed, "User:u", Op::Read, Deny),
            topic("fa", Prefixed, "User:u", Op::Read, Deny),
            topic("f", Prefixed, "User:u", Op::Read, Allow),
        ]);
        assert_eq!(
            decide(&acls, &settings, "User:u", "h", Op::Read, "foobar"),
            Allowed
        );
        assert_eq!(
            decide(&acls, &settings, "User:u", "h", Op::Read, "foob"),
            Denied
        );
        assert_eq!(
            decide(&acls, &settings, "User:u", "h", Op::Read, "fbx"),
            Denied
        );
        assert_eq!(
            decide(&acls, &settings, "User:u", "h", Op::Read, "gar"),
            Allowed
        );
        // No ACL covers "xyz": the default (deny).
        assert_eq!(
            acls.authorize(
                &settings,
                "User:u",
                "h",
                Op::Read,
                ResourceType::Topic,
                "xyz"
            ),
            Rule::DefaultDeny
        );
        // Another resource type is another section.
        assert_eq!(
            acls.authorize(
                &settings,
                "User:u",
                "h",
                Op::Read,
                ResourceType::Group,
                "foobar"
            ),
            Rule::DefaultDeny
        );
    }

    #[test]
    fn allow_implies_describe_but_deny_denies_only_its_operation() {
        let settings = AuthorizerSettings::default();
        for implying in [Op::Read, Op::Write, Op::Delete, Op::Alter, Op::Describe] {
            let acls = set(vec![topic("t", Literal, "User:u", implying, Allow)]);
            assert_eq!(
                decide(&acls, &settings, "User:u", "h", Op::Describe, "t"),
                Allowed,
                "{implying}"
            );
        }
        for not_implying in [
            Op::Create,
            Op::AlterConfigs,
            Op::DescribeConfigs,
            Op::ClusterAction,
        ] {
            let acls = set(vec![topic("t", Literal, "User:u", not_implying, Allow)]);
            assert_eq!(
                decide(&acls, &settings, "User:u", "h", Op::Describe, "t"),
                Denied,
                "{not_implying}"
            );
        }
        let acls = set(vec![topic("t", Literal, "User:u", Op::AlterConfigs, Allow)]);
        assert_eq!(
            decide(&acls, &settings, "User:u", "h", Op::DescribeConfigs, "t"),
            Allowed
        );
        assert_eq!(
            decide(&acls, &settings, "User:u", "h", Op::Alter, "t"),
            Denied
        );
        // READ allowed for everyone, READ denied for u: DESCRIBE is not denied by it.
        let acls = set(vec![
            topic("t", Literal, "User:*", Op::Describe, Allow),
            topic("t", Literal, "User:u", Op::Read, Deny),
        ]);
        assert_eq!(
            decide(&acls, &settings, "User:u", "h", Op::Describe, "t"),
            Allowed
        );
        assert_eq!(
            decide(&acls, &settings, "User:u", "h", Op::Read, "t"),
            Denied
        );
        // ALL matches every operation, allow or deny.
        let acls = set(vec![topic("t", Literal, "User:u", Op::All, Allow)]);
        assert_eq!(
            decide(&acls, &settings, "User:u", "h", Op::IdempotentWrite, "t"),
            Allowed
        );
    }

    #[test]
    fn hosts_and_wildcard_principals_match_as_written() {
        let settings = AuthorizerSettings::default();
        let acls = set(vec![acl(
            ResourceType::Topic,
            "t",
            Literal,
            "User:*",
            "10.0.0.1",
            Op::Read,
            Allow,
        )]);
        assert_eq!(
            decide(&acls, &settings, "User:any", "10.0.0.1", Op::Read, "t"),
            Allowed
        );
        assert_eq!(
            decide(&acls, &settings, "User:any", "10.0.0.2", Op::Read, "t"),
            Denied
        );
    }

    #[test]
    fn stored_acls_name_one_concrete_thing() {
        let good = topic("t", Literal, "User:u", Op::Read, Allow);
        assert_eq!(good.validate(), Ok(()));
        let mut bad = good.clone();
        bad.pattern_type = PatternType::Match;
        assert_eq!(
            bad.validate(),
            Err(InvalidAcl::PatternType(PatternType::Match))
        );
        let mut bad = good.clone();
        bad.operation = Op::Any;
        assert_eq!(bad.validate(), Err(InvalidAcl::Operation(Op::Any)));
        let mut bad = good.clone();
        bad.principal = "alice".into();
        assert!(bad.validate().unwrap_err().to_string().contains("no colon"));
        let mut bad = good.clone();
        bad.resource_type = ResourceType::Any;
        assert_eq!(
            bad.validate(),
            Err(InvalidAcl::ResourceType(ResourceType::Any))
        );
        let mut bad = good;
        bad.resource_name.clear();
        assert_eq!(bad.validate(), Err(InvalidAcl::EmptyName));
    }

    #[test]
    fn filters_select_as_describe_and_delete_acls_do() {
        let acls = set(vec![
            topic("orders", Literal, "User:a", Op::Read, Allow),
            topic("*", Literal, "User:b", Op::Write, Allow),
            topic("ord", Prefixed, "User:c", Op::Read, Deny),
            acl(
                ResourceType::Group,
                "g",
                Literal,
                "User:a",
                "*",
                Op::Read,
                Allow,
            ),
        ]);
        let count = |filter: AclFilter| acls.matching(&filter).count();
        assert_eq!(count(AclFilter::any()), 4);
        let topics = AclFilter {
            resource_type: ResourceType::Topic,
            ..AclFilter::any()
        };
        assert_eq!(count(topics.clone()), 3);
        // MATCH: every ACL that applies to topic "orders".
        let applying = AclFilter {
            resource_name: Some("orders".into()),
            pattern_type: PatternType::Match,
            ..topics.clone()
        };
        assert_eq!(count(applying), 3);
        // LITERAL "orders": only that one ACL (not the wildcard's).
        let literal = AclFilter {
            resource_name: Some("orders".into()),
            pattern_type: Literal,
            ..topics.clone()
        };
        assert_eq!(count(literal), 1);
        // ANY with a name: that exact name in any pattern type.
        let by_name = AclFilter {
            resource_name: Some("ord".into()),
            ..topics.clone()
        };
        assert_eq!(count(by_name), 1);
        let prefixed = AclFilter {
            pattern_type: Prefixed,
            ..topics.clone()
        };
        assert_eq!(count(prefixed), 1);
        let by_principal = AclFilter {
            principal: Some("User:a".into()),
            ..AclFilter::any()
        };
        assert_eq!(count(by_principal), 2);
        let denies = AclFilter {
            permission: Deny,
            ..AclFilter::any()
        };
        assert_eq!(count(denies), 1);
        let unknown = AclFilter {
            operation: Op::Unknown,
            ..AclFilter::any()
        };
        assert!(unknown.validate().is_err());
    }

    #[test]
    fn wire_codes_round_trip_and_unknown_codes_are_refused() {
        for code in 0..=15 {
            assert_eq!(
                AclOperation::from_code(code).map(AclOperation::code),
                Some(code)
            );
        }
        assert_eq!(AclOperation::from_code(16), None);
        assert_eq!(ResourceType::from_code(2), Some(ResourceType::Topic));
        assert_eq!(ResourceType::from_code(8), None);
        assert_eq!(PatternType::Prefixed.code(), 4);
        assert_eq!(AclPermission::from_code(3), Some(Allow));
        assert_eq!(
            topic("t", Literal, "User:u", Op::Read, Allow).to_string(),
            "(principal=User:u, host=*, operation=READ, permissionType=ALLOW) on TOPIC:LITERAL:t"
        );
    }
}
