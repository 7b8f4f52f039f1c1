//! The registry's errors, with Confluent Schema Registry's error codes and messages (its
//! `Errors` and `RestException` classes): a client that switches on `error_code` behaves the
//! same against Sluice. The HTTP status is the code's first three digits (40401 → 404,
//! 42201 → 422, 50001 → 500); 409 is its own code.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryError {
    pub error_code: u32,
    pub message: String,
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (error {})", self.message, self.error_code)
    }
}

impl std::error::Error for RegistryError {}

pub type Result<T> = std::result::Result<T, RegistryError>;

impl RegistryError {
    pub fn new(error_code: u32, message: impl Into<String>) -> RegistryError {
        RegistryError {
            error_code,
            message: message.into(),
        }
    }

    /// The HTTP status the error is answered with.
    pub fn status(&self) -> u16 {
        match self.error_code {
            code if code >= 10_000 => (code / 100) as u16,
            code => code as u16,
        }
    }

    pub fn subject_not_found(subject: &str) -> RegistryError {
        RegistryError::new(40401, format!("Subject '{subject}' not found."))
    }

    pub fn version_not_found(version: impl fmt::Display) -> RegistryError {
        RegistryError::new(40402, format!("Version {version} not found."))
    }

    pub fn schema_not_found() -> RegistryError {
        RegistryError::new(40403, "Schema not found")
    }

    pub fn schema_id_not_found(id: i32) -> RegistryError {
        RegistryError::new(40403, format!("Schema {id} not found"))
    }

    pub fn subject_soft_deleted(subject: &str) -> RegistryError {
        RegistryError::new(
            40404,
            format!(
                "Subject '{subject}' was soft deleted.Set permanent=true to delete permanently"
            ),
        )
    }

    pub fn subject_not_soft_deleted(subject: &str) -> RegistryError {
        RegistryError::new(
            40405,
            format!("Subject '{subject}' was not deleted first before being permanently deleted"),
        )
    }

    pub fn version_soft_deleted(subject: &str, version: i32) -> RegistryError {
        RegistryError::new(
            40406,
            format!(
                "Subject '{subject}' Version {version} was soft deleted.Set permanent=true to \
                 delete permanently"
            ),
        )
    }

    pub fn version_not_soft_deleted(subject: &str, version: i32) -> RegistryError {
        RegistryError::new(
            40407,
            format!(
                "Subject '{subject}' Version {version} was not deleted first before being \
                 permanently deleted"
            ),
        )
    }

    pub fn subject_level_compatibility_not_configured(subject: &str) -> RegistryError {
        RegistryError::new(
            40408,
            format!("Subject '{subject}' does not have subject-level compatibility configured"),
        )
    }

    pub fn subject_level_mode_not_configured(subject: &str) -> RegistryError {
        RegistryError::new(
            40409,
            format!("Subject '{subject}' does not have subject-level mode configured"),
        )
    }

    pub fn incompatible(subject: &str, details: &[String]) -> RegistryError {
        RegistryError::new(
            409,
            format!(
                "Schema being registered is incompatible with an earlier schema for subject \
                 \"{subject}\", details: [{}]",
                details.join(", ")
            ),
        )
    }

    pub fn invalid_schema(detail: impl fmt::Display) -> RegistryError {
        RegistryError::new(42201, format!("Invalid schema {detail}"))
    }

    pub fn invalid_version(version: &str) -> RegistryError {
        RegistryError::new(
            42202,
            format!(
                "The specified version '{version}' is not a valid version id. Allowed values \
                 are between [1, 2^31-1] and the string \"latest\""
            ),
        )
    }

    pub fn invalid_compatibility_level() -> RegistryError {
        RegistryError::new(
            42203,
            "Invalid compatibility level. Valid values are none, backward, forward, full, \
             backward_transitive, forward_transitive, and full_transitive",
        )
    }

    pub fn invalid_mode() -> RegistryError {
        RegistryError::new(
            42204,
            "Invalid mode. Valid values are READWRITE, READONLY, READONLY_OVERRIDE, and IMPORT",
        )
    }

    pub fn operation_not_permitted(message: impl Into<String>) -> RegistryError {
        RegistryError::new(42205, message)
    }

    pub fn reference_exists(subject: &str, version: i32) -> RegistryError {
        RegistryError::new(
            42206,
            format!(
                "One or more references exist to the schema \
                 {{magic=1,keytype=SCHEMA,subject={subject},version={version}}}."
            ),
        )
    }

    pub fn id_does_not_match(id: i32) -> RegistryError {
        RegistryError::new(
            42207,
            format!("Overwrite new schema with id {id} is not permitted."),
        )
    }

    pub fn invalid_subject(subject: &str) -> RegistryError {
        RegistryError::new(
            42208,
            format!("The specified subject '{subject}' is not valid."),
        )
    }

    pub fn store(detail: impl fmt::Display) -> RegistryError {
        RegistryError::new(50001, format!("Error in the backend data store - {detail}"))
    }

    pub fn timeout(detail: impl fmt::Display) -> RegistryError {
        RegistryError::new(50002, format!("Operation timed out - {detail}"))
    }

    pub fn forwarding(detail: impl fmt::Display) -> RegistryError {
        RegistryError::new(
            50003,
            format!("Error while forwarding the request to the leader: {detail}"),
        )
    }

    pub fn unknown_leader() -> RegistryError {
        RegistryError::new(50004, "Leader not known.")
    }
}

impl From<crate::kafka_store::StoreError> for RegistryError {
    fn from(error: crate::kafka_store::StoreError) -> RegistryError {
        match error {
            crate::kafka_store::StoreError::Timeout(_) => RegistryError::timeout(error),
            other => RegistryError::store(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_the_code() {
        for (error, status) in [
            (RegistryError::subject_not_found("s"), 404),
            (RegistryError::incompatible("s", &[]), 409),
            (RegistryError::invalid_schema("x"), 422),
            (RegistryError::store("x"), 500),
        ] {
            assert_eq!(error.status(), status, "{error}");
        }
    }
}
