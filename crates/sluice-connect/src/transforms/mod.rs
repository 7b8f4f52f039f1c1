//! Single message transforms and predicates (`transforms=`, `predicates=`): Kafka
//! Connect's own (`org.apache.kafka.connect.transforms.*`, as of Kafka 4.1) and Debezium's
//! `ExtractNewRecordState`, configured with the same keys, class names and defaults and
//! failing with the same texts, so a connector config written for Kafka Connect runs
//! here unchanged.
//!
//! This is not a plugin loader: the classes are the ones listed in `PLUGINS`; a class
//! name Connect would have to load from a plugin path is "not found". As in Connect, a
//! class may also be named by its simple name where that is unambiguous
//! (`RegexRouter`, `TopicNameMatches`; not `Value`).
//!
//! A [`Chain`] is built from a connector's whole config: `transforms` lists aliases,
//! each configured under `transforms.<alias>.` (`type`, its options, and the implicit
//! `predicate` and `negate`); `predicates` lists the predicate aliases under
//! `predicates.<alias>.`. Building reports every error at once, per key, as Connect's
//! `config/validate` does; a built chain applies its stages in order, a stage whose
//! predicate does not hold (or holds, when negated) passing the record through, a
//! transform returning `None` dropping it.
//!
//! Cost: a transform moves the record through by value; one that rebuilds a struct
//! copies the field values it keeps (one allocation per string, bytes or nested value)
//! and looks its updated schema up in a 16-entry cache keyed by the input schema, so a
//! stream with one schema builds that schema once.

mod cast;
mod config;
mod decimal;
mod extract_field;
mod extract_new_record_state;
mod field_path;
mod filter;
mod flatten;
mod headers;
mod hoist_field;
mod insert_field;
mod mask_field;
mod predicates;
mod regex_router;
mod replace_field;
mod set_schema_metadata;
mod simple_date_format;
mod support;
mod timestamp_converter;
mod timestamp_router;
mod value_to_key;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use crate::data::{DataError, Record};
use crate::{ConfigError, Props};

use config::{Options, parse_boolean, parse_list};
use support::java_list;

pub trait Transform: Send + Sync {
    /// None drops the record.
    fn apply(&self, record: Record) -> Result<Option<Record>, DataError>;
}

pub trait Predicate: Send + Sync {
    fn test(&self, record: &Record) -> bool;
}

type TransformFactory = fn(&mut Options) -> Result<Box<dyn Transform>, ConfigError>;
type PredicateFactory = fn(&mut Options) -> Result<Box<dyn Predicate>, ConfigError>;

enum Plugin {
    Transform(TransformFactory),
    Predicate(PredicateFactory),
    /// An abstract class (`InsertField`) and its concrete nested classes, which Connect
    /// suggests in its error.
    Abstract(&'static [&'static str]),
}

