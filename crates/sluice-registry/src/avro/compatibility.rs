//! Compatibility: Avro's `SchemaCompatibility.ReaderWriterCompatibilityChecker`, every
//! incompatibility with its JSON-pointer path, memoized per (reader node, writer node) pair
//! and bounded, each worded as Confluent's `Difference`.

use std::collections::HashMap;
use std::rc::Rc;

use super::graph::{AvroType, Field, Kind, Named, NodeId, Primitive, SchemaGraph};
use super::{
    AvroSchema, CHECK_DEPTH_MAX, CHECK_PAIRS_MAX, CHECK_RECORDED_INCOMPATIBILITIES_MAX,
    INCOMPATIBILITIES_MAX,
};

impl AvroSchema {
    /// Every reason this schema (the reader) cannot read data written with `writer`, worded
    /// as Confluent words them with `reader_role` and `writer_role` in its placeholders
    /// (Confluent says "new"/"old" for BACKWARD and "old"/"new" for FORWARD).
    pub fn incompatibilities_as_reader(
        &self,
        writer: &AvroSchema,
        reader_role: &str,
        writer_role: &str,
    ) -> Vec<String> {
        let mut check = CompatibilityCheck::new(&self.graph, &writer.graph);
        match check.check_detached(self.root, writer.root) {
            Ok(found) => found
                .iter()
                .map(|incompatibility| incompatibility.describe(reader_role, writer_role))
                .collect(),
            Err(aborted) => vec![format!(
                "Unexpected exception during compatibility check: {}",
                aborted.message()
            )],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IncompatibilityType {
    NameMismatch,
    FixedSizeMismatch,
    MissingEnumSymbols,
    ReaderFieldMissingDefaultValue,
    TypeMismatch,
    MissingUnionBranch,
}

impl IncompatibilityType {
    fn name(self) -> &'static str {
        match self {
            IncompatibilityType::NameMismatch => "NAME_MISMATCH",
            IncompatibilityType::FixedSizeMismatch => "FIXED_SIZE_MISMATCH",
            IncompatibilityType::MissingEnumSymbols => "MISSING_ENUM_SYMBOLS",
            IncompatibilityType::ReaderFieldMissingDefaultValue => {
                "READER_FIELD_MISSING_DEFAULT_VALUE"
            }
            IncompatibilityType::TypeMismatch => "TYPE_MISMATCH",
            IncompatibilityType::MissingUnionBranch => "MISSING_UNION_BRANCH",
        }
    }
}

/// One of Avro's `Incompatibility`s. Shared text: a memoized result is copied into every
/// result that uses it, so copies must not cost the length of the path.
#[derive(Debug, Clone)]
struct Incompatibility {
    kind: IncompatibilityType,
    message: Rc<str>,
    /// Avro's `getLocation`: a JSON pointer from the root (whose token is left out).
    path: Rc<str>,
}

impl Incompatibility {
    fn new(kind: IncompatibilityType, message: String, location: &[String]) -> Self {
        let mut path = String::from("/");
        for (index, token) in location.iter().skip(1).enumerate() {
            if index > 0 {
                path.push('/');
            }
            path.push_str(&token.replace('~', "~0").replace('/', "~1"));
        }
        Incompatibility {
            kind,
            message: message.into(),
            path: path.into(),
        }
    }

    /// Confluent's `Difference.error()` with its two placeholders filled (reader first).
    fn describe(&self, reader_role: &str, writer_role: &str) -> String {
        let path = &self.path;
        let message = &self.message;
        let description = match self.kind {
            IncompatibilityType::FixedSizeMismatch => format!(
                "The size of FIXED type field at path '{path}' in the {reader_role} schema does \
                 not match with the {writer_role} schema"
            ),
            IncompatibilityType::TypeMismatch => format!(
                "The type (path '{path}') of a field in the {reader_role} schema does not match \
                 with the {writer_role} schema"
            ),
            IncompatibilityType::NameMismatch => {
                format!("The name of the schema has changed (path '{path}')")
            }
            IncompatibilityType::MissingEnumSymbols => format!(
                "The {reader_role} schema is missing enum symbols '{message}' at path '{path}' in \
                 the {writer_role} schema"
            ),
            IncompatibilityType::MissingUnionBranch => format!(
                "The {reader_role} schema is missing a type inside a union field at path \
                 '{path}' in the {writer_role} schema"
            ),
            IncompatibilityType::ReaderFieldMissingDefaultValue => format!(
                "The field '{message}' at path '{path}' in the {reader_role} schema has no \
                 default value and is missing in the {writer_role} schema"
            ),
        };
        format!(
            "{{errorType:'{}', description:'{description}', additionalInfo:'{message}'}}",
            self.kind.name()
        )
    }
}

/// Why a check stopped before its end.
enum CheckAborted {
    /// Avro throws when a reader field matches several writer fields (by name and aliases).
    AmbiguousField(String),
    TooDeep,
    TooManyPairs,
    TooManyIncompatibilities,
}

impl CheckAborted {
    fn message(&self) -> String {
        match self {
            CheckAborted::AmbiguousField(message) => message.clone(),
            CheckAborted::TooDeep => {
                format!("the schemas nest deeper than {CHECK_DEPTH_MAX} levels")
            }
            CheckAborted::TooManyPairs => {
                format!("the schemas have more than {CHECK_PAIRS_MAX} pairs of types to compare")
            }
            CheckAborted::TooManyIncompatibilities => format!(
                "the schemas differ in more than {CHECK_RECORDED_INCOMPATIBILITIES_MAX} places"
            ),
        }
    }
}

type Found = Rc<Vec<Incompatibility>>;

/// One reader/writer check. Results are memoized per (reader node, writer node) pair, and
/// a pair met again while it is being checked counts as compatible: that is how recursive
/// types terminate. A memoized result is reused as is, paths included, as Avro does.
///
/// The recursion runs through `check`, `calculate`, a per-type function and `check` again;
/// each is kept small (messages are built in separate functions) because the depth
/// allowed, [`CHECK_DEPTH_MAX`], is paid for in stack.
struct CompatibilityCheck<'a> {
    reader: &'a SchemaGraph,
    writer: &'a SchemaGraph,
    /// `None` while the pair is being checked.
    memo: HashMap<(NodeId, NodeId), Option<Found>>,
    depth: usize,
    /// Incompatibilities still allowed to be recorded or copied between results.
    recorded_budget: usize,
    compatible: Found,
}

impl<'a> CompatibilityCheck<'a> {
    fn new(reader: &'a SchemaGraph, writer: &'a SchemaGraph) -> Self {
        CompatibilityCheck {
            reader,
            writer,
            memo: HashMap::new(),
            depth: 0,
            recorded_budget: CHECK_RECORDED_INCOMPATIBILITIES_MAX,
            compatible: Rc::new(Vec::new()),
        }
    }

