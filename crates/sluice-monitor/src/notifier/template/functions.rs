//! The functions a notifier template may call: Go's text/template builtins (`and`, `or`,
//! `not`, `len`, `index`, `slice`, `print`, `printf`, `println`, `html`, `js`,
//! `urlquery`, `eq`, `ne`, `lt`, `le`, `gt`, `ge`) and Burrow's helpers from its
//! `notifier/helpers.go` (`jsonencoder`, `topicsbystatus`, `partitioncounts`, `add`,
//! `minus`, `multiply`, `divide`, `maxlag`, `formattimestamp`).
//!
//! Each has a static check (arity and argument types, run when the template is loaded)
//! and a runtime call. Go checks both at execution; checking at load turns a template that
//! would fail on every alert into a configuration error at startup.
//!
//! Not here: `call` (a template never sees a function value).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::rc::Rc;

use super::format;
use super::time::GoTime;
use super::value::{Type, Value};
use crate::types::Status;

pub(super) type Check = fn(&[Type]) -> Result<Type, String>;
pub(super) type Call = for<'a> fn(Vec<Value<'a>>) -> Result<Value<'a>, String>;

pub(super) enum Evaluation {
    /// Every argument evaluated, then the call.
    Eager(Call),
    /// `and`/`or`: arguments evaluated left to right only until the answer is known.
    ShortCircuit { stop_when: bool },
}

pub(super) struct Function {
    pub check: Check,
    pub evaluation: Evaluation,
}

pub(super) fn lookup(name: &str) -> Option<Function> {
    let eager = |check: Check, call: Call| {
        Some(Function {
            check,
            evaluation: Evaluation::Eager(call),
        })
    };
    match name {
        "and" => Some(Function {
            check: check_and_or,
            evaluation: Evaluation::ShortCircuit { stop_when: false },
        }),
        "or" => Some(Function {
            check: check_and_or,
            evaluation: Evaluation::ShortCircuit { stop_when: true },
        }),
        "not" => eager(check_not, call_not),
        "len" => eager(check_len, call_len),
        "index" => eager(check_index, call_index),
        "slice" => eager(check_slice, call_slice),
        "print" => eager(check_any_to_string, |arguments| {
            Ok(owned(format::sprint(&arguments)))
        }),
        "println" => eager(check_any_to_string, |arguments| {
            Ok(owned(format::sprintln(&arguments)))
        }),
        "printf" => eager(check_printf, call_printf),
        "html" => eager(check_any_to_string, |arguments| {
            Ok(owned(format::html_escape(&escaper_input(&arguments))))
        }),
        "js" => eager(check_any_to_string, |arguments| {
            Ok(owned(format::js_escape(&escaper_input(&arguments))))
        }),
        "urlquery" => eager(check_any_to_string, |arguments| {
            Ok(owned(format::query_escape(&escaper_input(&arguments))))
        }),
        "eq" => eager(check_eq, |arguments| {
            compare_all(&arguments, Comparison::Equal)
        }),
        "ne" => eager(check_ordered, |arguments| {
            compare_all(&arguments, Comparison::NotEqual)
        }),
        "lt" => eager(check_ordered, |arguments| {
            compare_all(&arguments, Comparison::Less)
        }),
        "le" => eager(check_ordered, |arguments| {
            compare_all(&arguments, Comparison::LessOrEqual)
        }),
        "gt" => eager(check_ordered, |arguments| {
            compare_all(&arguments, Comparison::Greater)
        }),
        "ge" => eager(check_ordered, |arguments| {
            compare_all(&arguments, Comparison::GreaterOrEqual)
        }),
        // Burrow's helpers.
        "jsonencoder" => eager(check_jsonencoder, call_jsonencoder),
        "topicsbystatus" => eager(
            check_partitions_to(Type::StringListMap),
            call_topics_by_status,
        ),
        "partitioncounts" => eager(check_partitions_to(Type::IntMap), call_partition_counts),
        "add" => eager(check_arithmetic, |arguments| {
            arithmetic(&arguments, i64::wrapping_add)
        }),
        "minus" => eager(check_arithmetic, |arguments| {
            arithmetic(&arguments, i64::wrapping_sub)
        }),
        "multiply" => eager(check_arithmetic, |arguments| {
            arithmetic(&arguments, i64::wrapping_mul)
        }),
        "divide" => eager(check_arithmetic, call_divide),
        "maxlag" => eager(check_maxlag, call_maxlag),
        "formattimestamp" => eager(check_format_timestamp, call_format_timestamp),
        _ => None,
    }
}

