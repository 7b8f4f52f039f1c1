//! The data a notifier template sees, with Burrow's Go names and Go's types: the static
//! [`Type`]s the load-time check walks, and the runtime [`Value`]s that borrow the
//! [`GroupStatus`] being rendered.
//!
//! The world is closed: a template only ever sees Burrow's notifier data (`.Cluster`,
//! `.Group`, `.ID`, `.Start`, `.Extras`, `.Result`) and what the helper functions return,
//! so every type is a variant here rather than a reflection of arbitrary Rust values.
//! `Type::Any` is the one escape hatch (`nil`, `and`/`or` of mixed types); checks on it
//! wait for the render.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::rc::Rc;

use super::TemplateData;
use super::time::GoTime;
use crate::types::{ConsumerOffset, GroupStatus, PartitionStatus, Status};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Type {
    /// Not known until the render.
    Any,
    Bool,
    /// Go's `int`, `int32` and `int64` alike.
    Int,
    Uint,
    Float32,
    Float64,
    String,
    /// `protocol.StatusConstant`: an int that prints as its name.
    Status,
    /// `time.Time`.
    Time,
    /// The struct Burrow passes to `Execute`.
    Root,
    /// `protocol.ConsumerGroupStatus`.
    Group,
    /// `*protocol.PartitionStatus`.
    Partition,
    /// `[]*protocol.PartitionStatus`.
    Partitions,
    /// `*protocol.ConsumerOffset`.
    Offset,
    /// `*protocol.Lag`.
    Lag,
    /// `map[string]string`: `.Extras`.
    StringMap,
    /// `[]string`.
    StringList,
    /// `map[string][]string`: what `topicsbystatus` returns.
    StringListMap,
    /// `map[string]int`: what `partitioncounts` returns.
    IntMap,
}

