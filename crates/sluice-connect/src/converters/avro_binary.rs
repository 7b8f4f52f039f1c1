//! Avro's binary encoding of one datum against a schema: what Avro's
//! `GenericDatumWriter` and `GenericDatumReader` do for Confluent's serializers.
//!
//! Values are [`AvroValue`]s, Avro's generic data: a record's values by field position, a
//! union branch chosen as `GenericData.resolveUnion` chooses it (by the value's kind or,
//! for records, enums and fixed, by its schema's full name), numbers widened or narrowed
//! as Java's `Number` accessors do. Decoding answers unions as [`AvroValue::Union`] with
//! the branch read, so a caller knows which member it was.
//!
//! Limits: reading never trusts the bytes. A length or count larger than what remains is
//! refused before anything is allocated (items that take no bytes, such as nulls, are
//! bounded by [`ZERO_WIDTH_ITEMS_MAX`] per collection), varints are at most 10 bytes, and
//! schemas that refer to themselves nest at most [`DEPTH_MAX`] levels.
//!
//! Cost: one pass, one allocation per string, bytes value and collection.

use super::avro_schema::{AvroKind, AvroNode, AvroSchema};

/// How deeply a datum may nest (only recursive schemas can reach it).
pub(crate) const DEPTH_MAX: usize = 256;

/// Items of a collection whose items take no bytes (nulls, empty records): the count in
/// the input is then all there is, so it is bounded outright.
pub(crate) const ZERO_WIDTH_ITEMS_MAX: usize = 65_536;

/// Avro's generic datum.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AvroValue {
    Null,
    Boolean(bool),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    Bytes(Vec<u8>),
    String(String),
    Array(Vec<AvroValue>),
    Map(Vec<(String, AvroValue)>),
    Record(AvroRecord),
    Enum {
        schema_name: String,
        symbol: String,
    },
    Fixed {
        schema_name: String,
        bytes: Vec<u8>,
    },
    /// A union's value as read: the branch and the value.
    Union(usize, Box<AvroValue>),
}

/// A record: the full name of its schema and its values by field position.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AvroRecord {
    pub(crate) schema_name: String,
    pub(crate) values: Vec<AvroValue>,
}

impl AvroValue {
    /// The value a union holds, or the value itself.
    pub(crate) fn unwrap_union(&self) -> &AvroValue {
        match self {
            AvroValue::Union(_, value) => value.unwrap_union(),
            other => other,
        }
    }

    /// `GenericData.getSchemaName`: how a union finds the branch for this value.
    fn union_name(&self) -> String {
        match self {
            AvroValue::Null => "null".into(),
            AvroValue::Boolean(_) => "boolean".into(),
            AvroValue::Int(_) => "int".into(),
            AvroValue::Long(_) => "long".into(),
            AvroValue::Float(_) => "float".into(),
            AvroValue::Double(_) => "double".into(),
            AvroValue::Bytes(_) => "bytes".into(),
            AvroValue::String(_) => "string".into(),
            AvroValue::Array(_) => "array".into(),
            AvroValue::Map(_) => "map".into(),
            AvroValue::Record(r) => r.schema_name.clone(),
            AvroValue::Enum { schema_name, .. } | AvroValue::Fixed { schema_name, .. } => {
                schema_name.clone()
            }
            AvroValue::Union(_, value) => value.union_name(),
        }
    }

    fn as_f64(&self) -> Option<f64> {
        Some(match self {
            AvroValue::Int(v) => f64::from(*v),
            AvroValue::Long(v) => *v as f64,
            AvroValue::Float(v) => f64::from(*v),
            AvroValue::Double(v) => *v,
            _ => return None,
        })
    }

    /// `Number.longValue()`.
    fn as_i64(&self) -> Option<i64> {
        Some(match self {
            AvroValue::Int(v) => i64::from(*v),
            AvroValue::Long(v) => *v,
            AvroValue::Float(v) => *v as i64,
            AvroValue::Double(v) => *v as i64,
            _ => return None,
        })
    }
}

/// Encodes `value` as `schema` (from its root) onto `out`.
pub(crate) fn encode(
    schema: &AvroSchema,
    value: &AvroValue,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    Encoder { schema }.value(&schema.root, value, out, 0)
}

struct Encoder<'a> {
    schema: &'a AvroSchema,
}

fn mismatch(expected: &str, value: &AvroValue) -> String {
    format!("Not a {expected}: {value:?}")
}