/// Every transform and predicate class, by the name Connect knows it by.
const PLUGINS: &[(&str, Plugin)] = &[
    (
        "org.apache.kafka.connect.transforms.Cast",
        Plugin::Abstract(&[
            "org.apache.kafka.connect.transforms.Cast$Key",
            "org.apache.kafka.connect.transforms.Cast$Value",
        ]),
    ),
    (
        "org.apache.kafka.connect.transforms.Cast$Key",
        Plugin::Transform(cast::key),
    ),
    (
        "org.apache.kafka.connect.transforms.Cast$Value",
        Plugin::Transform(cast::value),
    ),
    (
        "org.apache.kafka.connect.transforms.DropHeaders",
        Plugin::Transform(headers::drop_headers),
    ),
    (
        "org.apache.kafka.connect.transforms.ExtractField",
        Plugin::Abstract(&[
            "org.apache.kafka.connect.transforms.ExtractField$Key",
            "org.apache.kafka.connect.transforms.ExtractField$Value",
        ]),
    ),
    (
        "org.apache.kafka.connect.transforms.ExtractField$Key",
        Plugin::Transform(extract_field::key),
    ),
    (
        "org.apache.kafka.connect.transforms.ExtractField$Value",
        Plugin::Transform(extract_field::value),
    ),
    (
        "org.apache.kafka.connect.transforms.Filter",
        Plugin::Transform(filter::filter),
    ),
    (
        "org.apache.kafka.connect.transforms.Flatten",
        Plugin::Abstract(&[
            "org.apache.kafka.connect.transforms.Flatten$Key",
            "org.apache.kafka.connect.transforms.Flatten$Value",
        ]),
    ),
    (
        "org.apache.kafka.connect.transforms.Flatten$Key",
        Plugin::Transform(flatten::key),
    ),
    (
        "org.apache.kafka.connect.transforms.Flatten$Value",
        Plugin::Transform(flatten::value),
    ),
    (
        "org.apache.kafka.connect.transforms.HeaderFrom",
        Plugin::Abstract(&[
            "org.apache.kafka.connect.transforms.HeaderFrom$Key",
            "org.apache.kafka.connect.transforms.HeaderFrom$Value",
        ]),
    ),
    (
        "org.apache.kafka.connect.transforms.HeaderFrom$Key",
        Plugin::Transform(headers::header_from_key),
    ),
    (
        "org.apache.kafka.connect.transforms.HeaderFrom$Value",
        Plugin::Transform(headers::header_from_value),
    ),
    (
        "org.apache.kafka.connect.transforms.HoistField",
        Plugin::Abstract(&[
            "org.apache.kafka.connect.transforms.HoistField$Key",
            "org.apache.kafka.connect.transforms.HoistField$Value",
        ]),
    ),
    (
        "org.apache.kafka.connect.transforms.HoistField$Key",
        Plugin::Transform(hoist_field::key),
    ),
    (
        "org.apache.kafka.connect.transforms.HoistField$Value",
        Plugin::Transform(hoist_field::value),
    ),
    (
        "org.apache.kafka.connect.transforms.InsertField",
        Plugin::Abstract(&[
            "org.apache.kafka.connect.transforms.InsertField$Key",
            "org.apache.kafka.connect.transforms.InsertField$Value",
        ]),
    ),
    (
        "org.apache.kafka.connect.transforms.InsertField$Key",
        Plugin::Transform(insert_field::key),
    ),
    (
        "org.apache.kafka.connect.transforms.InsertField$Value",
        Plugin::Transform(insert_field::value),
    ),
    (
        "org.apache.kafka.connect.transforms.InsertHeader",
        Plugin::Transform(headers::insert_header),
    ),
    (
        "org.apache.kafka.connect.transforms.MaskField",
        Plugin::Abstract(&[
            "org.apache.kafka.connect.transforms.MaskField$Key",
            "org.apache.kafka.connect.transforms.MaskField$Value",
        ]),
    ),
    (
        "org.apache.kafka.connect.transforms.MaskField$Key",
        Plugin::Transform(mask_field::key),
    ),
    (
        "org.apache.kafka.connect.transforms.MaskField$Value",
        Plugin::Transform(mask_field::value),
    ),
    (
        "org.apache.kafka.connect.transforms.RegexRouter",
        Plugin::Transform(regex_router::regex_router),
    ),
    (
        "org.apache.kafka.connect.transforms.ReplaceField",
        Plugin::Abstract(&[
            "org.apache.kafka.connect.transforms.ReplaceField$Key",
            "org.apache.kafka.connect.transforms.ReplaceField$Value",
        ]),
    ),
    (
        "org.apache.kafka.connect.transforms.ReplaceField$Key",
        Plugin::Transform(replace_field::key),
    ),
    (
        "org.apache.kafka.connect.transforms.ReplaceField$Value",
        Plugin::Transform(replace_field::value),
    ),
    (
        "org.apache.kafka.connect.transforms.SetSchemaMetadata",
        Plugin::Abstract(&[
            "org.apache.kafka.connect.transforms.SetSchemaMetadata$Key",
            "org.apache.kafka.connect.transforms.SetSchemaMetadata$Value",
        ]),
    ),
    (
        "org.apache.kafka.connect.transforms.SetSchemaMetadata$Key",
        Plugin::Transform(set_schema_metadata::key),
    ),
    (
        "org.apache.kafka.connect.transforms.SetSchemaMetadata$Value",
        Plugin::Transform(set_schema_metadata::value),
    ),
    (
        "org.apache.kafka.connect.transforms.TimestampConverter",
        Plugin::Abstract(&[
            "org.apache.kafka.connect.transforms.TimestampConverter$Key",
            "org.apache.kafka.connect.transforms.TimestampConverter$Value",
        ]),
    ),
    (
        "org.apache.kafka.connect.transforms.TimestampConverter$Key",
        Plugin::Transform(timestamp_converter::key),
    ),
    (
        "org.apache.kafka.connect.transforms.TimestampConverter$Value",
        Plugin::Transform(timestamp_converter::value),
    ),
    (
        "org.apache.kafka.connect.transforms.TimestampRouter",
        Plugin::Transform(timestamp_router::timestamp_router),
    ),
    (
        "org.apache.kafka.connect.transforms.ValueToKey",
        Plugin::Transform(value_to_key::value_to_key),
    ),
    (
        "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
        Plugin::Predicate(predicates::has_header_key),
    ),
    (
        "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
        Plugin::Predicate(predicates::record_is_tombstone),
    ),
    (
        "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        Plugin::Predicate(predicates::topic_name_matches),
    ),
    (
        "io.debezium.transforms.ExtractNewRecordState",
        Plugin::Transform(extract_new_record_state::extract_new_record_state),
    ),
];