/// A field: its Go name and type.
type FieldType = (&'static str, Type);

const ROOT_FIELDS: &[FieldType] = &[
    ("Cluster", Type::String),
    ("Group", Type::String),
    ("ID", Type::String),
    ("Start", Type::Time),
    ("Extras", Type::StringMap),
    ("Result", Type::Group),
];
const GROUP_FIELDS: &[FieldType] = &[
    ("Cluster", Type::String),
    ("Group", Type::String),
    ("Status", Type::Status),
    ("Complete", Type::Float32),
    ("Partitions", Type::Partitions),
    ("TotalPartitions", Type::Int),
    ("Maxlag", Type::Partition),
    ("TotalLag", Type::Uint),
];
const PARTITION_FIELDS: &[FieldType] = &[
    ("Topic", Type::String),
    ("Partition", Type::Int),
    ("Owner", Type::String),
    ("ClientID", Type::String),
    ("Status", Type::Status),
    ("Start", Type::Offset),
    ("End", Type::Offset),
    ("CurrentLag", Type::Uint),
    ("Complete", Type::Float32),
];
const OFFSET_FIELDS: &[FieldType] = &[
    ("Offset", Type::Int),
    ("Order", Type::Int),
    ("Timestamp", Type::Int),
    ("ObservedTimestamp", Type::Int),
    ("Lag", Type::Lag),
];
const LAG_FIELDS: &[FieldType] = &[("Value", Type::Uint)];

/// A method: Go name, parameter types, result type.
pub(super) type MethodType = (&'static str, &'static [Type], Type);

const STATUS_METHODS: &[MethodType] = &[("String", &[], Type::String)];
const TIME_METHODS: &[MethodType] = &[
    ("Format", &[Type::String], Type::String),
    ("String", &[], Type::String),
    ("Unix", &[], Type::Int),
    ("UnixMilli", &[], Type::Int),
    ("UnixNano", &[], Type::Int),
    ("UTC", &[], Type::Time),
    ("Local", &[], Type::Time),
    ("IsZero", &[], Type::Bool),
    ("Year", &[], Type::Int),
    ("YearDay", &[], Type::Int),
    ("Day", &[], Type::Int),
    ("Hour", &[], Type::Int),
    ("Minute", &[], Type::Int),
    ("Second", &[], Type::Int),
    ("Nanosecond", &[], Type::Int),
];

impl Type {
    /// Go's name for the type, as error messages print it.
    pub(super) fn go_name(self) -> &'static str {
        match self {
            Type::Any => "interface {}",
            Type::Bool => "bool",
            Type::Int => "int",
            Type::Uint => "uint64",
            Type::Float32 => "float32",
            Type::Float64 => "float64",
            Type::String => "string",
            Type::Status => "protocol.StatusConstant",
            Type::Time => "time.Time",
            Type::Root => "notifier data",
            Type::Group => "protocol.ConsumerGroupStatus",
            Type::Partition => "*protocol.PartitionStatus",
            Type::Partitions => "[]*protocol.PartitionStatus",
            Type::Offset => "*protocol.ConsumerOffset",
            Type::Lag => "*protocol.Lag",
            Type::StringMap => "map[string]string",
            Type::StringList => "[]string",
            Type::StringListMap => "map[string][]string",
            Type::IntMap => "map[string]int",
        }
    }

    pub(super) fn struct_fields(self) -> Option<&'static [FieldType]> {
        match self {
            Type::Root => Some(ROOT_FIELDS),
            Type::Group => Some(GROUP_FIELDS),
            Type::Partition => Some(PARTITION_FIELDS),
            Type::Offset => Some(OFFSET_FIELDS),
            Type::Lag => Some(LAG_FIELDS),
            _ => None,
        }
    }

    pub(super) fn methods(self) -> &'static [MethodType] {
        match self {
            Type::Status => STATUS_METHODS,
            Type::Time => TIME_METHODS,
            _ => &[],
        }
    }

    /// A map's element type (every key reads as a field of it: `.Extras.api_key`).
    pub(super) fn map_element(self) -> Option<Type> {
        match self {
            Type::StringMap => Some(Type::String),
            Type::StringListMap => Some(Type::StringList),
            Type::IntMap => Some(Type::Int),
            _ => None,
        }
    }

    /// What `range` and `index` yield: (key or index, element).
    pub(super) fn elements(self) -> Option<(Type, Type)> {
        match self {
            Type::Partitions => Some((Type::Int, Type::Partition)),
            Type::StringList => Some((Type::Int, Type::String)),
            Type::Any => Some((Type::Any, Type::Any)),
            other => other.map_element().map(|element| (Type::String, element)),
        }
    }

    /// The type of `.name` on a value of this type, or why there is none.
    pub(super) fn field(self, name: &str) -> Result<Type, String> {
        if self == Type::Any {
            return Ok(Type::Any);
        }
        if let Some(element) = self.map_element() {
            return Ok(element);
        }
        if let Some(fields) = self.struct_fields()
            && let Some((_, field_type)) = fields.iter().find(|(field, _)| *field == name)
        {
            return Ok(*field_type);
        }
        Err(unknown_field(self, name))
    }

    pub(super) fn method(self, name: &str) -> Option<&'static MethodType> {
        self.methods().iter().find(|(method, _, _)| *method == name)
    }

    pub(super) fn is_integer(self) -> bool {
        matches!(self, Type::Int | Type::Uint | Type::Status)
    }
}

/// Go's message for a missing field, with what the type does have and, for a near miss
/// such as Burrow's own `.Id` for `.ID`, the likely meant name.
fn unknown_field(receiver: Type, name: &str) -> String {
    let Some(fields) = receiver.struct_fields() else {
        return format!("can't evaluate field {name} in type {}", receiver.go_name());
    };
    let known: Vec<&str> = fields
        .iter()
        .map(|(field, _)| *field)
        .chain(receiver.methods().iter().map(|(method, _, _)| *method))
        .collect();
    let hint = known
        .iter()
        .find(|field| field.eq_ignore_ascii_case(name))
        .map(|field| format!("; did you mean {field}?"))
        .unwrap_or_default();
    format!(
        "can't evaluate field {name} in type {} (it has {}){hint}",
        receiver.go_name(),
        known.join(", ")
    )
}