    /// A check from a fresh root location, as Avro's two-argument `getCompatibility`, which
    /// it uses for union branches.
    fn check_detached(&mut self, reader: NodeId, writer: NodeId) -> Result<Found, CheckAborted> {
        let mut location = Vec::new();
        self.check(String::new(), reader, writer, &mut location)
    }

    fn check(
        &mut self,
        token: String,
        reader: NodeId,
        writer: NodeId,
        location: &mut Vec<String>,
    ) -> Result<Found, CheckAborted> {
        location.push(token);
        let found = match self.memo.get(&(reader, writer)) {
            Some(None) => self.compatible.clone(),
            Some(Some(found)) => found.clone(),
            None => {
                if self.depth >= CHECK_DEPTH_MAX {
                    return Err(CheckAborted::TooDeep);
                }
                if self.memo.len() >= CHECK_PAIRS_MAX {
                    return Err(CheckAborted::TooManyPairs);
                }
                self.memo.insert((reader, writer), None);
                self.depth += 1;
                let found = Rc::new(self.calculate(reader, writer, location)?);
                self.depth -= 1;
                self.memo.insert((reader, writer), Some(found.clone()));
                found
            }
        };
        location.pop();
        Ok(found)
    }

    fn calculate(
        &mut self,
        reader: NodeId,
        writer: NodeId,
        location: &mut Vec<String>,
    ) -> Result<Vec<Incompatibility>, CheckAborted> {
        let reader_type = self.reader.avro_type(reader);
        let writer_type = self.writer.avro_type(writer);
        if reader_type == writer_type {
            return self.calculate_same_type(reader, writer, location);
        }
        if writer_type == AvroType::Union {
            return self.calculate_writer_union(reader, writer, location);
        }
        if is_promotion(reader_type, writer_type) {
            return Ok(Vec::new());
        }
        if reader_type == AvroType::Union {
            return self.calculate_reader_union(reader, writer, location);
        }
        let mut found = Vec::new();
        self.record(
            &mut found,
            type_mismatch(reader_type, writer_type, location),
        )?;
        Ok(found)
    }

