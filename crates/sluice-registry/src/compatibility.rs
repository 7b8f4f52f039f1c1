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
                reasons.extend(new.incompatibilities_as_reader(old, "new", "old"));
            }
            if self.forward() {
                reasons.extend(old.incompatibilities_as_reader(new, "old", "new"));
            }
        }
        reasons
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{SchemaType, parse};

    const V1: &str = r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"}]}"#;
    const ID_ONLY: &str =
        r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}"#;

    #[test]
    fn levels_pick_direction_and_name_the_roles_as_confluent() {
        let v1 = parse(SchemaType::Avro, V1, &[]).unwrap();
        let id_only = parse(SchemaType::Avro, ID_ONLY, &[]).unwrap();
        // Dropping `amount` is BACKWARD compatible (the new reader ignores it) ...
        assert!(
            CompatibilityLevel::Backward
                .incompatibilities(id_only.as_ref(), &[v1.as_ref()])
                .is_empty()
        );
        // ... but not FORWARD: the old schema, reading, has no default for it; the
        // message calls the reader "old".
        let forward =
            CompatibilityLevel::Forward.incompatibilities(id_only.as_ref(), &[v1.as_ref()]);
        assert_eq!(forward.len(), 1, "{forward:?}");
        assert!(
            forward[0].contains(
                "in the old schema has no default value and is missing in the new schema"
            ),
            "{forward:?}"
        );
        assert_eq!(
            CompatibilityLevel::Full
                .incompatibilities(id_only.as_ref(), &[v1.as_ref()])
                .len(),
            1
        );
        assert!(
            CompatibilityLevel::None
                .incompatibilities(id_only.as_ref(), &[v1.as_ref()])
                .is_empty()
        );
    }

    #[test]
    fn non_transitive_levels_look_at_the_latest_only() {
        let v1 = parse(SchemaType::Avro, V1, &[]).unwrap();
        let id_only = parse(SchemaType::Avro, ID_ONLY, &[]).unwrap();
        // History v1, id-only; v1 proposed again. As a reader it cannot read id-only's
        // data (`amount` has no default); as a writer every earlier version reads it
        // (v1 itself, and id-only ignoring `amount`).
        let history = [v1.as_ref(), id_only.as_ref()];
        assert_eq!(
            CompatibilityLevel::Backward
                .incompatibilities(v1.as_ref(), &history)
                .len(),
            1,
            "a new field without default breaks BACKWARD against id-only"
        );
        assert_eq!(
            CompatibilityLevel::BackwardTransitive
                .incompatibilities(v1.as_ref(), &history)
                .len(),
            1,
            "only the id-only version is unreadable"
        );
        assert!(
            CompatibilityLevel::ForwardTransitive
                .incompatibilities(v1.as_ref(), &history)
                .is_empty()
        );
    }
}
