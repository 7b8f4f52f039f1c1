//! Field paths of KIP-821 (`transforms.field.SingleFieldPath`): `field.syntax.version=V1`
//! names one top-level field, `V2` a dotted path into nested structs or maps, with
//! backticks around a name that holds dots (a backslash escapes a backtick that would
//! otherwise close it).

use crate::data::{DataError, Field, Schema, Struct, Type, Value};

use super::config::Options;
use super::support::{map_get, require_map, require_struct, struct_get};

pub(crate) const FIELD_SYNTAX_VERSION_CONFIG: &str = "field.syntax.version";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldSyntaxVersion {
    V1,
    V2,
}

impl FieldSyntaxVersion {
    /// `field.syntax.version`, default `V1`, case-insensitive.
    pub fn from_options(options: &mut Options) -> FieldSyntaxVersion {
        let value = options.string_or(FIELD_SYNTAX_VERSION_CONFIG, "V1");
        match value.to_ascii_uppercase().as_str() {
            "V1" => FieldSyntaxVersion::V1,
            "V2" => FieldSyntaxVersion::V2,
            _ => {
                options.invalid(
                    FIELD_SYNTAX_VERSION_CONFIG,
                    &value,
                    "String must be one of (case insensitive): V1, V2",
                );
                FieldSyntaxVersion::V1
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SingleFieldPath {
    steps: Vec<String>,
}

impl SingleFieldPath {
    /// The path, or the `ConfigException` text of an unclosed backtick.
    pub fn parse(path: &str, version: FieldSyntaxVersion) -> Result<SingleFieldPath, String> {
        let steps = match version {
            FieldSyntaxVersion::V1 => vec![path.to_string()],
            FieldSyntaxVersion::V2 => parse_v2(path)?,
        };
        Ok(SingleFieldPath { steps })
    }

    #[cfg(test)]
    pub fn steps(&self) -> &[String] {
        &self.steps
    }

    /// The steps before the last one, and the last; a path with no step (V2's empty
    /// path) has nothing to find.
    fn split(&self) -> Option<(&[String], &str)> {
        let (last, parents) = self.steps.split_last()?;
        Some((parents, last))
    }

    /// The field at this path in a struct schema (`fieldFrom`); `Err` if the schema is no
    /// struct, as Connect's `Schema.field` refuses.
    pub fn field_from<'a>(&self, schema: &'a Schema) -> Result<Option<&'a Field>, DataError> {
        let Some((parents, last)) = self.split() else {
            return Ok(None);
        };
        let mut current = schema;
        for step in parents {
            match lookup_field(current, step)? {
                Some(field) => current = &field.schema,
                None => return Ok(None),
            }
        }
        lookup_field(current, last)
    }

    /// The value at this path in a struct (`valueFrom(Struct, withDefault)`): null where
    /// any step is missing or null; intermediate fields are read with their defaults.
    pub fn value_from_struct(&self, root: &Struct, with_default: bool) -> Result<Value, DataError> {
        let Some((parents, last)) = self.split() else {
            return Ok(Value::Null);
        };
        let mut current = root;
        for step in parents {
            // `Struct.get`: a null field with a default reads as the default.
            let next = match current.get(step) {
                None | Some(Value::Null) => return Ok(Value::Null),
                Some(next) => next,
            };
            current = require_struct(next, "nested field access")?;
        }
        if current.schema.get_field(last).is_none() {
            return Ok(Value::Null);
        }
        struct_get(current, last, with_default)
    }

    /// The value at this path in a schemaless map (`valueFrom(Map)`).
    pub fn value_from_map(&self, root: &[(Value, Value)]) -> Result<Value, DataError> {
        let Some((parents, last)) = self.split() else {
            return Ok(Value::Null);
        };
        let mut current = root;
        for step in parents {
            match map_get(current, step) {
                None | Some(Value::Null) => return Ok(Value::Null),
                Some(next) => current = require_map(next, "nested field access")?,
            }
        }
        Ok(map_get(current, last).cloned().unwrap_or(Value::Null))
    }
}

fn lookup_field<'a>(schema: &'a Schema, name: &str) -> Result<Option<&'a Field>, DataError> {
    if schema.ty != Type::Struct {
        return Err(DataError("Cannot look up fields on non-struct type".into()));
    }
    Ok(schema.get_field(name))
}

