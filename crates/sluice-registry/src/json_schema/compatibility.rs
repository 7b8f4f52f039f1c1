//! Confluent's comparison of two JSON Schemas (`SchemaDiff` and the per-kind diffs), old
//! schema to new: the pairs of subschemas it walks, with its guards against cycles and its
//! bounds, and the rules for each kind of schema.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use serde_json::Value;

use super::difference::{Context, Difference, DifferenceType, LimitTypes};
use super::model::{
    ArrayKind, Criterion, Kind, Model, Node, NodeId, NumberKind, ObjectKind, StringKind,
};
use super::{JsonSchema, MAX_COMPARED_PAIRS, MAX_COMPARISON_DEPTH};

impl JsonSchema {
    /// Every reason this schema (the reader) cannot read data written with `writer`, worded
    /// as Confluent words them with `reader_label` and `writer_label` ("new", "old") for the
    /// two schemas.
    pub fn incompatibilities_with_labels(
        &self,
        writer: &JsonSchema,
        reader_label: &str,
        writer_label: &str,
    ) -> Vec<String> {
        let (differences, limit_exceeded) = self.differences_from(writer);
        let mut messages: Vec<String> = differences
            .iter()
            .filter(|difference| !difference.kind.is_compatible())
            .map(|difference| difference.message(reader_label, writer_label))
            .collect();
        if limit_exceeded {
            messages.push(format!(
                "{{errorType:\"COMPARISON_LIMIT_EXCEEDED\", description:\"Comparing the \
                 {reader_label} schema with the {writer_label} schema needs more than \
                 {MAX_COMPARED_PAIRS} subschema comparisons or nests deeper than \
                 {MAX_COMPARISON_DEPTH}; the schemas are treated as incompatible'}}"
            ));
        }
        messages
    }

    /// All differences (compatible ones too) found going from `writer` to `self`, and
    /// whether the comparison stopped at its bound.
    fn differences_from(&self, writer: &JsonSchema) -> (Vec<Difference>, bool) {
        let mut comparison = Comparison::new([&writer.model, &self.model]);
        let mut context = Context::default();
        comparison.compare(
            &mut context,
            SchemaRef {
                side: OLD,
                node: writer.model.root,
            },
            SchemaRef {
                side: NEW,
                node: self.model.root,
            },
        );
        (context.differences, comparison.limit_exceeded)
    }
}

const OLD: usize = 0;
const NEW: usize = 1;

/// A node of one of the two models being compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct SchemaRef {
    side: usize,
    node: NodeId,
}

impl SchemaRef {
    fn to(self, node: NodeId) -> SchemaRef {
        SchemaRef {
            side: self.side,
            node,
        }
    }
}

type Pair = (SchemaRef, SchemaRef);

struct Comparison<'m> {
    models: [&'m Model; 2],
    /// Pair results that did not depend on a cycle, paths relative to the pair.
    memo: HashMap<Pair, Rc<Vec<Difference>>>,
    in_progress: HashSet<Pair>,
    /// Cycles cut so far; a pair whose comparison cut one is not memoized.
    cycles_cut: u64,
    pairs_compared: usize,
    depth: usize,
    limit_exceeded: bool,
}

impl<'m> Comparison<'m> {
    fn new(models: [&'m Model; 2]) -> Self {
        Comparison {
            models,
            memo: HashMap::new(),
            in_progress: HashSet::new(),
            cycles_cut: 0,
            pairs_compared: 0,
            depth: 0,
            limit_exceeded: false,
        }
    }

    fn node(&self, schema: SchemaRef) -> &'m Node {
        let model: &'m Model = self.models[schema.side];
        &model.nodes[schema.node]
    }