impl Encoder<'_> {
    fn value(
        &self,
        node: &AvroNode,
        value: &AvroValue,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), String> {
        if depth > DEPTH_MAX {
            return Err(format!("datum nests deeper than {DEPTH_MAX} levels"));
        }
        let node = self.schema.resolve(node).map_err(|e| e.0)?;
        if let AvroKind::Union(branches) = &node.kind {
            let (index, inner) = match value {
                AvroValue::Union(index, inner) if *index < branches.len() => (*index, &**inner),
                other => {
                    let name = other.union_name();
                    let index = branches
                        .iter()
                        .position(|b| self.branch_name(b) == name)
                        .ok_or_else(|| {
                            format!(
                                "Not in union {}: {other:?}",
                                AvroSchema::from_root(node.clone())
                                    .to_json()
                                    .unwrap_or_default()
                            )
                        })?;
                    (index, other)
                }
            };
            write_long(index as i64, out);
            return self.value(&branches[index], inner, out, depth + 1);
        }
        let value = value.unwrap_union();
        match &node.kind {
            AvroKind::Null => {}
            AvroKind::Boolean => match value {
                AvroValue::Boolean(b) => out.push(u8::from(*b)),
                other => return Err(mismatch("boolean", other)),
            },
            AvroKind::Int => {
                let v = value.as_i64().ok_or_else(|| mismatch("int", value))?;
                write_long(i64::from(v as i32), out);
            }
            AvroKind::Long => {
                write_long(value.as_i64().ok_or_else(|| mismatch("long", value))?, out)
            }
            AvroKind::Float => {
                let v = value.as_f64().ok_or_else(|| mismatch("float", value))?;
                let v = match value {
                    AvroValue::Float(f) => *f,
                    _ => v as f32,
                };
                out.extend_from_slice(&v.to_le_bytes());
            }
            AvroKind::Double => {
                let v = value.as_f64().ok_or_else(|| mismatch("double", value))?;
                out.extend_from_slice(&v.to_le_bytes());
            }
            AvroKind::Bytes => match value {
                AvroValue::Bytes(bytes) | AvroValue::Fixed { bytes, .. } => write_bytes(bytes, out),
                other => return Err(mismatch("bytes", other)),
            },
            AvroKind::String => match value {
                AvroValue::String(text) => write_bytes(text.as_bytes(), out),
                AvroValue::Enum { symbol, .. } => write_bytes(symbol.as_bytes(), out),
                other => return Err(mismatch("string", other)),
            },
            AvroKind::Enum(e) => match value {
                AvroValue::Enum { symbol, .. } => {
                    let index = e.symbols.iter().position(|s| s == symbol).ok_or_else(|| {
                        format!("Not an enum: {symbol} for schema: {}", e.name.full())
                    })?;
                    write_long(index as i64, out);
                }
                other => return Err(format!("Not an enum: {other:?}")),
            },
            AvroKind::Fixed(f) => match value {
                AvroValue::Fixed { bytes, .. } | AvroValue::Bytes(bytes)
                    if bytes.len() == f.size =>
                {
                    out.extend_from_slice(bytes);
                }
                other => return Err(mismatch(&format!("fixed of {} bytes", f.size), other)),
            },
            AvroKind::Array(items) => match value {
                AvroValue::Array(elements) => {
                    if !elements.is_empty() {
                        write_long(elements.len() as i64, out);
                        for element in elements {
                            self.value(items, element, out, depth + 1)?;
                        }
                    }
                    out.push(0);
                }
                other => return Err(mismatch("array", other)),
            },
            AvroKind::Map(values) => match value {
                AvroValue::Map(entries) => {
                    if !entries.is_empty() {
                        write_long(entries.len() as i64, out);
                        for (key, entry) in entries {
                            write_bytes(key.as_bytes(), out);
                            self.value(values, entry, out, depth + 1)?;
                        }
                    }
                    out.push(0);
                }
                other => return Err(mismatch("map", other)),
            },
            AvroKind::Record(record) => match value {
                AvroValue::Record(datum) => {
                    // By position, as GenericDatumWriter reads a record's fields.
                    for (position, field) in record.fields.iter().enumerate() {
                        let Some(field_value) = datum.values.get(position) else {
                            return Err(format!(
                                "Index {position} out of bounds for length {}",
                                datum.values.len()
                            ));
                        };
                        if matches!(field_value, AvroValue::Null)
                            && !self.accepts_null(&field.schema)
                        {
                            return Err(format!(
                                "null value for (non-nullable) {} at {}.{}",
                                field.schema.type_name(),
                                record.name.name,
                                field.name
                            ));
                        }
                        self.value(&field.schema, field_value, out, depth + 1)?;
                    }
                }
                other => return Err(mismatch("record", other)),
            },
            AvroKind::Union(_) | AvroKind::Reference(_) => {
                unreachable!("unions are written above and references are resolved")
            }
        }
        Ok(())
    }

    fn accepts_null(&self, node: &AvroNode) -> bool {
        match self.schema.resolve(node).map(|n| &n.kind) {
            Ok(AvroKind::Null) => true,
            Ok(AvroKind::Union(branches)) => branches.iter().any(|b| self.accepts_null(b)),
            _ => false,
        }
    }

    /// `Schema.getFullName()` of a union branch (a type's name for unnamed types).
    fn branch_name(&self, branch: &AvroNode) -> String {
        branch
            .full_name()
            .unwrap_or_else(|| branch.type_name().to_string())
    }
}

