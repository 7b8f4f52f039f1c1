//! Who a request acts as.

/// Who a request acts as (Kafka's `KafkaPrincipal`: a type and a name):
/// `User:ANONYMOUS` on a PLAINTEXT listener, as Kafka gives it; `User:<name>` once a
/// SASL connection authenticated (`sasl.rs`). Authorization will read it from the
/// request's context.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Principal {
    pub principal_type: String,
    pub name: String,
}

impl Principal {
    /// `User:ANONYMOUS`.
    pub fn anonymous() -> Principal {
        Principal {
            principal_type: "User".into(),
            name: "ANONYMOUS".into(),
        }
    }
}

impl Default for Principal {
    fn default() -> Principal {
        Principal::anonymous()
    }
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}