    fn kind(&self, schema: SchemaRef) -> &'m Kind {
        &self.node(schema).kind
    }

    fn resolve(&self, schema: SchemaRef) -> SchemaRef {
        schema.to(self.models[schema.side].resolve(schema.node))
    }

    /// `SchemaDiff.compare` with a missing schema on either side.
    fn compare_optional(
        &mut self,
        context: &mut Context,
        original: Option<SchemaRef>,
        update: Option<SchemaRef>,
    ) {
        match (original, update) {
            (None, None) => {}
            (None, Some(_)) => context.add(DifferenceType::SchemaAdded),
            (Some(_), None) => context.add(DifferenceType::SchemaRemoved),
            (Some(original), Some(update)) => self.compare(context, original, update),
        }
    }

    /// `SchemaDiff.compare`: `$ref`s followed, each pair compared once (memoized unless its
    /// result hung on a cycle), a pair met again inside itself taken as compatible.
    fn compare(&mut self, context: &mut Context, original: SchemaRef, update: SchemaRef) {
        if self.limit_exceeded {
            return;
        }
        let pair = (self.resolve(original), self.resolve(update));
        if let Some(differences) = self.memo.get(&pair) {
            let differences = Rc::clone(differences);
            context.add_rebased(&differences);
            return;
        }
        if self.in_progress.contains(&pair) {
            self.cycles_cut += 1;
            return;
        }
        if self.pairs_compared >= MAX_COMPARED_PAIRS || self.depth >= MAX_COMPARISON_DEPTH {
            self.limit_exceeded = true;
            return;
        }
        self.pairs_compared += 1;
        self.depth += 1;
        self.in_progress.insert(pair);
        let cycles_before = self.cycles_cut;
        let mut pair_context = Context::default();
        self.compare_types(&mut pair_context, pair.0, pair.1);
        self.in_progress.remove(&pair);
        self.depth -= 1;
        let differences = Rc::new(pair_context.differences);
        if self.cycles_cut == cycles_before && !self.limit_exceeded {
            self.memo.insert(pair, Rc::clone(&differences));
        }
        context.add_rebased(&differences);
    }

    fn compare_types(&mut self, context: &mut Context, original: SchemaRef, update: SchemaRef) {
        use DifferenceType::*;
        let (original_kind, update_kind) = (self.kind(original), self.kind(update));
        match (original_kind, update_kind) {
            (original_kind, Kind::Combined(criterion, subschemas))
                if !original_kind.is_combined() =>
            {
                if subschemas.len() == 1 {
                    // A singleton union is its only member.
                    let mut trial = context.trial();
                    self.compare(&mut trial, original, update.to(subschemas[0]));
                    if trial.is_compatible() {
                        context.keep(trial);
                        return;
                    }
                } else if *criterion != Criterion::All {
                    for &subschema in subschemas {
                        let mut trial = context.trial();
                        self.compare(&mut trial, original, update.to(subschema));
                        if trial.is_compatible() {
                            context.keep(trial);
                            context.add(SumTypeExtended);
                            return;
                        }
                    }
                }
            }
            (Kind::Combined(criterion, subschemas), update_kind) if !update_kind.is_combined() => {
                if subschemas.len() == 1 {
                    let mut trial = context.trial();
                    self.compare(&mut trial, original.to(subschemas[0]), update);
                    if trial.is_compatible() {
                        context.keep(trial);
                        return;
                    }
                } else if *criterion == Criterion::All {
                    for &subschema in subschemas {
                        let mut trial = context.trial();
                        self.compare(&mut trial, original.to(subschema), update);
                        if trial.is_compatible() {
                            context.keep(trial);
                            context.add(ProductTypeNarrowed);
                            return;
                        }
                    }
                }
            }
            _ => {}
        }

        let (original_node, update_node) = (self.node(original), self.node(update));
        let same_class = original_kind.class() == update_kind.class();
        if !same_class {
            if matches!(original_kind, Kind::False) || update_kind.is_empty_schema() {
                return;
            }
            if original_node.annotations.connect_bytes && update_node.annotations.connect_bytes {
                // Kafka Connect's decimal may move between string and number encodings.
                return;
            }
            context.add(TypeChanged);
            return;
        }

        let (a, b) = (&original_node.annotations, &update_node.annotations);
        if a.id != b.id {
            context.add(IdChanged);
        }
        if a.title != b.title {
            context.add(TitleChanged);
        }
        if a.description != b.description {
            context.add(DescriptionChanged);
        }
        if a.default != b.default {
            context.add(DefaultChanged);
        }

        match (original_kind, update_kind) {
            (Kind::String(a), Kind::String(b)) => compare_strings(context, a, b),
            (Kind::Number(a), Kind::Number(b)) => compare_numbers(context, a, b),
            (Kind::Const(a), Kind::Const(b)) if a != b => {
                context.add_at("const", EnumArrayChanged);
            }
            (Kind::Enum(a), Kind::Enum(b)) => compare_enums(context, a, b),
            (Kind::Combined(criterion_a, a), Kind::Combined(criterion_b, b)) => {
                let original_side = (original, *criterion_a, a.as_slice());
                let update_side = (update, *criterion_b, b.as_slice());
                self.compare_combined(context, original_side, update_side);
            }
            (Kind::Not(a), Kind::Not(b)) => {
                context.enter("not");
                // What the old schema excluded, the new one may exclude less of: compared
                // the other way round.
                let mut trial = context.trial();
                self.compare(&mut trial, update.to(*b), original.to(*a));
                context.add(if trial.is_compatible() {
                    NotTypeNarrowed
                } else {
                    NotTypeExtended
                });
                context.leave();
            }
            (Kind::Object(a), Kind::Object(b)) => {
                self.compare_objects(context, (original, a), (update, b));
            }
            (Kind::Array(a), Kind::Array(b)) => {
                self.compare_arrays(context, (original, a), (update, b));
            }
            _ => {}
        }
    }

    /// `CombinedSchemaDiff`: criteria, sizes, then a maximum matching of compatible
    /// (old, new) subschema pairs, which must cover the smaller side.
    fn compare_combined(
        &mut self,
        context: &mut Context,
        (original, original_criterion, original_all): (SchemaRef, Criterion, &[NodeId]),
        (update, update_criterion, update_all): (SchemaRef, Criterion, &[NodeId]),
    ) {
        use DifferenceType::*;
        if original_criterion != update_criterion {
            let single_original = original_all.len() == 1;
            let single_update = update_all.len() == 1;
            let extended = update_criterion == Criterion::Any
                || (single_original && single_update)
                || (single_original && update_criterion == Criterion::One)
                || (single_update && original_criterion == Criterion::All);
            if !extended {
                context.add(CombinedTypeChanged);
                return;
            }
            context.add(CombinedTypeExtended);
        }
        let original_subschemas = distinct(self.models[original.side], original_all);
        let update_subschemas = distinct(self.models[update.side], update_all);
        let (original_size, update_size) = (original_subschemas.len(), update_subschemas.len());
        if original_size < update_size {
            context.add(if update_criterion == Criterion::All {
                ProductTypeExtended
            } else {
                SumTypeExtended
            });
        } else if original_size > update_size {
            context.add(if original_criterion == Criterion::All {
                ProductTypeNarrowed
            } else {
                SumTypeNarrowed
            });
        }
        let mut edges: Vec<(usize, usize, Vec<Difference>)> = Vec::new();
        for (original_index, &original_subschema) in original_subschemas.iter().enumerate() {
            context.enter(format!("{}/{original_index}", original_criterion.keyword()));
            for (update_index, &update_subschema) in update_subschemas.iter().enumerate() {
                let mut trial = context.trial();
                self.compare(
                    &mut trial,
                    original.to(original_subschema),
                    update.to(update_subschema),
                );
                if trial.is_compatible() {
                    edges.push((original_index, update_index, trial.differences));
                }
            }
            context.leave();
        }
        let pairs: Vec<(usize, usize)> = edges.iter().map(|(a, b, _)| (*a, *b)).collect();
        let matching = maximum_matching(original_size, update_size, &pairs);
        for &edge in &matching {
            context.differences.extend(edges[edge].2.iter().cloned());
        }
        if matching.len() < original_size.min(update_size) {
            context.add(CombinedTypeSubschemasChanged);
        }
    }

    /// `ObjectSchemaDiff`.
    fn compare_objects(
        &mut self,
        context: &mut Context,
        (original, a): (SchemaRef, &ObjectKind),
        (update, b): (SchemaRef, &ObjectKind),
    ) {
        use DifferenceType::*;
        context.enter("required");
        for (name, _) in &a.properties {
            let Some(&(_, update_property)) = b.properties.iter().find(|(n, _)| n == name) else {
                continue;
            };
            let was_required = a.required.contains(name);
            let is_required = b.required.contains(name);
            if was_required && !is_required {
                context.add_at(name, RequiredAttributeRemoved);
            } else if !was_required && is_required {
                context.add_at(
                    name,
                    if self.has_default(update.to(update_property)) {
                        RequiredAttributeWithDefaultAdded
                    } else {
                        RequiredAttributeAdded
                    },
                );
            }
        }
        context.leave();

        context.enter("properties");
        let added = b
            .properties
            .iter()
            .filter(|(name, _)| !a.properties.iter().any(|(n, _)| n == name));
        let names: Vec<&String> = a
            .properties
            .iter()
            .chain(added)
            .map(|(name, _)| name)
            .collect();
        for name in names {
            let original_property = a.properties.iter().find(|(n, _)| n == name).map(|p| p.1);
            let update_property = b.properties.iter().find(|(n, _)| n == name).map(|p| p.1);
            context.enter(name.as_str());
            match (original_property, update_property) {
                (Some(original_property), None) => {
                    // Only the new model says whether a property may go.
                    if self.is_open_object(update, b) {
                        context.add(PropertyRemovedFromOpenContentModel);
                    } else if let Some(covering) = self.partially_open_object(update, b, name) {
                        let mut trial = context.trial();
                        self.compare(&mut trial, original.to(original_property), covering);
                        let covered = trial.is_compatible();
                        context.keep(trial);
                        context.add(if covered {
                            PropertyRemovedIsCoveredByPartiallyOpenContentModel
                        } else {
                            PropertyRemovedNotCoveredByPartiallyOpenContentModel
                        });
                    } else if matches!(self.kind(original.to(original_property)), Kind::False) {
                        context.add(PropertyWithFalseRemovedFromClosedContentModel);
                    } else {
                        context.add(PropertyRemovedFromClosedContentModel);
                    }
                }
                (None, Some(update_property)) => {
                    // Only the old model says whether a property may come.
                    if self.is_open_object(original, a) {
                        if self.kind(update.to(update_property)).is_empty_schema() {
                            context.add(PropertyWithEmptySchemaAddedToOpenContentModel);
                        } else {
                            context.add(PropertyAddedToOpenContentModel);
                        }
                    } else {
                        if let Some(covering) = self.partially_open_object(original, a, name) {
                            let mut trial = context.trial();
                            self.compare(&mut trial, covering, update.to(update_property));
                            let covered = trial.is_compatible();
                            context.keep(trial);
                            context.add(if covered {
                                PropertyAddedIsCoveredByPartiallyOpenContentModel
                            } else {
                                PropertyAddedNotCoveredByPartiallyOpenContentModel
                            });
                        }
                        context.add(if !b.required.contains(name) {
                            OptionalPropertyAddedToUnopenContentModel
                        } else if self.has_default(update.to(update_property)) {
                            RequiredPropertyWithDefaultAddedToUnopenContentModel
                        } else {
                            RequiredPropertyAddedToUnopenContentModel
                        });
                    }
                }
                (Some(original_property), Some(update_property)) => {
                    self.compare(
                        context,
                        original.to(original_property),
                        update.to(update_property),
                    );
                }
                (None, None) => {}
            }
            context.leave();
        }
        context.leave();

        context.enter("dependencies");
        let dependency_names = union_of_names(&a.property_dependencies, &b.property_dependencies);
        for name in dependency_names {
            let was = a
                .property_dependencies
                .iter()
                .find(|(n, _)| *n == name)
                .map(|d| &d.1);
            let is = b
                .property_dependencies
                .iter()
                .find(|(n, _)| *n == name)
                .map(|d| &d.1);
            let kind = match (was, is) {
                (_, None) => Some(DependencyArrayRemoved),
                (None, Some(_)) => Some(DependencyArrayAdded),
                (Some(was), Some(is)) => {
                    let contains_all =
                        |all: &[String], some: &[String]| some.iter().all(|n| all.contains(n));
                    if contains_all(was, is) && contains_all(is, was) {
                        None
                    } else if contains_all(is, was) {
                        Some(DependencyArrayExtended)
                    } else if contains_all(was, is) {
                        Some(DependencyArrayNarrowed)
                    } else {
                        Some(DependencyArrayChanged)
                    }
                }
            };
            if let Some(kind) = kind {
                context.add_at(&name, kind);
            }
        }
        let dependency_names = union_of_names(&a.schema_dependencies, &b.schema_dependencies);
        for name in dependency_names {
            let was = a
                .schema_dependencies
                .iter()
                .find(|(n, _)| *n == name)
                .map(|d| d.1);
            let is = b
                .schema_dependencies
                .iter()
                .find(|(n, _)| *n == name)
                .map(|d| d.1);
            context.enter(name.as_str());
            match (was, is) {
                (_, None) => context.add(DependencySchemaRemoved),
                (None, Some(_)) => context.add(DependencySchemaAdded),
                (Some(was), Some(is)) => self.compare(context, original.to(was), update.to(is)),
            }
            context.leave();
        }
        context.leave();

        context.enter("additionalProperties");
        if a.permits_additional != b.permits_additional {
            context.add(if b.permits_additional {
                AdditionalPropertiesAdded
            } else {
                AdditionalPropertiesRemoved
            });
        } else {
            match (a.additional_schema, b.additional_schema) {
                (None, Some(_)) => context.add(AdditionalPropertiesNarrowed),
                (Some(_), None) => context.add(AdditionalPropertiesExtended),
                (Some(was), Some(is)) => self.compare(context, original.to(was), update.to(is)),
                (None, None) => {}
            }
        }
        context.leave();

        let unevaluated_types = [
            UnevaluatedPropertiesAdded,
            UnevaluatedPropertiesRemoved,
            UnevaluatedPropertiesExtended,
            UnevaluatedPropertiesNarrowed,
        ];
        self.compare_unevaluated(
            context,
            "unevaluatedProperties",
            (original, a.unevaluated),
            (update, b.unevaluated),
            unevaluated_types,
        );

        compare_limit(
            context,
            "maxProperties",
            a.max_properties,
            b.max_properties,
            [
                MaxPropertiesAdded,
                MaxPropertiesRemoved,
                MaxPropertiesIncreased,
                MaxPropertiesDecreased,
            ],
        );
        compare_limit(
            context,
            "minProperties",
            a.min_properties,
            b.min_properties,
            [
                MinPropertiesAdded,
                MinPropertiesRemoved,
                MinPropertiesIncreased,
                MinPropertiesDecreased,
            ],
        );
    }

    /// everit's `hasDefaultValue()` of a property's schema as written (a `$ref` may carry one).
    fn has_default(&self, schema: SchemaRef) -> bool {
        self.node(schema).annotations.default.is_some()
    }

    /// Fully open: any extra property is allowed and left unconstrained.
    fn is_open_object(&self, side: SchemaRef, object: &ObjectKind) -> bool {
        object.permits_additional
            && object.additional_schema.is_none()
            && object.pattern_properties.is_empty()
            && object
                .unevaluated
                .is_none_or(|node| self.kind(side.to(node)).is_empty_schema())
    }

    /// The schema a partially open object gives an extra property `name`: the first
    /// matching pattern property's, else `additionalProperties`', else
    /// `unevaluatedProperties`' (when that is a real constraint).
    fn partially_open_object(
        &self,
        side: SchemaRef,
        object: &ObjectKind,
        name: &str,
    ) -> Option<SchemaRef> {
        let name_value = Value::String(name.to_owned());
        for pattern in &object.pattern_properties {
            if pattern
                .matcher
                .as_ref()
                .is_some_and(|matcher| matcher.is_valid(&name_value))
            {
                return Some(side.to(pattern.schema));
            }
        }
        if let Some(schema) = object.additional_schema {
            return Some(side.to(schema));
        }
        let additional_absent = object.permits_additional && object.additional_schema.is_none();
        match object.unevaluated {
            Some(node) if additional_absent && self.is_real_constraint(side.to(node)) => {
                Some(side.to(node))
            }
            _ => None,
        }
    }

    /// Neither `false` nor the empty schema.
    fn is_real_constraint(&self, schema: SchemaRef) -> bool {
        let kind = self.kind(schema);
        !matches!(kind, Kind::False) && !kind.is_empty_schema()
    }

    /// The `unevaluatedProperties`/`unevaluatedItems` comparison of Confluent 8.3.
    fn compare_unevaluated(
        &mut self,
        context: &mut Context,
        keyword: &str,
        (original, was): (SchemaRef, Option<NodeId>),
        (update, is): (SchemaRef, Option<NodeId>),
        [added, removed, extended, narrowed]: LimitTypes,
    ) {
        let (was, is) = match (was, is) {
            (None, None) => return,
            (was, is) => (was.map(|n| original.to(n)), is.map(|n| update.to(n))),
        };
        let is_false = |schema: Option<SchemaRef>| {
            schema.is_some_and(|schema| matches!(self.kind(schema), Kind::False))
        };
        let is_empty = |schema: Option<SchemaRef>| {
            schema.is_some_and(|schema| self.kind(schema).is_empty_schema())
        };
        let (was_false, is_false) = (is_false(was), is_false(is));
        let (was_empty, is_empty) = (is_empty(was), is_empty(is));
        context.enter(keyword);
        match (was, is) {
            (None, Some(_)) => context.add(if is_false { removed } else { narrowed }),
            (Some(_), None) => context.add(if was_false { added } else { extended }),
            (Some(was), Some(is)) => {
                if was_false && !is_false {
                    context.add(added);
                } else if !was_false && is_false {
                    context.add(removed);
                } else if was_empty && !is_empty {
                    context.add(narrowed);
                } else if !was_empty && is_empty {
                    context.add(extended);
                } else {
                    self.compare(context, was, is);
                }
            }
            (None, None) => {}
        }
        context.leave();
    }

    /// `ArraySchemaDiff`.
    fn compare_arrays(
        &mut self,
        context: &mut Context,
        (original, a): (SchemaRef, &ArrayKind),
        (update, b): (SchemaRef, &ArrayKind),
    ) {
        use DifferenceType::*;
        context.enter("items");
        self.compare_optional(
            context,
            a.all_items.map(|node| original.to(node)),
            b.all_items.map(|node| update.to(node)),
        );
        context.leave();

        let common = a.tuple_items.len().min(b.tuple_items.len());
        for index in 0..common {
            context.enter(format!("items/{index}"));
            let (was, is) = (a.tuple_items[index], b.tuple_items[index]);
            self.compare(context, original.to(was), update.to(is));
            context.leave();
        }
        for (index, &was) in a.tuple_items.iter().enumerate().skip(common) {
            context.enter(format!("items/{index}"));
            if self.is_open_array(update, b) {
                context.add(ItemRemovedFromOpenContentModel);
            } else if let Some(covering) = self.partially_open_array(update, b) {
                let mut trial = context.trial();
                self.compare(&mut trial, original.to(was), covering);
                let covered = trial.is_compatible();
                context.keep(trial);
                context.add(if covered {
                    ItemRemovedIsCoveredByPartiallyOpenContentModel
                } else {
                    ItemRemovedNotCoveredByPartiallyOpenContentModel
                });
            } else if matches!(self.kind(original.to(was)), Kind::False) {
                context.add(ItemWithFalseRemovedFromClosedContentModel);
            } else {
                context.add(ItemRemovedFromClosedContentModel);
            }
            context.leave();
        }
        for (index, &is) in b.tuple_items.iter().enumerate().skip(common) {
            context.enter(format!("items/{index}"));
            if self.is_open_array(original, a) {
                if self.kind(update.to(is)).is_empty_schema() {
                    context.add(ItemWithEmptySchemaAddedToOpenContentModel);
                } else {
                    context.add(ItemAddedToOpenContentModel);
                }
            } else if let Some(covering) = self.partially_open_array(original, a) {
                let mut trial = context.trial();
                self.compare(&mut trial, covering, update.to(is));
                let covered = trial.is_compatible();
                context.keep(trial);
                context.add(if covered {
                    ItemAddedIsCoveredByPartiallyOpenContentModel
                } else {
                    ItemAddedNotCoveredByPartiallyOpenContentModel
                });
            } else {
                context.add(ItemAddedToClosedContentModel);
            }
            context.leave();
        }

        context.enter("additionalItems");
        if a.permits_additional != b.permits_additional {
            context.add(if a.permits_additional {
                AdditionalItemsRemoved
            } else {
                AdditionalItemsAdded
            });
        } else {
            match (a.additional_schema, b.additional_schema) {
                (None, Some(_)) => context.add(AdditionalItemsNarrowed),
                (Some(_), None) => context.add(AdditionalItemsExtended),
                (Some(was), Some(is)) => self.compare(context, original.to(was), update.to(is)),
                (None, None) => {}
            }
        }
        context.leave();

        self.compare_unevaluated(
            context,
            "unevaluatedItems",
            (original, a.unevaluated),
            (update, b.unevaluated),
            [
                UnevaluatedItemsAdded,
                UnevaluatedItemsRemoved,
                UnevaluatedItemsExtended,
                UnevaluatedItemsNarrowed,
            ],
        );

        compare_limit(
            context,
            "maxItems",
            a.max_items,
            b.max_items,
            [
                MaxItemsAdded,
                MaxItemsRemoved,
                MaxItemsIncreased,
                MaxItemsDecreased,
            ],
        );
        compare_limit(
            context,
            "minItems",
            a.min_items,
            b.min_items,
            [
                MinItemsAdded,
                MinItemsRemoved,
                MinItemsIncreased,
                MinItemsDecreased,
            ],
        );
        if a.unique_items != b.unique_items {
            context.add_at(
                "uniqueItems",
                if a.unique_items {
                    UniqueItemsRemoved
                } else {
                    UniqueItemsAdded
                },
            );
        }
        compare_limit(
            context,
            "maxContains",
            a.max_contains,
            b.max_contains,
            [
                MaxContainsAdded,
                MaxContainsRemoved,
                MaxContainsIncreased,
                MaxContainsDecreased,
            ],
        );
        compare_limit(
            context,
            "minContains",
            a.min_contains,
            b.min_contains,
            [
                MinContainsAdded,
                MinContainsRemoved,
                MinContainsIncreased,
                MinContainsDecreased,
            ],
        );
    }

    fn is_open_array(&self, side: SchemaRef, array: &ArrayKind) -> bool {
        array.permits_additional
            && array.additional_schema.is_none()
            && array
                .unevaluated
                .is_none_or(|node| self.kind(side.to(node)).is_empty_schema())
    }

    fn partially_open_array(&self, side: SchemaRef, array: &ArrayKind) -> Option<SchemaRef> {
        if let Some(schema) = array.additional_schema {
            return Some(side.to(schema));
        }
        let additional_absent = array.permits_additional && array.additional_schema.is_none();
        match array.unevaluated {
            Some(node) if additional_absent && self.is_real_constraint(side.to(node)) => {
                Some(side.to(node))
            }
            _ => None,
        }
    }
}