fn owned<'a>(text: String) -> Value<'a> {
    Value::String(Cow::Owned(text))
}

fn arity(arguments: &[Type], want: usize) -> Result<(), String> {
    if arguments.len() == want {
        Ok(())
    } else {
        Err(format!(
            "wrong number of args: want {want} got {}",
            arguments.len()
        ))
    }
}

fn at_least(arguments: &[Type], want: usize) -> Result<(), String> {
    if arguments.len() >= want {
        Ok(())
    } else {
        Err(format!(
            "wrong number of args: want at least {want} got {}",
            arguments.len()
        ))
    }
}

fn expect(argument: Type, accepted: impl Fn(Type) -> bool, wanted: &str) -> Result<(), String> {
    if argument == Type::Any || accepted(argument) {
        Ok(())
    } else {
        Err(format!(
            "wrong type for value; expected {wanted}; got {}",
            argument.go_name()
        ))
    }
}

fn check_and_or(arguments: &[Type]) -> Result<Type, String> {
    at_least(arguments, 1)?;
    // Go returns one of the arguments; its type is known only when they all agree.
    let first = arguments[0];
    Ok(if arguments.iter().all(|&argument| argument == first) {
        first
    } else {
        Type::Any
    })
}

fn check_not(arguments: &[Type]) -> Result<Type, String> {
    arity(arguments, 1)?;
    Ok(Type::Bool)
}