/// Java's `Class.getSimpleName` of a (possibly nested) class.
fn simple_name(class: &str) -> &str {
    class.rsplit(['.', '$']).next().unwrap_or(class)
}

/// A class by its name, or by its simple name where exactly one concrete plugin has it
/// (Connect's plugin aliases).
fn lookup(class: &str) -> Option<(&'static str, &'static Plugin)> {
    if let Some((name, plugin)) = PLUGINS.iter().find(|(name, _)| *name == class) {
        return Some((name, plugin));
    }
    let mut aliased = PLUGINS
        .iter()
        .filter(|(name, plugin)| {
            !matches!(plugin, Plugin::Abstract(_)) && simple_name(name) == class
        })
        .map(|(name, plugin)| (*name, plugin));
    match (aliased.next(), aliased.next()) {
        (Some(found), None) => Some(found),
        _ => None,
    }
}

/// What a `type` key names: Connect's texts for a class it cannot find, that is of the
/// other kind, or that is abstract.
fn plugin_for(key: &str, class: &str, kind: &str) -> Result<&'static Plugin, ConfigError> {
    let Some((name, plugin)) = lookup(class) else {
        return Err(ConfigError::invalid(
            key,
            class,
            &format!("Class {class} could not be found."),
        ));
    };
    let wrong_kind = || {
        ConfigError::new(
            key,
            format!("Class class {name} does not implement the {kind} interface"),
        )
    };
    match plugin {
        Plugin::Transform(_) if kind == "Transformation" => Ok(plugin),
        Plugin::Predicate(_) if kind == "Predicate" => Ok(plugin),
        Plugin::Abstract(children) if kind == "Transformation" => Err(ConfigError::new(
            key,
            format!(
                "This class is abstract and cannot be created. Did you mean {}?",
                children.join(", ")
            ),
        )),
        _ => Err(wrong_kind()),
    }
}

struct Stage {
    alias: String,
    /// The transform's class as configured (`transforms.<alias>.type`), for errors.
    class: String,
    transform: Box<dyn Transform>,
    predicate: Option<Arc<dyn Predicate>>,
    negate: bool,
}

/// A connector's transform chain from its whole config: `transforms` (comma list of
/// aliases), `transforms.<alias>.type`, `transforms.<alias>.<key>`,
/// `transforms.<alias>.predicate`, `transforms.<alias>.negate`, `predicates`,
/// `predicates.<alias>.type`, `predicates.<alias>.<key>`.
pub struct Chain {
    stages: Vec<Stage>,
}

impl fmt::Debug for Chain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.stages.iter().map(|s| &s.alias))
            .finish()
    }
}

/// The aliases of `transforms` or `predicates`, each once, in order; a repeated alias is
/// an error (Connect's alias validator).
fn aliases(config: &Props, key: &str, errors: &mut ConfigError) -> Vec<String> {
    let list = config.get(key).map(|v| parse_list(v)).unwrap_or_default();
    let unique: BTreeSet<&String> = list.iter().collect();
    if unique.len() < list.len() {
        errors.push(ConfigError::invalid(
            key,
            &java_list(&list),
            "Duplicate alias provided.",
        ));
    }
    let mut seen = BTreeSet::new();
    list.iter()
        .filter(|alias| seen.insert(alias.as_str()))
        .cloned()
        .collect()
}