/// Avro's `long`: zig-zag, then a base-128 varint.
pub(crate) fn write_long(value: i64, out: &mut Vec<u8>) {
    let mut n = ((value << 1) ^ (value >> 63)) as u64;
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn write_bytes(bytes: &[u8], out: &mut Vec<u8>) {
    write_long(bytes.len() as i64, out);
    out.extend_from_slice(bytes);
}

/// Decodes one datum written as `schema`; answers it and the bytes after it.
pub(crate) fn decode<'b>(
    schema: &AvroSchema,
    bytes: &'b [u8],
) -> Result<(AvroValue, &'b [u8]), String> {
    let mut decoder = Decoder {
        schema,
        bytes,
        at: 0,
    };
    let value = decoder.value(&schema.root, 0)?;
    Ok((value, &bytes[decoder.at..]))
}

struct Decoder<'a, 'b> {
    schema: &'a AvroSchema,
    bytes: &'b [u8],
    at: usize,
}

impl Decoder<'_, '_> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if n > self.remaining() {
            return Err(format!(
                "EOFException: {n} bytes needed, {} available",
                self.remaining()
            ));
        }
        let slice = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(slice)
    }

    fn long(&mut self) -> Result<i64, String> {
        let mut n: u64 = 0;
        for shift in (0..70).step_by(7) {
            let byte = *self.take(1)?.first().expect("one byte");
            if shift == 63 && byte > 1 {
                return Err("Invalid long encoding".into());
            }
            n |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(((n >> 1) as i64) ^ -((n & 1) as i64));
            }
        }
        Err("Invalid long encoding".into())
    }

    fn int(&mut self) -> Result<i32, String> {
        let value = self.long()?;
        i32::try_from(value).map_err(|_| "Invalid int encoding".to_string())
    }

    fn length(&mut self) -> Result<usize, String> {
        let length = self.long()?;
        let length = usize::try_from(length)
            .map_err(|_| format!("Malformed data. Length is negative: {length}"))?;
        if length > self.remaining() {
            return Err(format!(
                "EOFException: {length} bytes needed, {} available",
                self.remaining()
            ));
        }
        Ok(length)
    }

    /// A block's item count (a negative count is followed by the block's size in bytes,
    /// which is skipped over).
    fn block_count(&mut self, zero_width: bool, so_far: usize) -> Result<usize, String> {
        let count = self.long()?;
        let count = if count < 0 {
            self.long()?;
            count.unsigned_abs()
        } else {
            count as u64
        };
        let total = so_far as u64 + count;
        // Items that take bytes cannot outnumber the bytes left; items that take none
        // are bounded outright.
        let too_many = if zero_width {
            total > ZERO_WIDTH_ITEMS_MAX as u64
        } else {
            count > self.remaining() as u64
        };
        if too_many {
            return Err(format!(
                "Malformed data: a collection of {total} items is larger than its input allows"
            ));
        }
        Ok(count as usize)
    }

    fn zero_width(&self, node: &AvroNode, depth: usize) -> bool {
        if depth > DEPTH_MAX {
            return false;
        }
        match self.schema.resolve(node).map(|n| &n.kind) {
            Ok(AvroKind::Null) => true,
            Ok(AvroKind::Fixed(f)) => f.size == 0,
            Ok(AvroKind::Record(r)) => r
                .fields
                .iter()
                .all(|f| self.zero_width(&f.schema, depth + 1)),
            _ => false,
        }
    }

    fn value(&mut self, node: &AvroNode, depth: usize) -> Result<AvroValue, String> {
        if depth > DEPTH_MAX {
            return Err(format!("datum nests deeper than {DEPTH_MAX} levels"));
        }
        let node = self.schema.resolve(node).map_err(|e| e.0)?;
        Ok(match &node.kind {
            AvroKind::Null => AvroValue::Null,
            // Avro reads any byte but 1 as false.
            AvroKind::Boolean => AvroValue::Boolean(self.take(1)?[0] == 1),
            AvroKind::Int => AvroValue::Int(self.int()?),
            AvroKind::Long => AvroValue::Long(self.long()?),
            AvroKind::Float => AvroValue::Float(f32::from_le_bytes(
                self.take(4)?.try_into().expect("4 bytes"),
            )),
            AvroKind::Double => AvroValue::Double(f64::from_le_bytes(
                self.take(8)?.try_into().expect("8 bytes"),
            )),
            AvroKind::Bytes => {
                let length = self.length()?;
                AvroValue::Bytes(self.take(length)?.to_vec())
            }
            AvroKind::String => {
                let length = self.length()?;
                AvroValue::String(String::from_utf8_lossy(self.take(length)?).into_owned())
            }
            AvroKind::Enum(e) => {
                let index = self.int()?;
                let symbol = usize::try_from(index)
                    .ok()
                    .and_then(|i| e.symbols.get(i))
                    .ok_or_else(|| {
                        format!("Index {index} out of bounds for length {}", e.symbols.len())
                    })?;
                AvroValue::Enum {
                    schema_name: e.name.full(),
                    symbol: symbol.clone(),
                }
            }
            AvroKind::Fixed(f) => AvroValue::Fixed {
                schema_name: f.name.full(),
                bytes: self.take(f.size)?.to_vec(),
            },
            AvroKind::Union(branches) => {
                let index = self.long()?;
                let branch = usize::try_from(index)
                    .ok()
                    .and_then(|i| branches.get(i))
                    .ok_or_else(|| {
                        format!("Index {index} out of bounds for length {}", branches.len())
                    })?;
                AvroValue::Union(index as usize, Box::new(self.value(branch, depth + 1)?))
            }
            AvroKind::Array(items) => {
                let zero_width = self.zero_width(items, depth);
                let mut elements = Vec::new();
                loop {
                    let count = self.block_count(zero_width, elements.len())?;
                    if count == 0 {
                        break;
                    }
                    for _ in 0..count {
                        elements.push(self.value(items, depth + 1)?);
                    }
                }
                AvroValue::Array(elements)
            }
            AvroKind::Map(values) => {
                let mut entries = Vec::new();
                loop {
                    // Every entry has at least its key's length byte.
                    let count = self.block_count(false, entries.len())?;
                    if count == 0 {
                        break;
                    }
                    for _ in 0..count {
                        let length = self.length()?;
                        let key = String::from_utf8_lossy(self.take(length)?).into_owned();
                        entries.push((key, self.value(values, depth + 1)?));
                    }
                }
                AvroValue::Map(entries)
            }
            AvroKind::Record(record) => {
                let values = record
                    .fields
                    .iter()
                    .map(|field| self.value(&field.schema, depth + 1))
                    .collect::<Result<_, _>>()?;
                AvroValue::Record(AvroRecord {
                    schema_name: record.name.full(),
                    values,
                })
            }
            AvroKind::Reference(_) => unreachable!("references are resolved"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(schema: &str, value: AvroValue, expected: &[u8]) {
        let schema = AvroSchema::parse(schema).unwrap();
        let mut out = Vec::new();
        encode(&schema, &value, &mut out).unwrap();
        assert_eq!(out, expected);
        // And the apache-avro crate reads the same bytes as the same datum.
        let theirs = apache_avro::Schema::parse_str(&schema.to_json().unwrap()).unwrap();
        apache_avro::reader::datum::GenericDatumReader::builder(&theirs)
            .build()
            .unwrap()
            .read_value(&mut &out[..])
            .unwrap();
        let (read, rest) = decode(&schema, &out).unwrap();
        assert!(rest.is_empty());
        assert_eq!(strip_unions(read), strip_unions(value));
    }

    fn strip_unions(value: AvroValue) -> AvroValue {
        match value {
            AvroValue::Union(_, v) => strip_unions(*v),
            AvroValue::Array(v) => AvroValue::Array(v.into_iter().map(strip_unions).collect()),
            AvroValue::Map(v) => {
                AvroValue::Map(v.into_iter().map(|(k, v)| (k, strip_unions(v))).collect())
            }
            AvroValue::Record(r) => AvroValue::Record(AvroRecord {
                schema_name: r.schema_name,
                values: r.values.into_iter().map(strip_unions).collect(),
            }),
            other => other,
        }
    }

    #[test]
    fn values_encode_as_avro_specifies() {
        round_trip(r#""long""#, AvroValue::Long(-3), &[5]);
        round_trip(r#""int""#, AvroValue::Int(64), &[0x80, 1]);
        round_trip(
            r#""string""#,
            AvroValue::String("foo".into()),
            &[6, b'f', b'o', b'o'],
        );
        round_trip(r#""double""#, AvroValue::Double(1.0), &1.0f64.to_le_bytes());
        round_trip(r#"["null","int"]"#, AvroValue::Int(1), &[2, 2]);
        round_trip(r#"["null","int"]"#, AvroValue::Null, &[0]);
        round_trip(
            r#"{"type":"array","items":"int"}"#,
            AvroValue::Array(vec![AvroValue::Int(1), AvroValue::Int(2)]),
            &[4, 2, 4, 0],
        );
        round_trip(
            r#"{"type":"map","values":"boolean"}"#,
            AvroValue::Map(vec![]),
            &[0],
        );
        round_trip(
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":{"type":"enum","name":"E","symbols":["X","Y"]}},{"name":"c","type":{"type":"fixed","name":"F","size":2}}]}"#,
            AvroValue::Record(AvroRecord {
                schema_name: "R".into(),
                values: vec![
                    AvroValue::Int(-1),
                    AvroValue::Enum {
                        schema_name: "E".into(),
                        symbol: "Y".into(),
                    },
                    AvroValue::Fixed {
                        schema_name: "F".into(),
                        bytes: vec![7, 8],
                    },
                ],
            }),
            &[1, 2, 7, 8],
        );
    }

    #[test]
    fn unions_pick_the_branch_by_name() {
        let schema = AvroSchema::parse(
            r#"["null",{"type":"record","name":"A","fields":[]},{"type":"record","name":"n.B","fields":[]},"string"]"#,
        )
        .unwrap();
        let record = |name: &str| {
            AvroValue::Record(AvroRecord {
                schema_name: name.into(),
                values: vec![],
            })
        };
        let mut out = Vec::new();
        encode(&schema, &record("n.B"), &mut out).unwrap();
        assert_eq!(out, [4]);
        out.clear();
        encode(&schema, &AvroValue::String("x".into()), &mut out).unwrap();
        assert_eq!(out, [6, 2, b'x']);
        assert!(
            encode(&schema, &AvroValue::Int(1), &mut Vec::new())
                .unwrap_err()
                .starts_with("Not in union ")
        );
        assert_eq!(
            decode(&schema, &[4]).unwrap().0,
            AvroValue::Union(2, Box::new(record("n.B")))
        );
    }

    #[test]
    fn bad_input_is_refused_before_allocating() {
        let strings = AvroSchema::parse(r#""string""#).unwrap();
        assert!(decode(&strings, &[0x80, 0x80, 0x80, 0x80, 0x10]).is_err());
        assert!(decode(&strings, &[1]).is_err());
        let longs = AvroSchema::parse(r#""long""#).unwrap();
        assert!(decode(&longs, &[0xff; 11]).is_err());
        let ints = AvroSchema::parse(r#""int""#).unwrap();
        assert_eq!(
            decode(&ints, &[0xfe, 0xff, 0xff, 0xff, 0x1f]).unwrap_err(),
            "Invalid int encoding"
        );
        let nulls = AvroSchema::parse(r#"{"type":"array","items":"null"}"#).unwrap();
        let mut huge = Vec::new();
        write_long(1 << 40, &mut huge);
        assert!(decode(&nulls, &huge).is_err());
        let few = [6, 0];
        assert_eq!(
            decode(&nulls, &few).unwrap().0,
            AvroValue::Array(vec![AvroValue::Null; 3])
        );
        let recursive = AvroSchema::parse(
            r#"{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}"#,
        )
        .unwrap();
        let deep = vec![2u8; 10_000];
        assert!(decode(&recursive, &deep).is_err());
    }
}
