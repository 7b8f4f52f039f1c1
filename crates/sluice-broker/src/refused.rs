//! A setting refused at load, by a module that cannot depend on the configuration
//! module (TLS, the authorizer): the key as the operator wrote it, its value (never a
//! secret) and why. `crate::config::ConfigError` takes it as an invalid value.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub key: String,
    pub value: String,
    pub reason: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "invalid value {} for configuration {}: {}",
            self.value, self.key, self.reason
        )
    }
}