    fn calculate_same_type(
        &mut self,
        reader: NodeId,
        writer: NodeId,
        location: &mut Vec<String>,
    ) -> Result<Vec<Incompatibility>, CheckAborted> {
        let reader_graph = self.reader;
        let writer_graph = self.writer;
        let mut found = Vec::new();
        match (
            &reader_graph.nodes[reader].kind,
            &writer_graph.nodes[writer].kind,
        ) {
            (Kind::Array(reader_items), Kind::Array(writer_items)) => {
                let items =
                    self.check("items".to_owned(), *reader_items, *writer_items, location)?;
                self.copy(&mut found, &items)?;
            }
            (Kind::Map(reader_values), Kind::Map(writer_values)) => {
                let values = self.check(
                    "values".to_owned(),
                    *reader_values,
                    *writer_values,
                    location,
                )?;
                self.copy(&mut found, &values)?;
            }
            (
                Kind::Record {
                    named: reader_named,
                    ..
                },
                Kind::Record {
                    named: writer_named,
                    ..
                },
            ) => {
                if let Some(mismatch) = name_mismatch(reader_named, writer_named, location) {
                    self.record(&mut found, mismatch)?;
                }
                self.check_record_fields(reader, writer, location, &mut found)?;
            }
            (Kind::Union(_), Kind::Union(writer_branches)) => {
                // Every branch the writer may have written must be readable; what is
                // wrong inside a branch is not detailed.
                for (index, writer_branch) in writer_branches.iter().enumerate() {
                    location.push(index.to_string());
                    if !self.check_detached(reader, *writer_branch)?.is_empty() {
                        let writer_type = writer_graph.avro_type(*writer_branch);
                        self.record(&mut found, missing_union_branch(writer_type, location))?;
                    }
                    location.pop();
                }
            }
            (reader_kind, writer_kind) => {
                for incompatibility in
                    named_leaf_incompatibilities(reader_kind, writer_kind, location)
                {
                    self.record(&mut found, incompatibility)?;
                }
            }
        }
        Ok(found)
    }

    /// Reading a writer union: every branch the writer may have written must be readable.
    fn calculate_writer_union(
        &mut self,
        reader: NodeId,
        writer: NodeId,
        location: &mut Vec<String>,
    ) -> Result<Vec<Incompatibility>, CheckAborted> {
        let mut found = Vec::new();
        if let Kind::Union(writer_branches) = &self.writer.nodes[writer].kind {
            for (index, writer_branch) in writer_branches.iter().enumerate() {
                let branch = self.check(index.to_string(), reader, *writer_branch, location)?;
                self.copy(&mut found, &branch)?;
            }
        }
        Ok(found)
    }

    /// Reading into a reader union: some branch must read what was written.
    fn calculate_reader_union(
        &mut self,
        reader: NodeId,
        writer: NodeId,
        location: &[String],
    ) -> Result<Vec<Incompatibility>, CheckAborted> {
        let reader_graph = self.reader;
        if let Kind::Union(reader_branches) = &reader_graph.nodes[reader].kind {
            for reader_branch in reader_branches {
                if self.check_detached(*reader_branch, writer)?.is_empty() {
                    return Ok(Vec::new());
                }
            }
        }
        let mut found = Vec::new();
        let writer_type = self.writer.avro_type(writer);
        self.record(&mut found, missing_union_branch(writer_type, location))?;
        Ok(found)
    }