/// A value during a render. Borrowed parts point into the [`TemplateData`]; what helper
/// functions build is reference-counted so `range` and variables copy cheaply.
#[derive(Clone, Debug)]
pub(super) enum Value<'a> {
    /// Go's invalid value: a map key that is not there. Prints `<no value>`.
    Missing,
    Nil,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float32(f32),
    Float64(f64),
    String(Cow<'a, str>),
    Status(Status),
    Time(GoTime),
    Root(&'a TemplateData<'a>),
    Group(&'a GroupStatus),
    Partition(Option<&'a PartitionStatus>),
    Partitions(&'a [PartitionStatus]),
    Offset(Option<&'a ConsumerOffset>),
    Lag(Option<u64>),
    StringMap(&'a BTreeMap<String, String>),
    StringList(Rc<[String]>),
    StringListMap(Rc<BTreeMap<String, Rc<[String]>>>),
    IntMap(Rc<BTreeMap<String, i64>>),
}

impl<'a> Value<'a> {
    pub(super) fn type_of(&self) -> Type {
        match self {
            Value::Missing | Value::Nil => Type::Any,
            Value::Bool(_) => Type::Bool,
            Value::Int(_) => Type::Int,
            Value::Uint(_) => Type::Uint,
            Value::Float32(_) => Type::Float32,
            Value::Float64(_) => Type::Float64,
            Value::String(_) => Type::String,
            Value::Status(_) => Type::Status,
            Value::Time(_) => Type::Time,
            Value::Root(_) => Type::Root,
            Value::Group(_) => Type::Group,
            Value::Partition(_) => Type::Partition,
            Value::Partitions(_) => Type::Partitions,
            Value::Offset(_) => Type::Offset,
            Value::Lag(_) => Type::Lag,
            Value::StringMap(_) => Type::StringMap,
            Value::StringList(_) => Type::StringList,
            Value::StringListMap(_) => Type::StringListMap,
            Value::IntMap(_) => Type::IntMap,
        }
    }

    /// Go's type name for `%!v(type=value)` and error messages.
    pub(super) fn go_type_name(&self) -> &'static str {
        match self {
            Value::Missing => "<no value>",
            Value::Nil => "<nil>",
            other => other.type_of().go_name(),
        }
    }

    pub(super) fn is_nil_pointer(&self) -> bool {
        matches!(
            self,
            Value::Partition(None) | Value::Offset(None) | Value::Lag(None)
        )
    }

    /// The fields of a struct or of what a non-nil pointer points to, in Go's order.
    pub(super) fn struct_fields(&self) -> Option<Vec<(&'static str, Value<'a>)>> {
        let string = |text: &'a str| Value::String(Cow::Borrowed(text));
        Some(match *self {
            Value::Root(data) => vec![
                ("Cluster", string(data.cluster)),
                ("Group", string(data.group)),
                ("ID", string(data.id)),
                ("Start", Value::Time(data.start_time())),
                ("Extras", Value::StringMap(data.extras)),
                ("Result", Value::Group(data.result)),
            ],
            Value::Group(group) => vec![
                ("Cluster", string(&group.cluster)),
                ("Group", string(&group.group)),
                ("Status", Value::Status(group.status)),
                ("Complete", Value::Float32(group.complete)),
                ("Partitions", Value::Partitions(&group.partitions)),
                (
                    "TotalPartitions",
                    Value::Int(i64::try_from(group.total_partitions).unwrap_or(i64::MAX)),
                ),
                ("Maxlag", Value::Partition(group.maxlag.as_ref())),
                ("TotalLag", Value::Uint(group.totallag)),
            ],
            Value::Partition(Some(partition)) => vec![
                ("Topic", string(&partition.topic)),
                ("Partition", Value::Int(i64::from(partition.partition))),
                ("Owner", string(&partition.owner)),
                ("ClientID", string(&partition.client_id)),
                ("Status", Value::Status(partition.status)),
                ("Start", Value::Offset(partition.start.as_ref())),
                ("End", Value::Offset(partition.end.as_ref())),
                ("CurrentLag", Value::Uint(partition.current_lag)),
                ("Complete", Value::Float32(partition.complete)),
            ],
            Value::Offset(Some(offset)) => vec![
                ("Offset", Value::Int(offset.offset)),
                ("Order", Value::Int(offset.order)),
                ("Timestamp", Value::Int(offset.timestamp)),
                ("ObservedTimestamp", Value::Int(offset.observed_at)),
                ("Lag", Value::Lag(offset.lag)),
            ],
            Value::Lag(Some(lag)) => vec![("Value", Value::Uint(lag))],
            _ => return None,
        })
    }

    /// `.name` on this value: a struct field (through a pointer) or a map key. A missing
    /// key is Go's invalid value, not an error.
    pub(super) fn field(&self, name: &str) -> Result<Value<'a>, String> {
        match self {
            Value::Missing => return Ok(Value::Missing),
            Value::StringMap(map) => {
                return Ok(map
                    .get(name)
                    .map_or(Value::Missing, |value| Value::String(Cow::Borrowed(value))));
            }
            Value::StringListMap(map) => {
                return Ok(map
                    .get(name)
                    .map_or(Value::Missing, |list| Value::StringList(list.clone())));
            }
            Value::IntMap(map) => {
                return Ok(map
                    .get(name)
                    .map_or(Value::Missing, |&count| Value::Int(count)));
            }
            Value::Nil => return Err(format!("nil pointer evaluating interface {{}}.{name}")),
            pointer if pointer.is_nil_pointer() => {
                return Err(format!(
                    "nil pointer evaluating {}.{name}",
                    pointer.go_type_name()
                ));
            }
            _ => {}
        }
        self.struct_fields()
            .and_then(|fields| fields.into_iter().find(|(field, _)| *field == name))
            .map(|(_, value)| value)
            .ok_or_else(|| unknown_field(self.type_of(), name))
    }

    /// Calls the method `name` if the value's type has one (`None` otherwise).
    pub(super) fn call_method(
        &self,
        name: &str,
        arguments: &[Value<'a>],
    ) -> Option<Result<Value<'a>, String>> {
        let (_, parameters, _) = self.type_of().method(name)?;
        if arguments.len() != parameters.len() {
            return Some(Err(format!(
                "wrong number of args for {name}: want {} got {}",
                parameters.len(),
                arguments.len()
            )));
        }
        Some(match (self, name) {
            (Value::Status(status), "String") => Ok(Value::String(Cow::Borrowed(status.as_str()))),
            (Value::Time(time), _) => time_method(*time, name, arguments),
            _ => Err(format!(
                "can't call method {name} on {}",
                self.go_type_name()
            )),
        })
    }

    /// Go's truth for `if`, `with`, `and`, `or`, `not`: false, 0, nil and empty things
    /// are false; structs are true.
    pub(super) fn truth(&self) -> bool {
        match self {
            Value::Missing | Value::Nil => false,
            Value::Bool(value) => *value,
            Value::Int(value) => *value != 0,
            Value::Uint(value) => *value != 0,
            Value::Float32(value) => *value != 0.0,
            Value::Float64(value) => *value != 0.0,
            Value::String(value) => !value.is_empty(),
            Value::Status(status) => status.code() != 0,
            Value::Time(_) | Value::Root(_) | Value::Group(_) => true,
            Value::Partition(pointer) => pointer.is_some(),
            Value::Offset(pointer) => pointer.is_some(),
            Value::Lag(pointer) => pointer.is_some(),
            Value::Partitions(list) => !list.is_empty(),
            Value::StringMap(map) => !map.is_empty(),
            Value::StringList(list) => !list.is_empty(),
            Value::StringListMap(map) => !map.is_empty(),
            Value::IntMap(map) => !map.is_empty(),
        }
    }

    /// The (key, element) pairs `range` walks, maps in key order as Go sorts them.
    /// `None` when the value cannot be ranged over.
    pub(super) fn elements(&self) -> Option<Vec<(Value<'a>, Value<'a>)>> {
        let index = |position: usize| Value::Int(i64::try_from(position).unwrap_or(i64::MAX));
        Some(match self {
            // Go: ranging over an invalid value (a missing key) runs no iteration.
            Value::Missing | Value::Nil => Vec::new(),
            Value::Partitions(list) => list
                .iter()
                .enumerate()
                .map(|(position, partition)| (index(position), Value::Partition(Some(partition))))
                .collect(),
            Value::StringList(list) => list
                .iter()
                .enumerate()
                .map(|(position, item)| (index(position), Value::String(Cow::Owned(item.clone()))))
                .collect(),
            Value::StringMap(map) => map
                .iter()
                .map(|(key, value)| {
                    (
                        Value::String(Cow::Borrowed(key.as_str())),
                        Value::String(Cow::Borrowed(value.as_str())),
                    )
                })
                .collect(),
            Value::StringListMap(map) => map
                .iter()
                .map(|(key, list)| {
                    (
                        Value::String(Cow::Owned(key.clone())),
                        Value::StringList(list.clone()),
                    )
                })
                .collect(),
            Value::IntMap(map) => map
                .iter()
                .map(|(key, count)| (Value::String(Cow::Owned(key.clone())), Value::Int(*count)))
                .collect(),
            // Go 1.22: range over an integer counts from 0.
            Value::Int(count) => (0..(*count).max(0))
                .map(|i| (Value::Int(i), Value::Int(i)))
                .collect(),
            _ => return None,
        })
    }

    /// The value as a Go `int` argument (`add`, `index`, ...). Lenient where Go is strict:
    /// a uint64 lag or a status is accepted too, as a template author would expect.
    pub(super) fn as_int(&self) -> Result<i64, String> {
        match self {
            Value::Int(value) => Ok(*value),
            Value::Uint(value) => {
                i64::try_from(*value).map_err(|_| format!("{value} overflows int"))
            }
            Value::Status(status) => Ok(status.code()),
            other => Err(format!(
                "wrong type for value; expected int; got {}",
                other.go_type_name()
            )),
        }
    }

    pub(super) fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(text) => Some(text),
            _ => None,
        }
    }
}

fn time_method<'a>(time: GoTime, name: &str, arguments: &[Value<'a>]) -> Result<Value<'a>, String> {
    Ok(match name {
        "Format" => {
            let layout = arguments
                .first()
                .and_then(Value::as_str)
                .ok_or_else(|| "wrong type for value; expected string".to_string())?;
            Value::String(Cow::Owned(time.format(layout)))
        }
        "String" => Value::String(Cow::Owned(time.go_string())),
        "Unix" => Value::Int(time.unix_seconds()),
        "UnixMilli" => Value::Int(time.unix_millis()),
        "UnixNano" => Value::Int(time.unix_nanos()),
        "UTC" | "Local" => Value::Time(time),
        "IsZero" => Value::Bool(time.is_zero()),
        "Year" => Value::Int(time.year()),
        "YearDay" => Value::Int(time.year_day()),
        "Day" => Value::Int(time.day()),
        "Hour" => Value::Int(time.hour()),
        "Minute" => Value::Int(time.minute()),
        "Second" => Value::Int(time.second()),
        "Nanosecond" => Value::Int(time.nanosecond()),
        other => return Err(format!("can't call method {other} on time.Time")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notifier::template::tests::fixture;

    /// The static field table and the runtime values agree, name for name and type for
    /// type, so a template that passes the load-time check does not fail a field lookup.
    #[test]
    fn static_fields_match_runtime_fields() {
        let (status, extras) = fixture();
        let data = TemplateData {
            cluster: "c",
            group: "g",
            id: "i",
            start: None,
            extras: &extras,
            result: &status,
        };
        let partition = &status.partitions[0];
        let samples = [
            Value::Root(&data),
            Value::Group(&status),
            Value::Partition(Some(partition)),
            Value::Offset(partition.start.as_ref()),
            Value::Lag(Some(3)),
        ];
        for sample in samples {
            let fields = sample.struct_fields().expect("a struct");
            let static_fields = sample.type_of().struct_fields().expect("a struct type");
            let runtime: Vec<(&str, Type)> = fields
                .iter()
                .map(|(name, value)| (*name, value.type_of()))
                .collect();
            assert_eq!(runtime, static_fields, "{}", sample.go_type_name());
        }
    }

    #[test]
    fn a_near_miss_names_the_field_meant() {
        let message = Type::Root.field("Id").expect_err("no such field");
        assert_eq!(
            message,
            "can't evaluate field Id in type notifier data \
             (it has Cluster, Group, ID, Start, Extras, Result); did you mean ID?"
        );
        assert_eq!(
            Type::Uint.field("X").expect_err("no fields"),
            "can't evaluate field X in type uint64"
        );
    }
}