impl Chain {
    /// The chain, or every configuration error found, each under its key.
    pub fn from_config(config: &Props) -> Result<Chain, ConfigError> {
        let mut errors = ConfigError::default();
        let transform_aliases = aliases(config, "transforms", &mut errors);
        let predicate_aliases = aliases(config, "predicates", &mut errors);

        let mut predicates: BTreeMap<&str, Arc<dyn Predicate>> = BTreeMap::new();
        for alias in &predicate_aliases {
            let prefix = format!("predicates.{alias}.");
            let type_key = format!("{prefix}type");
            let Some(class) = config.get(&type_key) else {
                errors.push(ConfigError::missing(&type_key));
                continue;
            };
            match plugin_for(&type_key, class.trim(), "Predicate") {
                Ok(Plugin::Predicate(factory)) => {
                    match factory(&mut Options::new(config, prefix)) {
                        Ok(predicate) => {
                            predicates.insert(alias, Arc::from(predicate));
                        }
                        Err(e) => errors.push(e),
                    }
                }
                Ok(_) => unreachable!("plugin_for answers a predicate for a predicate"),
                Err(e) => errors.push(e),
            }
        }

        let mut stages = Vec::with_capacity(transform_aliases.len());
        for alias in &transform_aliases {
            let prefix = format!("transforms.{alias}.");
            let type_key = format!("{prefix}type");
            let predicate_key = format!("{prefix}predicate");
            let negate_key = format!("{prefix}negate");

            let negate = match config.get(&negate_key) {
                None => false,
                Some(raw) => {
                    // Connect checks this in the validator of `type`, which does not run
                    // when `type` is missing.
                    if !config.contains_key(&predicate_key) && config.contains_key(&type_key) {
                        errors.push(ConfigError::new(
                            &type_key,
                            format!(
                                "Config '{negate_key}' was provided but there is no config '{predicate_key}' defining a predicate to be negated."
                            ),
                        ));
                    }
                    parse_boolean(raw).unwrap_or_else(|| {
                        errors.push(ConfigError::invalid(
                            &negate_key,
                            raw,
                            "Expected value to be either true or false",
                        ));
                        false
                    })
                }
            };
            let predicate = config.get(&predicate_key).and_then(|raw| {
                let predicate_alias = raw.trim();
                if !predicate_aliases.iter().any(|p| p == predicate_alias) {
                    // Connect defines `predicates.<p>.*` only for the aliases listed in
                    // `predicates`, so the lookup of the type fails.
                    errors.push(ConfigError::new(
                        &predicate_key,
                        format!("Unknown configuration 'predicates.{predicate_alias}.type'"),
                    ));
                }
                predicates.get(predicate_alias).cloned()
            });

            let Some(class) = config.get(&type_key) else {
                errors.push(ConfigError::missing(&type_key));
                continue;
            };
            match plugin_for(&type_key, class.trim(), "Transformation") {
                Ok(Plugin::Transform(factory)) => {
                    match factory(&mut Options::new(config, prefix)) {
                        Ok(transform) => stages.push(Stage {
                            alias: alias.clone(),
                            class: class.trim().to_string(),
                            transform,
                            predicate,
                            negate,
                        }),
                        Err(e) => errors.push(e),
                    }
                }
                Ok(_) => unreachable!("plugin_for answers a transform for a transform"),
                Err(e) => errors.push(e),
            }
        }

        if errors.is_empty() {
            Ok(Chain { stages })
        } else {
            Err(errors)
        }
    }

    /// The record through every stage in order; `None` once a transform drops it.
    pub fn apply(&self, record: Record) -> Result<Option<Record>, DataError> {
        self.apply_staged(record).map_err(|(_, e)| e)
    }

    /// As [`Chain::apply`], naming the class of the transform that failed.
    pub fn apply_staged(&self, record: Record) -> Result<Option<Record>, (&str, DataError)> {
        let mut record = record;
        for stage in &self.stages {
            if let Some(predicate) = &stage.predicate {
                // Applied when `negate XOR test` (Connect's `TransformationStage`).
                if predicate.test(&record) == stage.negate {
                    continue;
                }
            }
            match stage
                .transform
                .apply(record)
                .map_err(|e| (stage.class.as_str(), e))?
            {
                Some(next) => record = next,
                None => return Ok(None),
            }
        }
        Ok(Some(record))
    }

    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Builders the transforms' tests share.

