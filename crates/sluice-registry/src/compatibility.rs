//! Compatibility levels (Confluent's `CompatibilityLevel`) over a subject's versions.
//!
//! BACKWARD: the new schema reads data written with the latest version. FORWARD: the latest
//! version reads data written with the new one. FULL: both. The `_TRANSITIVE` levels check
//! against every earlier (not deleted) version instead of only the latest. NONE checks
//! nothing.

use crate::schema::ParsedSchema;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompatibilityLevel {
    None,
    Backward,
    BackwardTransitive,
    Forward,
    ForwardTransitive,
    Full,
    FullTransitive,
}

impl CompatibilityLevel {
    pub fn name(self) -> &'static str {
        match self {
            CompatibilityLevel::None => "NONE",
            CompatibilityLevel::Backward => "BACKWARD",
            CompatibilityLevel::BackwardTransitive => "BACKWARD_TRANSITIVE",
            CompatibilityLevel::Forward => "FORWARD",
            CompatibilityLevel::ForwardTransitive => "FORWARD_TRANSITIVE",
            CompatibilityLevel::Full => "FULL",
            CompatibilityLevel::FullTransitive => "FULL_TRANSITIVE",
        }
    }

    /// Parses a level name (Confluent accepts them case-insensitively).
    pub fn parse(name: &str) -> Option<CompatibilityLevel> {
        Some(match name.to_ascii_uppercase().as_str() {
            "NONE" => CompatibilityLevel::None,
            "BACKWARD" => CompatibilityLevel::Backward,
            "BACKWARD_TRANSITIVE" => CompatibilityLevel::BackwardTransitive,
            "FORWARD" => CompatibilityLevel::Forward,
            "FORWARD_TRANSITIVE" => CompatibilityLevel::ForwardTransitive,
            "FULL" => CompatibilityLevel::Full,
            "FULL_TRANSITIVE" => CompatibilityLevel::FullTransitive,
            _ => return None,
        })
    }

    fn transitive(self) -> bool {
        matches!(
            self,
            CompatibilityLevel::BackwardTransitive
                | CompatibilityLevel::ForwardTransitive
                | CompatibilityLevel::FullTransitive
        )
    }

    fn backward(self) -> bool {
        matches!(
            self,
            CompatibilityLevel::Backward
                | CompatibilityLevel::BackwardTransitive
                | CompatibilityLevel::Full
                | CompatibilityLevel::FullTransitive
        )
    }

    fn forward(self) -> bool {
        matches!(
            self,
            CompatibilityLevel::Forward
                | CompatibilityLevel::ForwardTransitive
                | CompatibilityLevel::Full
                | CompatibilityLevel::FullTransitive
        )
    }

    /// Every reason `new` is not compatible at this level with `previous` (a subject's
    /// versions, oldest first); empty when it is. A non-transitive level looks at the last
    /// one only. Checks run newest first, as Confluent's do, so the first message is about
    /// the latest version.
    pub fn incompatibilities(
        self,
        new: &dyn ParsedSchema,
        previous: &[&dyn ParsedSchema],
    ) -> Vec<String> {
        if self == CompatibilityLevel::None {
            return Vec::new();
        }
        let against: Vec<&dyn ParsedSchema> = if self.transitive() {
            previous.iter().rev().copied().collect()
        } else {
            previous.last().copied().into_iter().collect()
        };
        let mut reasons = Vec::new();
        for old in against {
            if old.schema_type() != new.schema_type() {
                reasons.push(format!(
                    "Incompatible because of different schema type: {} != {}",
                    new.schema_type(),
                    old.schema_type()
                ));
                continue;
            }
            if self.backward() {
                reasons.extend(new.backward_incompatibilities(old));
            }
            if self.forward() {
                reasons.extend(old.backward_incompatibilities(new));
            }
        }
        reasons
    }
}