    fn check_record_fields(
        &mut self,
        reader: NodeId,
        writer: NodeId,
        location: &mut Vec<String>,
        found: &mut Vec<Incompatibility>,
    ) -> Result<(), CheckAborted> {
        let reader_graph = self.reader;
        let writer_graph = self.writer;
        let (
            Kind::Record {
                fields: reader_fields,
                ..
            },
            Kind::Record {
                fields: writer_fields,
                ..
            },
        ) = (
            &reader_graph.nodes[reader].kind,
            &writer_graph.nodes[writer].kind,
        )
        else {
            return Ok(());
        };
        location.push("fields".to_owned());
        for (position, reader_field) in reader_fields.iter().enumerate() {
            location.push(position.to_string());
            match lookup_writer_field(writer_fields, reader_field) {
                Err(()) => {
                    return Err(ambiguous_field(
                        reader_graph,
                        writer_graph,
                        reader_field,
                        position,
                        writer,
                    ));
                }
                Ok(Some(writer_field)) => {
                    let types = self.check(
                        "type".to_owned(),
                        reader_field.schema,
                        writer_field.schema,
                        location,
                    )?;
                    self.copy(found, &types)?;
                }
                Ok(None) if reader_field.default.is_some() => {}
                Ok(None) => {
                    let enum_with_default = matches!(
                        &reader_graph.nodes[reader_field.schema].kind,
                        Kind::Enum {
                            default: Some(_),
                            ..
                        }
                    );
                    if enum_with_default {
                        // Avro compares the field's enum with the writer record itself.
                        let types =
                            self.check("type".to_owned(), reader_field.schema, writer, location)?;
                        self.copy(found, &types)?;
                    } else {
                        let missing = Incompatibility::new(
                            IncompatibilityType::ReaderFieldMissingDefaultValue,
                            reader_field.name.clone(),
                            location,
                        );
                        self.record(found, missing)?;
                    }
                }
            }
            location.pop();
        }
        location.pop();
        Ok(())
    }

    fn record(
        &mut self,
        found: &mut Vec<Incompatibility>,
        incompatibility: Incompatibility,
    ) -> Result<(), CheckAborted> {
        self.spend(1)?;
        if found.len() < INCOMPATIBILITIES_MAX {
            found.push(incompatibility);
        }
        Ok(())
    }

    fn copy(
        &mut self,
        found: &mut Vec<Incompatibility>,
        more: &[Incompatibility],
    ) -> Result<(), CheckAborted> {
        let room = INCOMPATIBILITIES_MAX
            .saturating_sub(found.len())
            .min(more.len());
        self.spend(room)?;
        found.extend(more[..room].iter().cloned());
        Ok(())
    }

    fn spend(&mut self, count: usize) -> Result<(), CheckAborted> {
        self.recorded_budget = self
            .recorded_budget
            .checked_sub(count)
            .ok_or(CheckAborted::TooManyIncompatibilities)?;
        Ok(())
    }
}

/// Avro's promotions: int to long, float or double; long to float or double; float to
/// double; string and bytes both ways.
fn is_promotion(reader: AvroType, writer: AvroType) -> bool {
    matches!(
        (reader, writer),
        (
            AvroType::Primitive(Primitive::Long),
            AvroType::Primitive(Primitive::Int)
        ) | (
            AvroType::Primitive(Primitive::Float),
            AvroType::Primitive(Primitive::Int | Primitive::Long)
        ) | (
            AvroType::Primitive(Primitive::Double),
            AvroType::Primitive(Primitive::Int | Primitive::Long | Primitive::Float)
        ) | (
            AvroType::Primitive(Primitive::Bytes),
            AvroType::Primitive(Primitive::String)
        ) | (
            AvroType::Primitive(Primitive::String),
            AvroType::Primitive(Primitive::Bytes)
        )
    )
}

/// Avro's `lookupWriterField`: by the reader field's name, then by each of its aliases;
/// `Err` when more than one writer field matches (Avro throws).
fn lookup_writer_field<'f>(
    writer_fields: &'f [Field],
    reader_field: &Field,
) -> Result<Option<&'f Field>, ()> {
    let mut candidates = writer_fields
        .iter()
        .find(|writer_field| writer_field.name == reader_field.name)
        .into_iter()
        .chain(reader_field.aliases.iter().filter_map(|alias| {
            writer_fields
                .iter()
                .find(|writer_field| writer_field.name == *alias)
        }));
    let first = candidates.next();
    match candidates.next() {
        Some(_) => Err(()),
        None => Ok(first),
    }
}