    use crate::data::{Record, Schema, SchemaRef, Struct, Type, Value};
    use crate::{ConfigError, Props};

    use super::config::Options;

    /// Options without their prefix, as test tables write them.
    pub type Pairs<'a> = &'a [(&'a str, &'a str)];

    /// A transform or predicate built from options given without their
    /// `transforms.t.` prefix.
    pub fn configure<T>(
        config: &[(&str, &str)],
        build: impl FnOnce(&mut Options) -> Result<T, ConfigError>,
    ) -> Result<T, ConfigError> {
        let prefixed: Props = config
            .iter()
            .map(|(k, v)| (format!("transforms.t.{k}"), v.to_string()))
            .collect();
        build(&mut Options::new(&prefixed, "transforms.t.".into()))
    }

    /// The (key, message) errors of a configuration that must fail.
    pub fn option_errors<T>(
        config: &[(&str, &str)],
        build: impl FnOnce(&mut Options) -> Result<T, ConfigError>,
    ) -> Vec<(String, String)> {
        match configure(config, build) {
            Ok(_) => panic!("{config:?} must not configure"),
            Err(e) => e.errors,
        }
    }

    /// One error under `transforms.t.<option>`.
    pub fn one_error(option: &str, message: &str) -> Vec<(String, String)> {
        vec![(format!("transforms.t.{option}"), message.to_string())]
    }