fn call_not(arguments: Vec<Value<'_>>) -> Result<Value<'_>, String> {
    Ok(Value::Bool(!arguments.first().is_some_and(Value::truth)))
}

fn check_len(arguments: &[Type]) -> Result<Type, String> {
    arity(arguments, 1)?;
    expect(
        arguments[0],
        |argument| argument == Type::String || argument.elements().is_some(),
        "a string, slice or map",
    )
    .map_err(|_| format!("len of type {}", arguments[0].go_name()))?;
    Ok(Type::Int)
}

fn call_len(arguments: Vec<Value<'_>>) -> Result<Value<'_>, String> {
    let length = match arguments.first() {
        Some(Value::String(text)) => text.len(),
        Some(Value::Partitions(list)) => list.len(),
        Some(Value::StringList(list)) => list.len(),
        Some(Value::StringMap(map)) => map.len(),
        Some(Value::StringListMap(map)) => map.len(),
        Some(Value::IntMap(map)) => map.len(),
        Some(other) => return Err(format!("len of type {}", other.go_type_name())),
        None => return Err("len of nothing".to_string()),
    };
    Ok(Value::Int(i64::try_from(length).unwrap_or(i64::MAX)))
}

fn check_index(arguments: &[Type]) -> Result<Type, String> {
    at_least(arguments, 1)?;
    let mut item = arguments[0];
    for &key in &arguments[1..] {
        if item == Type::String {
            expect(key, Type::is_integer, "int")?;
            item = Type::Int;
            continue;
        }
        let Some((key_type, element)) = item.elements() else {
            return Err(format!("can't index item of type {}", item.go_name()));
        };
        if key_type == Type::String {
            expect(key, |key| key == Type::String, "string")?;
        } else {
            expect(key, Type::is_integer, "int")?;
        }
        item = element;
    }
    Ok(item)
}

fn call_index(arguments: Vec<Value<'_>>) -> Result<Value<'_>, String> {
    let mut arguments = arguments.into_iter();
    let mut item = arguments.next().ok_or("index of nothing")?;
    for key in arguments {
        item = match (&item, &key) {
            (Value::String(text), _) => {
                let position = index_in(key.as_int()?, text.len())?;
                Value::Int(i64::from(text.as_bytes()[position]))
            }
            (Value::Partitions(list), _) => {
                Value::Partition(Some(&list[index_in(key.as_int()?, list.len())?]))
            }
            (Value::StringList(list), _) => {
                let position = index_in(key.as_int()?, list.len())?;
                Value::String(Cow::Owned(list[position].clone()))
            }
            (Value::StringMap(map), Value::String(key)) => Value::String(Cow::Borrowed(
                map.get(key.as_ref()).map_or("", String::as_str),
            )),
            (Value::StringListMap(map), Value::String(key)) => Value::StringList(
                map.get(key.as_ref())
                    .cloned()
                    .unwrap_or_else(|| Rc::from(Vec::new())),
            ),
            (Value::IntMap(map), Value::String(key)) => {
                Value::Int(map.get(key.as_ref()).copied().unwrap_or(0))
            }
            (Value::StringMap(_) | Value::StringListMap(_) | Value::IntMap(_), other) => {
                return Err(format!(
                    "value has type {}; should be string",
                    other.go_type_name()
                ));
            }
            (Value::Missing | Value::Nil, _) => {
                return Err("index of untyped nil".to_string());
            }
            (other, _) => {
                return Err(format!("can't index item of type {}", other.go_type_name()));
            }
        };
    }
    Ok(item)
}

fn index_in(index: i64, length: usize) -> Result<usize, String> {
    usize::try_from(index)
        .ok()
        .filter(|&position| position < length)
        .ok_or_else(|| format!("index out of range: {index}"))
}

fn check_slice(arguments: &[Type]) -> Result<Type, String> {
    at_least(arguments, 1)?;
    if arguments.len() > 3 {
        return Err("too many slice indexes".to_string());
    }
    expect(
        arguments[0],
        |item| matches!(item, Type::String | Type::Partitions | Type::StringList),
        "a string or slice",
    )?;
    for &index in &arguments[1..] {
        expect(index, Type::is_integer, "int")?;
    }
    Ok(arguments[0])
}

fn call_slice(arguments: Vec<Value<'_>>) -> Result<Value<'_>, String> {
    let mut arguments = arguments.into_iter();
    let item = arguments.next().ok_or("slice of nothing")?;
    let length = match &item {
        Value::String(text) => text.len(),
        Value::Partitions(list) => list.len(),
        Value::StringList(list) => list.len(),
        other => return Err(format!("can't slice item of type {}", other.go_type_name())),
    };
    let bounds: Vec<i64> = arguments
        .map(|index| index.as_int())
        .collect::<Result<_, _>>()?;
    let low = bounds.first().copied().unwrap_or(0);
    let high = bounds.get(1).copied().unwrap_or(length as i64);
    let (Ok(low), Ok(high)) = (usize::try_from(low), usize::try_from(high)) else {
        return Err(format!("slice index out of range: {low}:{high}"));
    };
    if low > high || high > length {
        return Err(format!("slice index out of range: {low}:{high}"));
    }
    Ok(match item {
        Value::String(text) => {
            let slice = text
                .get(low..high)
                .ok_or_else(|| format!("slice {low}:{high} splits a character"))?;
            Value::String(Cow::Owned(slice.to_string()))
        }
        Value::Partitions(list) => Value::Partitions(&list[low..high]),
        Value::StringList(list) => Value::StringList(Rc::from(&list[low..high])),
        _ => unreachable!("the length match above returned for every other kind"),
    })
}

fn check_any_to_string(_arguments: &[Type]) -> Result<Type, String> {
    Ok(Type::String)
}

/// `html`, `js` and `urlquery` escape their one string argument, or the `Sprint` of all.
fn escaper_input(arguments: &[Value<'_>]) -> String {
    match arguments {
        [Value::String(text)] => text.to_string(),
        other => format::sprint(other),
    }
}

fn check_printf(arguments: &[Type]) -> Result<Type, String> {
    at_least(arguments, 1)?;
    expect(arguments[0], |format| format == Type::String, "string")?;
    Ok(Type::String)
}

fn call_printf(arguments: Vec<Value<'_>>) -> Result<Value<'_>, String> {
    let format = match arguments.first() {
        Some(Value::String(format)) => format.to_string(),
        Some(other) => {
            return Err(format!(
                "wrong type for value; expected string; got {}",
                other.go_type_name()
            ));
        }
        None => return Err("printf needs a format".to_string()),
    };
    Ok(owned(format::sprintf(&format, &arguments[1..])))
}

#[derive(Clone, Copy, PartialEq)]
enum Comparison {
    Equal,
    NotEqual,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
}

/// Go's basic kinds, the ones `eq` and `lt` compare.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Bool,
    Number,
    String,
}

fn kind(argument: Type) -> Option<Kind> {
    match argument {
        Type::Bool => Some(Kind::Bool),
        Type::Int | Type::Uint | Type::Status | Type::Float32 | Type::Float64 => Some(Kind::Number),
        Type::String => Some(Kind::String),
        _ => None,
    }
}

fn check_eq(arguments: &[Type]) -> Result<Type, String> {
    at_least(arguments, 2).map_err(|_| "missing argument for comparison".to_string())?;
    check_comparable(arguments, true)
}

fn check_ordered(arguments: &[Type]) -> Result<Type, String> {
    arity(arguments, 2)?;
    check_comparable(arguments, false)
}

/// Go compares basic kinds only (and, for `eq`, pointers with nil); comparing a number
/// with a string is an error there and here. Numbers of different widths compare by
/// value (Go refuses an int against a float; this does not).
fn check_comparable(arguments: &[Type], equality: bool) -> Result<Type, String> {
    let first = arguments[0];
    for &other in &arguments[1..] {
        if first == Type::Any || other == Type::Any {
            continue;
        }
        match (kind(first), kind(other)) {
            (Some(left), Some(right)) if left == right => {
                if !equality && left == Kind::Bool {
                    return Err("invalid type for comparison".to_string());
                }
            }
            (Some(_), Some(_)) => return Err("incompatible types for comparison".to_string()),
            _ if equality
                && first == other
                && matches!(first, Type::Partition | Type::Offset | Type::Lag) => {}
            _ => {
                return Err(format!(
                    "invalid type for comparison: {} and {}",
                    first.go_name(),
                    other.go_name()
                ));
            }
        }
    }
    Ok(Type::Bool)
}

enum Comparable<'v> {
    Bool(bool),
    Number(f64, i128),
    String(&'v str),
    Pointer(Option<usize>),
}

fn comparable<'v>(value: &'v Value<'_>) -> Result<Comparable<'v>, String> {
    Ok(match value {
        Value::Bool(flag) => Comparable::Bool(*flag),
        Value::Int(number) => Comparable::Number(*number as f64, i128::from(*number)),
        Value::Uint(number) => Comparable::Number(*number as f64, i128::from(*number)),
        Value::Status(status) => {
            Comparable::Number(status.code() as f64, i128::from(status.code()))
        }
        Value::Float32(number) => Comparable::Number(f64::from(*number), i128::MIN),
        Value::Float64(number) => Comparable::Number(*number, i128::MIN),
        Value::String(text) => Comparable::String(text),
        Value::Missing | Value::Nil => Comparable::Pointer(None),
        Value::Partition(pointer) => Comparable::Pointer(pointer.map(|p| p as *const _ as usize)),
        Value::Offset(pointer) => Comparable::Pointer(pointer.map(|p| p as *const _ as usize)),
        Value::Lag(lag) => Comparable::Pointer(lag.map(|lag| lag as usize)),
        other => {
            return Err(format!(
                "invalid type for comparison: {}",
                other.go_type_name()
            ));
        }
    })
}

fn compare_pair(
    left: &Value<'_>,
    right: &Value<'_>,
    comparison: Comparison,
) -> Result<bool, String> {
    use std::cmp::Ordering;
    let ordering = match (comparable(left)?, comparable(right)?) {
        (Comparable::Bool(left), Comparable::Bool(right)) => {
            if !matches!(comparison, Comparison::Equal | Comparison::NotEqual) {
                return Err("invalid type for comparison".to_string());
            }
            left.cmp(&right)
        }
        (Comparable::Number(left_float, left_int), Comparable::Number(right_float, right_int)) => {
            // Integers compare exactly, so a uint64 lag near 2^64 is not rounded.
            if left_int != i128::MIN && right_int != i128::MIN {
                left_int.cmp(&right_int)
            } else {
                left_float
                    .partial_cmp(&right_float)
                    .ok_or("NaN is not comparable")?
            }
        }
        (Comparable::String(left), Comparable::String(right)) => left.cmp(right),
        (Comparable::Pointer(left), Comparable::Pointer(right))
            if matches!(comparison, Comparison::Equal | Comparison::NotEqual) =>
        {
            if left == right {
                Ordering::Equal
            } else {
                Ordering::Less
            }
        }
        _ => return Err("incompatible types for comparison".to_string()),
    };
    Ok(match comparison {
        Comparison::Equal => ordering == Ordering::Equal,
        Comparison::NotEqual => ordering != Ordering::Equal,
        Comparison::Less => ordering == Ordering::Less,
        Comparison::LessOrEqual => ordering != Ordering::Greater,
        Comparison::Greater => ordering == Ordering::Greater,
        Comparison::GreaterOrEqual => ordering != Ordering::Less,
    })
}

/// `eq a b c` is true when a equals any of b, c; the others take exactly two.
fn compare_all<'a>(arguments: &[Value<'a>], comparison: Comparison) -> Result<Value<'a>, String> {
    let (first, rest) = arguments
        .split_first()
        .ok_or("missing argument for comparison")?;
    if rest.is_empty() {
        return Err("missing argument for comparison".to_string());
    }
    if comparison == Comparison::Equal {
        for other in rest {
            if compare_pair(first, other, comparison)? {
                return Ok(Value::Bool(true));
            }
        }
        return Ok(Value::Bool(false));
    }
    Ok(Value::Bool(compare_pair(first, &rest[0], comparison)?))
}

fn check_jsonencoder(arguments: &[Type]) -> Result<Type, String> {
    arity(arguments, 1)?;
    Ok(Type::String)
}

/// Burrow ignores `json.Marshal`'s error and returns the empty string; so does this.
fn call_jsonencoder(arguments: Vec<Value<'_>>) -> Result<Value<'_>, String> {
    let mut out = String::new();
    if let Some(value) = arguments.first()
        && format::json(&mut out, value).is_err()
    {
        out.clear();
    }
    Ok(owned(out))
}

fn check_partitions_to(result: Type) -> Check {
    match result {
        Type::StringListMap => |arguments| {
            arity(arguments, 1)?;
            expect(
                arguments[0],
                |argument| argument == Type::Partitions,
                "[]*protocol.PartitionStatus",
            )?;
            Ok(Type::StringListMap)
        },
        _ => |arguments| {
            arity(arguments, 1)?;
            expect(
                arguments[0],
                |argument| argument == Type::Partitions,
                "[]*protocol.PartitionStatus",
            )?;
            Ok(Type::IntMap)
        },
    }
}

fn partitions_argument<'a>(
    arguments: &[Value<'a>],
) -> Result<&'a [crate::types::PartitionStatus], String> {
    match arguments.first() {
        Some(Value::Partitions(list)) => Ok(list),
        Some(other) => Err(format!(
            "wrong type for value; expected []*protocol.PartitionStatus; got {}",
            other.go_type_name()
        )),
        None => Err("wrong number of args: want 1 got 0".to_string()),
    }
}

/// Burrow's `topicsbystatus`: status name to the topics with a partition in it. Go's map
/// order leaves each list's order to chance; here the topics are sorted.
fn call_topics_by_status(arguments: Vec<Value<'_>>) -> Result<Value<'_>, String> {
    let partitions = partitions_argument(&arguments)?;
    let mut topics: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for partition in partitions {
        let list = topics
            .entry(partition.status.as_str().to_string())
            .or_default();
        if !list.contains(&partition.topic) {
            list.push(partition.topic.clone());
        }
    }
    Ok(Value::StringListMap(Rc::new(
        topics
            .into_iter()
            .map(|(status, mut list)| {
                list.sort();
                (status, Rc::from(list))
            })
            .collect(),
    )))
}

/// Burrow's `partitioncounts`: partitions per problem status, keys `warn`, `stop`,
/// `stall`, `rewind` and `unknown` always present; OK partitions are not counted.
fn call_partition_counts(arguments: Vec<Value<'_>>) -> Result<Value<'_>, String> {
    let partitions = partitions_argument(&arguments)?;
    let mut counts: BTreeMap<String, i64> = ["warn", "stop", "stall", "rewind", "unknown"]
        .into_iter()
        .map(|key| (key.to_string(), 0))
        .collect();
    for partition in partitions {
        let key = match partition.status {
            Status::Ok => continue,
            Status::Warning => "warn",
            Status::Stop => "stop",
            Status::Stall => "stall",
            Status::Rewind => "rewind",
            Status::NotFound | Status::Error => "unknown",
        };
        *counts.entry(key.to_string()).or_default() += 1;
    }
    Ok(Value::IntMap(Rc::new(counts)))
}

fn check_arithmetic(arguments: &[Type]) -> Result<Type, String> {
    arity(arguments, 2)?;
    for &argument in arguments {
        expect(argument, Type::is_integer, "int")?;
    }
    Ok(Type::Int)
}

fn arithmetic<'a>(
    arguments: &[Value<'a>],
    operation: fn(i64, i64) -> i64,
) -> Result<Value<'a>, String> {
    let [left, right] = arguments else {
        return Err(format!(
            "wrong number of args: want 2 got {}",
            arguments.len()
        ));
    };
    Ok(Value::Int(operation(left.as_int()?, right.as_int()?)))
}

fn call_divide(arguments: Vec<Value<'_>>) -> Result<Value<'_>, String> {
    let [left, right] = arguments.as_slice() else {
        return Err(format!(
            "wrong number of args: want 2 got {}",
            arguments.len()
        ));
    };
    let divisor = right.as_int()?;
    if divisor == 0 {
        return Err("runtime error: integer divide by zero".to_string());
    }
    Ok(Value::Int(left.as_int()?.wrapping_div(divisor)))
}

fn check_maxlag(arguments: &[Type]) -> Result<Type, String> {
    arity(arguments, 1)?;
    expect(
        arguments[0],
        |argument| argument == Type::Partition,
        "*protocol.PartitionStatus",
    )?;
    Ok(Type::Uint)
}

/// Burrow's `maxlag`: a partition's current lag, 0 for nil.
fn call_maxlag(arguments: Vec<Value<'_>>) -> Result<Value<'_>, String> {
    match arguments.first() {
        Some(Value::Partition(partition)) => Ok(Value::Uint(
            partition.map_or(0, |partition| partition.current_lag),
        )),
        Some(Value::Nil | Value::Missing) => Ok(Value::Uint(0)),
        Some(other) => Err(format!(
            "wrong type for value; expected *protocol.PartitionStatus; got {}",
            other.go_type_name()
        )),
        None => Err("wrong number of args: want 1 got 0".to_string()),
    }
}

fn check_format_timestamp(arguments: &[Type]) -> Result<Type, String> {
    arity(arguments, 2)?;
    expect(arguments[0], Type::is_integer, "int64")?;
    expect(arguments[1], |layout| layout == Type::String, "string")?;
    Ok(Type::String)
}

/// Burrow's `formattimestamp`: milliseconds since the epoch in a Go layout (UTC here).
fn call_format_timestamp(arguments: Vec<Value<'_>>) -> Result<Value<'_>, String> {
    let [millis, layout] = arguments.as_slice() else {
        return Err(format!(
            "wrong number of args: want 2 got {}",
            arguments.len()
        ));
    };
    let layout = layout.as_str().ok_or_else(|| {
        format!(
            "wrong type for value; expected string; got {}",
            layout.go_type_name()
        )
    })?;
    Ok(owned(
        GoTime::from_unix_millis(millis.as_int()?).format(layout),
    ))
}