#[inline(never)]
fn ambiguous_field(
    reader_graph: &SchemaGraph,
    writer_graph: &SchemaGraph,
    reader_field: &Field,
    position: usize,
    writer: NodeId,
) -> CheckAborted {
    CheckAborted::AmbiguousField(format!(
        "Reader record field {} type:{} pos:{position} matches multiple fields in writer record \
         schema {}",
        reader_field.name,
        reader_graph.avro_type(reader_field.schema).upper_name(),
        writer_graph.resolved_text(writer)
    ))
}

#[inline(never)]
fn type_mismatch(
    reader_type: AvroType,
    writer_type: AvroType,
    location: &[String],
) -> Incompatibility {
    Incompatibility::new(
        IncompatibilityType::TypeMismatch,
        format!(
            "reader type: {} not compatible with writer type: {}",
            reader_type.upper_name(),
            writer_type.upper_name()
        ),
        location,
    )
}

#[inline(never)]
fn missing_union_branch(writer_type: AvroType, location: &[String]) -> Incompatibility {
    Incompatibility::new(
        IncompatibilityType::MissingUnionBranch,
        format!(
            "reader union lacking writer type: {}",
            writer_type.upper_name()
        ),
        location,
    )
}

/// Avro's `schemaNameEquals`: the same short name (namespaces are not compared), or the
/// writer's full name among the reader's aliases.
#[inline(never)]
fn name_mismatch(
    reader: &Named,
    writer: &Named,
    location: &mut Vec<String>,
) -> Option<Incompatibility> {
    let writer_full_name = writer.name.full();
    let same = reader.name.name == writer.name.name
        || reader
            .aliases
            .iter()
            .any(|alias| alias.alias_full_name(reader.name.space.as_deref()) == writer_full_name);
    if same {
        return None;
    }
    location.push("name".to_owned());
    let mismatch = Incompatibility::new(
        IncompatibilityType::NameMismatch,
        format!("expected: {writer_full_name}"),
        location,
    );
    location.pop();
    Some(mismatch)
}