/// The subschemas of a combined schema without repeats (Confluent puts them in a set).
fn distinct(model: &Model, subschemas: &[NodeId]) -> Vec<NodeId> {
    let mut distinct: Vec<NodeId> = Vec::with_capacity(subschemas.len());
    for &subschema in subschemas {
        if !distinct
            .iter()
            .any(|&kept| model.same_subschema(kept, subschema))
        {
            distinct.push(subschema);
        }
    }
    distinct
}

fn union_of_names<T>(a: &[(String, T)], b: &[(String, T)]) -> Vec<String> {
    let mut names: Vec<String> = a.iter().map(|(name, _)| name.clone()).collect();
    for (name, _) in b {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    names
}

/// A limit keyword (`maxLength`, `minimum`, ...) from the old value to the new one.
fn compare_limit(
    context: &mut Context,
    keyword: &str,
    original: Option<f64>,
    update: Option<f64>,
    [added, removed, increased, decreased]: LimitTypes,
) {
    match (original, update) {
        (None, Some(_)) => context.add_at(keyword, added),
        (Some(_), None) => context.add_at(keyword, removed),
        (Some(was), Some(is)) if was < is => context.add_at(keyword, increased),
        (Some(was), Some(is)) if was > is => context.add_at(keyword, decreased),
        _ => {}
    }
}

/// `StringSchemaDiff`.
fn compare_strings(context: &mut Context, a: &StringKind, b: &StringKind) {
    use DifferenceType::*;
    compare_limit(
        context,
        "maxLength",
        a.max_length,
        b.max_length,
        [
            MaxLengthAdded,
            MaxLengthRemoved,
            MaxLengthIncreased,
            MaxLengthDecreased,
        ],
    );
    compare_limit(
        context,
        "minLength",
        a.min_length,
        b.min_length,
        [
            MinLengthAdded,
            MinLengthRemoved,
            MinLengthIncreased,
            MinLengthDecreased,
        ],
    );
    match (&a.pattern, &b.pattern) {
        (None, Some(_)) => context.add_at("pattern", PatternAdded),
        (Some(_), None) => context.add_at("pattern", PatternRemoved),
        (Some(was), Some(is)) if was != is => context.add_at("pattern", PatternChanged),
        _ => {}
    }
}

/// `NumberSchemaDiff`.
fn compare_numbers(context: &mut Context, a: &NumberKind, b: &NumberKind) {
    use DifferenceType::*;
    compare_limit(
        context,
        "maximum",
        a.maximum,
        b.maximum,
        [
            MaximumAdded,
            MaximumRemoved,
            MaximumIncreased,
            MaximumDecreased,
        ],
    );
    compare_limit(
        context,
        "minimum",
        a.minimum,
        b.minimum,
        [
            MinimumAdded,
            MinimumRemoved,
            MinimumIncreased,
            MinimumDecreased,
        ],
    );
    compare_limit(
        context,
        "exclusiveMaximum",
        a.exclusive_maximum,
        b.exclusive_maximum,
        [
            ExclusiveMaximumAdded,
            ExclusiveMaximumRemoved,
            ExclusiveMaximumIncreased,
            ExclusiveMaximumDecreased,
        ],
    );
    compare_limit(
        context,
        "exclusiveMinimum",
        a.exclusive_minimum,
        b.exclusive_minimum,
        [
            ExclusiveMinimumAdded,
            ExclusiveMinimumRemoved,
            ExclusiveMinimumIncreased,
            ExclusiveMinimumDecreased,
        ],
    );
    match (a.multiple_of, b.multiple_of) {
        (None, Some(_)) => context.add_at("multipleOf", MultipleOfAdded),
        (Some(_), None) => context.add_at("multipleOf", MultipleOfRemoved),
        (Some(was), Some(is)) if was != is => {
            let kind = if is_multiple(is, was) {
                // Every value the new schema accepts, the old did: fewer values.
                MultipleOfExpanded
            } else if is_multiple(was, is) {
                MultipleOfReduced
            } else {
                MultipleOfChanged
            };
            context.add_at("multipleOf", kind);
        }
        _ => {}
    }
    if a.requires_integer != b.requires_integer {
        context.add(if a.requires_integer {
            TypeExtended
        } else {
            TypeNarrowed
        });
    }
}

/// Whether `value` is a whole multiple of `divisor`, exactly for integers and within
/// rounding for fractions (`0.3` is a multiple of `0.1`).
fn is_multiple(value: f64, divisor: f64) -> bool {
    if divisor == 0.0 || !value.is_finite() || !divisor.is_finite() {
        return false;
    }
    let quotient = value / divisor;
    if !quotient.is_finite() {
        return false;
    }
    (quotient - quotient.round()).abs() <= 1e-9 * quotient.abs().max(1.0)
}

/// `EnumSchemaDiff`: the lists as Confluent compares them (equal as lists, else as sets).
fn compare_enums(context: &mut Context, a: &[Value], b: &[Value]) {
    use DifferenceType::*;
    if a == b {
        return;
    }
    let contains_all = |all: &[Value], some: &[Value]| some.iter().all(|v| all.contains(v));
    let kind = if contains_all(b, a) {
        EnumArrayExtended
    } else if contains_all(a, b) {
        EnumArrayNarrowed
    } else {
        EnumArrayChanged
    };
    context.add_at("enum", kind);
}

/// A maximum matching of a bipartite graph (`left` and `right` vertices, `edges` between
/// them), as the indexes of the chosen edges, ordered by left vertex. Augmenting paths are
/// found breadth first, so the search needs no recursion.
fn maximum_matching(left: usize, right: usize, edges: &[(usize, usize)]) -> Vec<usize> {
    let mut adjacency: Vec<Vec<(usize, usize)>> = vec![Vec::new(); left];
    for (edge, &(from, to)) in edges.iter().enumerate() {
        adjacency[from].push((to, edge));
    }
    // For each right vertex, the left vertex and edge it is matched by.
    let mut matched_right: Vec<Option<(usize, usize)>> = vec![None; right];
    for start in 0..left {
        // Breadth-first search over alternating paths from `start`.
        let mut previous: Vec<Option<(usize, usize)>> = vec![None; right];
        let mut visited = vec![false; right];
        let mut queue = std::collections::VecDeque::from([start]);
        let mut free_end = None;
        'search: while let Some(vertex) = queue.pop_front() {
            for &(to, edge) in &adjacency[vertex] {
                if visited[to] {
                    continue;
                }
                visited[to] = true;
                previous[to] = Some((vertex, edge));
                match matched_right[to] {
                    None => {
                        free_end = Some(to);
                        break 'search;
                    }
                    Some((next, _)) => queue.push_back(next),
                }
            }
        }
        // Flip the path: each right vertex on it takes the edge that reached it.
        let mut cursor = free_end;
        while let Some(to) = cursor {
            let Some((from, edge)) = previous[to] else {
                break;
            };
            let displaced = matched_right.iter().position(
                |matched| matches!(matched, Some((left_vertex, _)) if *left_vertex == from),
            );
            matched_right[to] = Some((from, edge));
            cursor = displaced.filter(|&other| other != to);
        }
    }
    let mut matching: Vec<(usize, usize)> = matched_right.into_iter().flatten().collect();
    matching.sort_unstable();
    matching.into_iter().map(|(_, edge)| edge).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_schema::tests::parse;
    use crate::schema::ParsedSchema;

    #[test]
    fn compatible_differences_are_recorded_but_not_reported() {
        let cases = [
            (
                r#"{"type":"integer"}"#,
                r#"{"type":"number"}"#,
                "TYPE_EXTENDED #/",
            ),
            (r#"{"title":"a"}"#, r#"{"title":"b"}"#, "TITLE_CHANGED #/"),
            (
                r#"{"type":"string","maxLength":3}"#,
                r#"{"type":"string"}"#,
                "MAX_LENGTH_REMOVED #/maxLength",
            ),
            (
                r#"{"type":"string"}"#,
                r#"{"oneOf":[{"type":"string"},{"type":"null"}]}"#,
                "SUM_TYPE_EXTENDED #/",
            ),
        ];
        for (old, new, recorded) in cases {
            let (old, new) = (parse(old), parse(new));
            let (differences, limit_exceeded) = new.differences_from(&old);
            let names: Vec<String> = differences
                .iter()
                .map(|difference| format!("{} #/{}", difference.kind.name(), difference.path))
                .collect();
            assert_eq!(names, [recorded]);
            assert!(!limit_exceeded);
            assert!(new.backward_incompatibilities(&old).is_empty());
        }
    }

    #[test]
    fn recursive_schemas_are_compared_without_looping() {
        let tree = |leaf_type: &str| {
            format!(
                r##"{{"definitions":{{"node":{{"type":"object","properties":{{
                    "value":{{"type":"{leaf_type}"}},
                    "children":{{"type":"array","items":{{"$ref":"#/definitions/node"}}}}}}}}}},
                    "$ref":"#/definitions/node"}}"##
            )
        };
        let (integers, numbers) = (parse(&tree("integer")), parse(&tree("number")));
        assert!(integers.backward_incompatibilities(&integers).is_empty());
        assert!(numbers.backward_incompatibilities(&integers).is_empty());
        assert_eq!(
            integers.backward_incompatibilities(&numbers),
            [
                "{errorType:\"TYPE_NARROWED\", description:\"A type at path '#/properties/value' \
                 is different between the new schema and the old schema'}"
            ]
        );
        let itself = parse(r##"{"$ref":"#"}"##);
        assert!(itself.backward_incompatibilities(&itself).is_empty());
    }

    #[test]
    fn a_comparison_stops_at_its_bounds_and_reports_itself_incompatible() {
        // Every branch of a wide `oneOf` is compared with every other one.
        let branches: Vec<String> = (0..400)
            .map(|index| format!(r#"{{"type":"string","maxLength":{index}}}"#))
            .collect();
        let wide = parse(&format!(r#"{{"oneOf":[{}]}}"#, branches.join(",")));
        let messages = wide.backward_incompatibilities(&wide);
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].contains("COMPARISON_LIMIT_EXCEEDED"),
            "{messages:?}"
        );

        // A chain of `$ref`s nests comparisons deeper than the schema is nested.
        let definitions: Vec<String> = (0..150)
            .map(|index| {
                format!(
                    r##""d{index}":{{"properties":{{"next":{{"$ref":"#/definitions/d{}"}}}}}}"##,
                    index + 1
                )
            })
            .collect();
        let chain = parse(&format!(
            r##"{{"definitions":{{{},"d150":{{}}}},"$ref":"#/definitions/d0"}}"##,
            definitions.join(",")
        ));
        let messages = chain.backward_incompatibilities(&chain);
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].contains("COMPARISON_LIMIT_EXCEEDED"),
            "{messages:?}"
        );
    }

    #[test]
    fn maximum_matching_is_maximum() {
        // (left vertices, right vertices, edges, matching size)
        type Graph = (usize, usize, &'static [(usize, usize)], usize);
        let cases: [Graph; 5] = [
            (0, 0, &[], 0),
            (2, 2, &[(0, 0), (1, 1)], 2),
            // Greedy would match 0-0 and strand 1; an augmenting path fixes it.
            (2, 2, &[(0, 0), (0, 1), (1, 0)], 2),
            (3, 3, &[(0, 0), (1, 0), (2, 0)], 1),
            (3, 3, &[(0, 0), (0, 1), (1, 0), (1, 2), (2, 1)], 3),
        ];
        for (left, right, edges, size) in cases {
            let matching = maximum_matching(left, right, edges);
            assert_eq!(matching.len(), size, "{edges:?}");
            let mut lefts: Vec<usize> = matching.iter().map(|&edge| edges[edge].0).collect();
            let mut rights: Vec<usize> = matching.iter().map(|&edge| edges[edge].1).collect();
            lefts.dedup();
            rights.sort_unstable();
            rights.dedup();
            assert_eq!((lefts.len(), rights.len()), (size, size), "{edges:?}");
        }
    }
}