    pub fn props(pairs: &[(&str, &str)]) -> Props {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    pub fn s(v: &str) -> Value {
        Value::String(v.into())
    }

    pub fn map(entries: &[(&str, Value)]) -> Value {
        Value::Map(entries.iter().map(|(k, v)| (s(k), v.clone())).collect())
    }

    pub fn schema(fields: &[(&str, Schema)]) -> SchemaRef {
        fields
            .iter()
            .fold(Schema::new(Type::Struct), |schema, (name, field)| {
                schema.field(*name, field.clone())
            })
            .into()
    }

    pub fn structure(schema: &SchemaRef, values: &[(&str, Value)]) -> Struct {
        let mut s = Struct::new(schema.clone());
        for (name, value) in values {
            s.put(name, value.clone())
                .expect("test struct fits its schema");
        }
        s
    }

    /// A sink record read at offset 0 of partition 0 (Kafka's tests' `new SinkRecord(topic,
    /// 0, ..., 0)`).
    pub fn sink(topic: &str, schema: Option<SchemaRef>, value: Value) -> Record {
        let mut record = Record::new(topic, schema, value);
        record.partition = Some(0);
        record.kafka_offset = Some(0);
        record
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    use crate::data::{Header, Value};

    fn errors(config: &[(&str, &str)]) -> Vec<(String, String)> {
        Chain::from_config(&props(config)).unwrap_err().errors
    }

    #[test]
    fn an_empty_config_is_an_empty_chain() {
        let chain = Chain::from_config(&props(&[])).unwrap();
        assert!(chain.is_empty());
        let record = Record::new("t", None, Value::Null);
        assert_eq!(chain.apply(record.clone()).unwrap(), Some(record));
        assert!(
            Chain::from_config(&props(&[("transforms", " ")]))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn chain_config_errors_carry_connect_texts_per_key() {
        let cases: &[(Pairs, Pairs)] = &[
            (
                &[("transforms", "a")],
                &[(
                    "transforms.a.type",
                    "Missing required configuration \"transforms.a.type\" which has no default value.",
                )],
            ),
            (
                &[
                    ("transforms", "a"),
                    ("transforms.a.type", "com.example.Nope"),
                ],
                &[(
                    "transforms.a.type",
                    "Invalid value com.example.Nope for configuration transforms.a.type: Class com.example.Nope could not be found.",
                )],
            ),
            (
                &[
                    ("transforms", "a"),
                    (
                        "transforms.a.type",
                        "org.apache.kafka.connect.transforms.InsertField",
                    ),
                ],
                &[(
                    "transforms.a.type",
                    "This class is abstract and cannot be created. Did you mean org.apache.kafka.connect.transforms.InsertField$Key, org.apache.kafka.connect.transforms.InsertField$Value?",
                )],
            ),
            (
                &[
                    ("transforms", "a"),
                    (
                        "transforms.a.type",
                        "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
                    ),
                ],
                &[(
                    "transforms.a.type",
                    "Class class org.apache.kafka.connect.transforms.predicates.RecordIsTombstone does not implement the Transformation interface",
                )],
            ),
            (
                &[
                    ("predicates", "p"),
                    (
                        "predicates.p.type",
                        "org.apache.kafka.connect.transforms.Filter",
                    ),
                ],
                &[(
                    "predicates.p.type",
                    "Class class org.apache.kafka.connect.transforms.Filter does not implement the Predicate interface",
                )],
            ),
            (
                &[
                    ("transforms", "a, a"),
                    (
                        "transforms.a.type",
                        "org.apache.kafka.connect.transforms.Filter",
                    ),
                ],
                &[(
                    "transforms",
                    "Invalid value [a, a] for configuration transforms: Duplicate alias provided.",
                )],
            ),
            (
                &[
                    ("transforms", "a"),
                    (
                        "transforms.a.type",
                        "org.apache.kafka.connect.transforms.Filter",
                    ),
                    ("transforms.a.negate", "true"),
                ],
                &[(
                    "transforms.a.type",
                    "Config 'transforms.a.negate' was provided but there is no config 'transforms.a.predicate' defining a predicate to be negated.",
                )],
            ),
            (
                &[("transforms", "a"), ("transforms.a.negate", "true")],
                &[(
                    "transforms.a.type",
                    "Missing required configuration \"transforms.a.type\" which has no default value.",
                )],
            ),
            (
                &[
                    ("transforms", "unwrap"),
                    (
                        "transforms.unwrap.type",
                        "io.debezium.transforms.ExtractNewRecordState",
                    ),
                    ("transforms.unwrap.delete.handling.mode", "keep"),
                ],
                &[(
                    "transforms.unwrap.delete.handling.mode",
                    "The 'delete.handling.mode' value 'keep' is invalid: Value must be one of drop, none, rewrite",
                )],
            ),
            (
                &[
                    ("transforms", "a"),
                    (
                        "transforms.a.type",
                        "org.apache.kafka.connect.transforms.Filter",
                    ),
                    ("transforms.a.predicate", "p"),
                    ("transforms.a.negate", "maybe"),
                    ("predicates", "p"),
                    (
                        "predicates.p.type",
                        "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
                    ),
                ],
                &[(
                    "transforms.a.negate",
                    "Invalid value maybe for configuration transforms.a.negate: Expected value to be either true or false",
                )],
            ),
            (
                &[
                    ("transforms", "a"),
                    (
                        "transforms.a.type",
                        "org.apache.kafka.connect.transforms.Filter",
                    ),
                    ("transforms.a.predicate", "p"),
                    (
                        "predicates.p.type",
                        "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
                    ),
                ],
                &[(
                    "transforms.a.predicate",
                    "Unknown configuration 'predicates.p.type'",
                )],
            ),
            (
                &[
                    ("transforms", "a"),
                    (
                        "transforms.a.type",
                        "org.apache.kafka.connect.transforms.ValueToKey",
                    ),
                    ("predicates", "p"),
                    (
                        "predicates.p.type",
                        "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
                    ),
                ],
                &[
                    (
                        "predicates.p.pattern",
                        "Missing required configuration \"predicates.p.pattern\" which has no default value.",
                    ),
                    (
                        "transforms.a.fields",
                        "Missing required configuration \"transforms.a.fields\" which has no default value.",
                    ),
                ],
            ),
        ];
        for (config, expected) in cases {
            let expected: Vec<(String, String)> = expected
                .iter()
                .map(|(k, m)| (k.to_string(), m.to_string()))
                .collect();
            assert_eq!(errors(config), expected, "{config:?}");
        }
    }

    #[test]
    fn classes_may_be_named_by_an_unambiguous_simple_name() {
        assert!(lookup("RegexRouter").is_some());
        assert!(lookup("TopicNameMatches").is_some());
        assert!(lookup("Value").is_none());
        assert!(lookup("InsertField").is_none());
    }

    fn filter_config(negate: Option<&str>) -> Props {
        let mut config = props(&[
            ("transforms", "dropTombstones"),
            (
                "transforms.dropTombstones.type",
                "org.apache.kafka.connect.transforms.Filter",
            ),
            ("transforms.dropTombstones.predicate", "isTombstone"),
            ("predicates", "isTombstone"),
            (
                "predicates.isTombstone.type",
                "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
            ),
        ]);
        if let Some(negate) = negate {
            config.insert("transforms.dropTombstones.negate".into(), negate.into());
        }
        config
    }

    #[test]
    fn a_predicate_decides_whether_its_transform_applies() {
        let tombstone = Record::new("t", None, Value::Null);
        let live = Record::new("t", None, s("v"));

        let chain = Chain::from_config(&filter_config(None)).unwrap();
        assert_eq!(chain.apply(tombstone.clone()).unwrap(), None);
        assert_eq!(chain.apply(live.clone()).unwrap(), Some(live.clone()));

        let negated = Chain::from_config(&filter_config(Some("true"))).unwrap();
        assert_eq!(
            negated.apply(tombstone.clone()).unwrap(),
            Some(tombstone.clone())
        );
        assert_eq!(negated.apply(live.clone()).unwrap(), None);

        let not_negated = Chain::from_config(&filter_config(Some("FALSE"))).unwrap();
        assert_eq!(not_negated.apply(tombstone).unwrap(), None);
    }

    #[test]
    fn stages_apply_in_order_and_share_predicates() {
        let config = props(&[
            ("transforms", "route, stamp, hoist"),
            ("transforms.route.type", "RegexRouter"),
            ("transforms.route.regex", "orders-(.*)"),
            ("transforms.route.replacement", "$1-orders"),
            ("transforms.route.predicate", "fromOrders"),
            (
                "transforms.stamp.type",
                "org.apache.kafka.connect.transforms.InsertHeader",
            ),
            ("transforms.stamp.header", "routed"),
            ("transforms.stamp.value.literal", "yes"),
            ("transforms.stamp.predicate", "fromOrders"),
            ("transforms.stamp.negate", "true"),
            (
                "transforms.hoist.type",
                "org.apache.kafka.connect.transforms.HoistField$Value",
            ),
            ("transforms.hoist.field", "line"),
            ("predicates", "fromOrders"),
            ("predicates.fromOrders.type", "TopicNameMatches"),
            ("predicates.fromOrders.pattern", "orders-.*"),
        ]);
        let chain = Chain::from_config(&config).unwrap();
        assert_eq!(format!("{chain:?}"), "[\"route\", \"stamp\", \"hoist\"]");

        // Stages see the record as the stages before left it: the topic is routed
        // first, so the negated predicate tests the new name (which does not match) and
        // the header is inserted.
        let out = chain
            .apply(Record::new("orders-eu", None, s("x")))
            .unwrap()
            .unwrap();
        assert_eq!(out.topic, "eu-orders");
        assert_eq!(
            out.headers,
            vec![Header {
                key: "routed".into(),
                value: Some("yes".into()),
            }]
        );
        assert_eq!(out.value, map(&[("line", s("x"))]));

        let out = chain
            .apply(Record::new("payments", None, s("y")))
            .unwrap()
            .unwrap();
        assert_eq!(out.topic, "payments");
        assert_eq!(out.headers.len(), 1);

        // Routed to a name the predicate still matches: the negated stage is skipped.
        let out = chain
            .apply(Record::new("orders-orders-a", None, s("z")))
            .unwrap()
            .unwrap();
        assert_eq!(out.topic, "orders-a-orders");
        assert!(out.headers.is_empty());
    }

    #[test]
    fn a_transform_error_stops_the_chain() {
        let config = props(&[
            ("transforms", "insert"),
            (
                "transforms.insert.type",
                "org.apache.kafka.connect.transforms.InsertField$Value",
            ),
            ("transforms.insert.topic.field", "topic"),
        ]);
        let chain = Chain::from_config(&config).unwrap();
        assert_eq!(
            chain.apply(Record::new("t", None, s("x"))).unwrap_err().0,
            "Only Map objects supported in absence of schema for [field insertion], found: java.lang.String"
        );
    }
}