/// What differs between two enums or two fixed types (primitives never differ from their
/// own type).
#[inline(never)]
fn named_leaf_incompatibilities(
    reader: &Kind,
    writer: &Kind,
    location: &mut Vec<String>,
) -> Vec<Incompatibility> {
    let mut found = Vec::new();
    match (reader, writer) {
        (
            Kind::Fixed {
                named: reader_named,
                size: reader_size,
            },
            Kind::Fixed {
                named: writer_named,
                size: writer_size,
            },
        ) => {
            found.extend(name_mismatch(reader_named, writer_named, location));
            if reader_size != writer_size {
                location.push("size".to_owned());
                found.push(Incompatibility::new(
                    IncompatibilityType::FixedSizeMismatch,
                    format!("expected: {writer_size}, found: {reader_size}"),
                    location,
                ));
                location.pop();
            }
        }
        (
            Kind::Enum {
                named: reader_named,
                symbols: reader_symbols,
                default: reader_default,
            },
            Kind::Enum {
                named: writer_named,
                symbols: writer_symbols,
                ..
            },
        ) => {
            found.extend(name_mismatch(reader_named, writer_named, location));
            let mut missing: Vec<&str> = writer_symbols
                .iter()
                .filter(|symbol| !reader_symbols.contains(symbol))
                .map(String::as_str)
                .collect();
            missing.sort_unstable();
            // A reader enum with a default reads unknown symbols as that default.
            let has_default = reader_default
                .as_ref()
                .is_some_and(|default| reader_symbols.contains(default));
            if !missing.is_empty() && !has_default {
                location.push("symbols".to_owned());
                found.push(Incompatibility::new(
                    IncompatibilityType::MissingEnumSymbols,
                    format!("[{}]", missing.join(", ")),
                    location,
                ));
                location.pop();
            }
        }
        _ => {}
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avro::tests::parse;
    use crate::schema::ParsedSchema;

    fn messages(reader: &str, writer: &str) -> Vec<String> {
        parse(reader).backward_incompatibilities(&parse(writer))
    }

    /// Expected strings are Confluent's, byte for byte (`Difference.error()` with "new"
    /// for the reader and "old" for the writer).
    #[test]
    fn incompatibilities_are_worded_as_confluent_words_them() {
        let order_v1 =
            r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}"#;
        let cases: &[(&str, &str, &[&str])] = &[
            (
                r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},{"name":"total","type":"double"}]}"#,
                order_v1,
                &[
                    "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'total' at path '/fields/1' in the new schema has no default value and is missing in the old schema', additionalInfo:'total'}",
                ],
            ),
            (
                r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"int"},{"name":"total","type":"double"}]}"#,
                order_v1,
                &[
                    "{errorType:'TYPE_MISMATCH', description:'The type (path '/fields/0/type') of a field in the new schema does not match with the old schema', additionalInfo:'reader type: INT not compatible with writer type: STRING'}",
                    "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'total' at path '/fields/1' in the new schema has no default value and is missing in the old schema', additionalInfo:'total'}",
                ],
            ),
            (
                r#"{"type":"record","name":"Invoice","fields":[{"name":"id","type":"string"}]}"#,
                order_v1,
                &[
                    "{errorType:'NAME_MISMATCH', description:'The name of the schema has changed (path '/name')', additionalInfo:'expected: Order'}",
                ],
            ),
            (
                r#"{"type":"enum","name":"E","symbols":["A"]}"#,
                r#"{"type":"enum","name":"E","symbols":["C","A","B"]}"#,
                &[
                    "{errorType:'MISSING_ENUM_SYMBOLS', description:'The new schema is missing enum symbols '[B, C]' at path '/symbols' in the old schema', additionalInfo:'[B, C]'}",
                ],
            ),
            (
                r#"{"type":"fixed","name":"F","size":4}"#,
                r#"{"type":"fixed","name":"F","size":8}"#,
                &[
                    "{errorType:'FIXED_SIZE_MISMATCH', description:'The size of FIXED type field at path '/size' in the new schema does not match with the old schema', additionalInfo:'expected: 8, found: 4'}",
                ],
            ),
            (
                r#"["null","string"]"#,
                r#"["null","string","int"]"#,
                &[
                    "{errorType:'MISSING_UNION_BRANCH', description:'The new schema is missing a type inside a union field at path '/2' in the old schema', additionalInfo:'reader union lacking writer type: INT'}",
                ],
            ),
            (
                r#""string""#,
                r#"["null","string"]"#,
                &[
                    "{errorType:'TYPE_MISMATCH', description:'The type (path '/0') of a field in the new schema does not match with the old schema', additionalInfo:'reader type: STRING not compatible with writer type: NULL'}",
                ],
            ),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"u","type":["null","int"]}]}"#,
                r#"{"type":"record","name":"R","fields":[{"name":"u","type":"string"}]}"#,
                &[
                    "{errorType:'MISSING_UNION_BRANCH', description:'The new schema is missing a type inside a union field at path '/fields/0/type' in the old schema', additionalInfo:'reader union lacking writer type: STRING'}",
                ],
            ),
            // What is wrong inside a union branch is not detailed, as in Avro.
            (
                r#"{"type":"record","name":"R","fields":[{"name":"u","type":["null",{"type":"record","name":"S","fields":[{"name":"x","type":"int"}]}]}]}"#,
                r#"{"type":"record","name":"R","fields":[{"name":"u","type":["null",{"type":"record","name":"S","fields":[]}]}]}"#,
                &[
                    "{errorType:'MISSING_UNION_BRANCH', description:'The new schema is missing a type inside a union field at path '/fields/0/type/1' in the old schema', additionalInfo:'reader union lacking writer type: RECORD'}",
                ],
            ),
            (
                r#"{"type":"array","items":"int"}"#,
                r#"{"type":"array","items":"long"}"#,
                &[
                    "{errorType:'TYPE_MISMATCH', description:'The type (path '/items') of a field in the new schema does not match with the old schema', additionalInfo:'reader type: INT not compatible with writer type: LONG'}",
                ],
            ),
            (
                r#"{"type":"map","values":"boolean"}"#,
                r#"{"type":"array","items":"boolean"}"#,
                &[
                    "{errorType:'TYPE_MISMATCH', description:'The type (path '/') of a field in the new schema does not match with the old schema', additionalInfo:'reader type: MAP not compatible with writer type: ARRAY'}",
                ],
            ),
            // Namespaces are not compared, aliases are honoured, promotions allowed.
            (
                r#"{"type":"record","name":"x.Order","fields":[{"name":"id","type":"string"}]}"#,
                r#"{"type":"record","name":"y.Order","fields":[{"name":"id","type":"string"}]}"#,
                &[],
            ),
            (
                r#"{"type":"record","name":"Purchase","aliases":["Order"],"fields":[{"name":"key","aliases":["id"],"type":"bytes"}]}"#,
                order_v1,
                &[],
            ),
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":"double"},{"name":"c","type":"float"},{"name":"d","type":"string"}]}"#,
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"float"},{"name":"c","type":"long"},{"name":"d","type":"bytes"}]}"#,
                &[],
            ),
            // A reader enum with a default reads symbols it lacks.
            (
                r#"{"type":"enum","name":"E","symbols":["A","UNKNOWN"],"default":"UNKNOWN"}"#,
                r#"{"type":"enum","name":"E","symbols":["A","B"]}"#,
                &[],
            ),
            // A reader field matched by its name and by an alias: Avro throws.
            (
                r#"{"type":"record","name":"R","fields":[{"name":"a","aliases":["b"],"type":"int"}]}"#,
                r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"int"}]}"#,
                &[
                    r#"Unexpected exception during compatibility check: Reader record field a type:INT pos:0 matches multiple fields in writer record schema {"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"int"}]}"#,
                ],
            ),
        ];
        for (reader, writer, expected) in cases {
            assert_eq!(
                messages(reader, writer),
                *expected,
                "reader {reader}, writer {writer}"
            );
        }
    }

    #[test]
    fn recursive_schemas_are_checked_without_looping() {
        let list = |value_type: &str| {
            format!(
                r#"{{"type":"record","name":"Node","fields":[{{"name":"value","type":"{value_type}"}},{{"name":"next","type":["null","Node"],"default":null}}]}}"#
            )
        };
        assert!(messages(&list("long"), &list("int")).is_empty());
        assert_eq!(
            messages(&list("string"), &list("int")),
            [
                "{errorType:'TYPE_MISMATCH', description:'The type (path '/fields/0/type') of a field in the new schema does not match with the old schema', additionalInfo:'reader type: STRING not compatible with writer type: INT'}"
            ]
        );
        // Mutually recursive types.
        let tree = r#"{"type":"record","name":"Tree","fields":[{"name":"children","type":{"type":"array","items":{"type":"record","name":"Branch","fields":[{"name":"tree","type":"Tree"},{"name":"weight","type":"int"}]}}}]}"#;
        assert!(messages(tree, tree).is_empty());
    }

    /// A cycle of `length` records, each holding the next, optionally through a union.
    fn record_cycle(length: usize, optional: bool) -> String {
        let mut schema = "\"N0\"".to_owned();
        for level in (0..length).rev() {
            if optional {
                schema = format!(r#"["null",{schema}]"#);
            }
            schema = format!(
                r#"{{"type":"record","name":"N{level}","fields":[{{"name":"next","type":{schema}}}]}}"#
            );
        }
        schema
    }

    #[test]
    fn checks_of_long_recursive_cycles_stop_at_the_depth_limit() {
        // A 33-cycle read as a 34-cycle meets a (reader, writer) pair again only after
        // 33 * 34 records, past the limit; reaching the limit fits in half the 2 MiB stack
        // of a Tokio worker, even in a debug build.
        let (reader, writer) = (record_cycle(33, false), record_cycle(34, false));
        let reasons = std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || messages(&reader, &writer))
            .expect("a thread")
            .join()
            .expect("no stack overflow");
        assert_eq!(
            reasons,
            [format!(
                "Unexpected exception during compatibility check: the schemas nest deeper than \
                 {CHECK_DEPTH_MAX} levels"
            )]
        );
        // A 15-cycle read as a 16-cycle finishes within the limit.
        let reasons = messages(&record_cycle(15, false), &record_cycle(16, false));
        assert!(
            reasons[0].starts_with("{errorType:'NAME_MISMATCH'"),
            "{reasons:?}"
        );
        // A 3-cycle read as a 4-cycle differs where the cycles part, inside unions.
        assert_eq!(
            messages(&record_cycle(3, true), &record_cycle(4, true)),
            [
                "{errorType:'MISSING_UNION_BRANCH', description:'The new schema is missing a type inside a union field at path '/fields/0/type/1' in the old schema', additionalInfo:'reader union lacking writer type: RECORD'}"
            ]
        );
        assert!(messages(&record_cycle(3, true), &record_cycle(3, true)).is_empty());
    }
}