/// KIP-821's V2 notation. Positions in errors count characters, as Java's do.
fn parse_v2(path: &str) -> Result<Vec<String>, String> {
    let chars: Vec<char> = path.chars().collect();
    let length = chars.len();
    let text = |from: usize, to: usize| chars[from..to].iter().collect::<String>();
    let incomplete = |backtick_at: usize| {
        format!(
            "Incomplete backtick pair in path: [{path}], consider adding a backslash before backtick at position {backtick_at} to escape it"
        )
    };
    let find = |c: char, from: usize| (from..length).find(|&i| chars[i] == c);
    let mut steps = Vec::new();
    let mut index = 0;
    while index < length {
        if chars[index] != '`' {
            let start = index;
            match find('.', index) {
                Some(dot) => {
                    steps.push(text(start, dot));
                    index = dot + 1;
                }
                None => {
                    steps.push(text(start, length));
                    break;
                }
            }
            continue;
        }
        let backtick_at = index;
        index += 1;
        let mut field = String::new();
        let mut start = index;
        loop {
            let Some(closing) = find('`', index) else {
                return Err(incomplete(backtick_at));
            };
            index = closing;
            let escaped = chars[index - 1] == '\\';
            if index + 1 >= length {
                if escaped {
                    return Err(incomplete(backtick_at));
                }
                field.push_str(&text(start, index));
                steps.push(field);
                index += 1;
                break;
            }
            if chars[index + 1] != '.' {
                // Not followed by a dot: part of the name; look for the closing one.
                index += 1;
                continue;
            }
            if escaped {
                field.push_str(&text(start, index - 1));
                field.push('`');
                index += 1;
                start = index;
                continue;
            }
            field.push_str(&text(start, index));
            steps.push(field);
            index += 2;
            break;
        }
    }
    if chars.last() == Some(&'.') {
        steps.push(String::new());
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::SchemaRef;

    fn v2(path: &str) -> Vec<String> {
        SingleFieldPath::parse(path, FieldSyntaxVersion::V2)
            .unwrap()
            .steps()
            .to_vec()
    }

    /// Cases from Kafka's `FieldPathNotationTest`.
    #[test]
    fn paths_parse_as_kip_821_defines() {
        for path in ["foo.bar.baz", "foo`bar`", "foo.`bar.baz`"] {
            assert_eq!(
                SingleFieldPath::parse(path, FieldSyntaxVersion::V1)
                    .unwrap()
                    .steps(),
                [path.to_string()]
            );
        }
        let cases: &[(&str, &[&str])] = &[
            ("..", &["", "", ""]),
            ("foo..", &["foo", "", ""]),
            (".bar.", &["", "bar", ""]),
            ("..baz", &["", "", "baz"]),
            ("", &[]),
            ("foobarbaz", &["foobarbaz"]),
            ("foo.bar.baz", &["foo", "bar", "baz"]),
            ("foo`bar`baz", &["foo`bar`baz"]),
            ("`foo.bar.baz`", &["foo.bar.baz"]),
            ("foo.`bar.baz`", &["foo", "bar.baz"]),
            ("`foo.bar`.baz", &["foo.bar", "baz"]),
            ("foo.`bar`.baz", &["foo", "bar", "baz"]),
            ("foo.``bar.baz`", &["foo", "`bar.baz"]),
            ("foo.`bar.baz``", &["foo", "bar.baz`"]),
            ("foo.`ba`r.baz`", &["foo", "ba`r.baz"]),
            ("foo.ba`r.baz", &["foo", "ba`r", "baz"]),
            ("foo.``bar``.baz", &["foo", "`bar`", "baz"]),
            ("``foo.bar.baz``", &["`foo.bar.baz`"]),
            ("foo.`bar\\`.baz`", &["foo", "bar`.baz"]),
            ("foo.`bar.`baz`", &["foo", "bar.`baz"]),
            ("foo.`bar\\`.`baz`", &["foo", "bar`.`baz"]),
            ("foo.`bar\\\\`.\\`baz`", &["foo", "bar\\`.\\`baz"]),
        ];
        for (path, expected) in cases {
            assert_eq!(v2(path), *expected, "{path}");
        }
        let errors = [
            ("`foo.bar.baz", 0),
            ("foo.`bar.baz", 4),
            ("foo.bar.`baz", 8),
            ("foo.bar.`baz\\`", 8),
        ];
        for (path, position) in errors {
            assert_eq!(
                SingleFieldPath::parse(path, FieldSyntaxVersion::V2).unwrap_err(),
                format!(
                    "Incomplete backtick pair in path: [{path}], consider adding a backslash before backtick at position {position} to escape it"
                )
            );
        }
    }

    /// Cases from Kafka's `SingleFieldPathTest`.
    #[test]
    fn nested_values_are_found_in_structs_and_maps() {
        let baz: SchemaRef = Schema::new(Type::Struct)
            .field("inner", Schema::new(Type::String))
            .optional()
            .into();
        let bar: SchemaRef = Schema::new(Type::Struct)
            .field("bar", Schema::new(Type::Int32))
            .field("baz", baz)
            .into();
        let schema: SchemaRef = Schema::new(Type::Struct).field("foo", bar.clone()).into();
        let foo = Struct::new(bar.clone())
            .with("bar", Value::Int32(42))
            .unwrap();
        let root = Struct::new(schema.clone())
            .with("foo", Value::Struct(foo))
            .unwrap();
        let path = |p: &str| SingleFieldPath::parse(p, FieldSyntaxVersion::V2).unwrap();

        assert_eq!(
            path("foo.bar").field_from(&schema).unwrap(),
            bar.get_field("bar")
        );
        assert_eq!(
            path("foo").field_from(&schema).unwrap(),
            schema.get_field("foo")
        );
        for missing in ["un.known", "foo.unknown", "unknown"] {
            assert_eq!(path(missing).field_from(&schema).unwrap(), None);
        }

        assert_eq!(
            path("foo.bar").value_from_struct(&root, true).unwrap(),
            Value::Int32(42)
        );
        for null in [
            "foo.baz",
            "un.known",
            "foo.unknown",
            "unknown",
            "foo.baz.inner",
        ] {
            assert_eq!(
                path(null).value_from_struct(&root, true).unwrap(),
                Value::Null,
                "{null}"
            );
        }

        let s = |v: &str| Value::String(v.into());
        let map = vec![(
            s("foo"),
            Value::Map(vec![(s("bar"), Value::Int32(42)), (s("baz"), Value::Null)]),
        )];
        assert_eq!(
            path("foo.bar").value_from_map(&map).unwrap(),
            Value::Int32(42)
        );
        for null in [
            "foo.baz",
            "un.known",
            "foo.unknown",
            "unknown",
            "foo.baz.inner",
        ] {
            assert_eq!(
                path(null).value_from_map(&map).unwrap(),
                Value::Null,
                "{null}"
            );
        }
        assert_eq!(
            path("foo.bar.x").value_from_map(&map).unwrap_err().0,
            "Only Map objects supported in absence of schema for [nested field access], found: java.lang.Integer"
        );
    }
}
