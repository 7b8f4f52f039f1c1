//! PostgreSQL's `pgoutput` logical decoding messages, protocol version 1 (the
//! "Logical Replication Message Formats" chapter of PostgreSQL's documentation): what a
//! walsender sends inside each `XLogData` of a `START_REPLICATION ... LOGICAL` stream.
//! `pgwire-replication` turns Begin, Commit and Message into events of their own and
//! hands the rest over raw; this decodes the rest.
//!
//! Everything here comes from the network: every length and count is checked against
//! the bytes present before anything is allocated, and a malformed message is an error
//! naming what was wrong, never a panic.

use std::fmt;

/// A decoded pgoutput message (the ones `pgwire-replication` forwards raw).
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// `R`: a table's description, sent before its first change in a session and again
    /// after its definition changed.
    Relation(Relation),
    /// `Y`: a user type's name, sent before a relation that uses it.
    Type {
        oid: u32,
        namespace: String,
        name: String,
    },
    /// `O`: the origin of a transaction replayed from elsewhere.
    Origin {
        lsn: u64,
        name: String,
    },
    Insert {
        relation: u32,
        new: Tuple,
    },
    /// `old` is the key (`K`, REPLICA IDENTITY DEFAULT or INDEX, sent only when a key
    /// column changed) or the whole old row (`O`, REPLICA IDENTITY FULL).
    Update {
        relation: u32,
        old: Option<(OldKind, Tuple)>,
        new: Tuple,
    },
    Delete {
        relation: u32,
        old: (OldKind, Tuple),
    },
    Truncate {
        options: u8,
        relations: Vec<u32>,
    },
    /// A message kind this decoder does not use (streamed transactions need protocol
    /// version 2, which is never asked for).
    Other(u8),
}

/// Which old image an update or delete carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OldKind {
    /// `K`: the replica identity's columns only (the others are null).
    Key,
    /// `O`: every column (REPLICA IDENTITY FULL).
    Full,
}

/// `R`: a table as the walsender describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Relation {
    pub oid: u32,
    pub namespace: String,
    pub name: String,
    /// `d` default, `n` nothing, `f` full, `i` index.
    pub replica_identity: u8,
    pub columns: Vec<RelationColumn>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RelationColumn {
    /// Part of the replica identity (flag bit 1).
    pub key: bool,
    pub name: String,
    pub type_oid: u32,
    pub type_modifier: i32,
}

/// A row: one datum per column, in the relation's column order.
#[derive(Debug, Clone, PartialEq)]
pub struct Tuple(pub Vec<Datum>);

#[derive(Debug, Clone, PartialEq)]
pub enum Datum {
    Null,
    /// `u`: a TOASTed value that did not change and was not sent.
    UnchangedToast,
    /// `t`: the type's text output.
    Text(String),
    /// `b`: the type's binary send output (only with `binary 'true'`).
    Binary(Vec<u8>),
}

/// A malformed message: what was being read and why it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed pgoutput message: {}", self.0)
    }
}

impl std::error::Error for DecodeError {}

struct Reader<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn fail<T>(&self, why: &str) -> Result<T, DecodeError> {
        Err(DecodeError(format!("{}: {why}", self.what)))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.bytes.len() < n {
            return self.fail(&format!("needs {n} more bytes, {} left", self.bytes.len()));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn i16(&mut self) -> Result<i16, DecodeError> {
        Ok(i16::from_be_bytes(
            self.take(2)?.try_into().expect("2 bytes"),
        ))
    }

    fn i32(&mut self) -> Result<i32, DecodeError> {
        Ok(i32::from_be_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_be_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    /// A NUL-terminated string (UTF-8: the replication connection's client encoding).
    fn cstring(&mut self) -> Result<String, DecodeError> {
        let Some(end) = self.bytes.iter().position(|&b| b == 0) else {
            return self.fail("a string without its terminating NUL");
        };
        let text = self.take(end)?;
        self.take(1)?;
        match std::str::from_utf8(text) {
            Ok(s) => Ok(s.to_string()),
            Err(_) => self.fail("a string that is not UTF-8"),
        }
    }

    /// A count that each element needs at least `min_bytes` for: never more than the
    /// bytes present can hold, so a forged count allocates nothing.
    fn count(&mut self, n: i64, min_bytes: usize) -> Result<usize, DecodeError> {
        let Ok(n) = usize::try_from(n) else {
            return self.fail(&format!("a negative count {n}"));
        };
        if n.saturating_mul(min_bytes) > self.bytes.len() {
            return self.fail(&format!(
                "a count of {n} that {} bytes cannot hold",
                self.bytes.len()
            ));
        }
        Ok(n)
    }

    fn tuple(&mut self) -> Result<Tuple, DecodeError> {
        let n = i64::from(self.i16()?);
        let n = self.count(n, 1)?;
        let mut datums = Vec::with_capacity(n);
        for _ in 0..n {
            datums.push(match self.u8()? {
                b'n' => Datum::Null,
                b'u' => Datum::UnchangedToast,
                kind @ (b't' | b'b') => {
                    let len = i64::from(self.i32()?);
                    let len = self.count(len, 1)?;
                    let bytes = self.take(len)?;
                    if kind == b'b' {
                        Datum::Binary(bytes.to_vec())
                    } else {
                        match std::str::from_utf8(bytes) {
                            Ok(s) => Datum::Text(s.to_string()),
                            Err(_) => return self.fail("a text datum that is not UTF-8"),
                        }
                    }
                }
                other => return self.fail(&format!("an unknown datum kind 0x{other:02x}")),
            });
        }
        Ok(Tuple(datums))
    }

    fn old(&mut self, kind: u8) -> Result<(OldKind, Tuple), DecodeError> {
        let kind = match kind {
            b'K' => OldKind::Key,
            b'O' => OldKind::Full,
            other => return self.fail(&format!("an old tuple marked 0x{other:02x}")),
        };
        Ok((kind, self.tuple()?))
    }

    fn expect_new(&mut self) -> Result<Tuple, DecodeError> {
        match self.u8()? {
            b'N' => self.tuple(),
            other => self.fail(&format!("a new tuple marked 0x{other:02x}")),
        }
    }
}

/// Decodes one pgoutput message (the `XLogData` payload, tag byte first).
pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
    let Some((&tag, body)) = bytes.split_first() else {
        return Err(DecodeError("an empty message".into()));
    };
    let what = match tag {
        b'R' => "Relation",
        b'Y' => "Type",
        b'O' => "Origin",
        b'I' => "Insert",
        b'U' => "Update",
        b'D' => "Delete",
        b'T' => "Truncate",
        other => return Ok(Message::Other(other)),
    };
    let mut r = Reader { bytes: body, what };
    Ok(match tag {
        b'R' => {
            let oid = r.u32()?;
            let namespace = r.cstring()?;
            let name = r.cstring()?;
            let replica_identity = r.u8()?;
            let n = i64::from(r.i16()?);
            // flags, an empty name's NUL, type oid, modifier.
            let n = r.count(n, 10)?;
            let mut columns = Vec::with_capacity(n);
            for _ in 0..n {
                let flags = r.u8()?;
                columns.push(RelationColumn {
                    key: flags & 1 == 1,
                    name: r.cstring()?,
                    type_oid: r.u32()?,
                    type_modifier: r.i32()?,
                });
            }
            Message::Relation(Relation {
                oid,
                namespace,
                name,
                replica_identity,
                columns,
            })
        }
        b'Y' => Message::Type {
            oid: r.u32()?,
            namespace: r.cstring()?,
            name: r.cstring()?,
        },
        b'O' => Message::Origin {
            lsn: r.u64()?,
            name: r.cstring()?,
        },
        b'I' => {
            let relation = r.u32()?;
            Message::Insert {
                relation,
                new: r.expect_new()?,
            }
        }
        b'U' => {
            let relation = r.u32()?;
            let (old, new) = match r.u8()? {
                b'N' => (None, r.tuple()?),
                kind => {
                    let old = r.old(kind)?;
                    (Some(old), r.expect_new()?)
                }
            };
            Message::Update { relation, old, new }
        }
        b'D' => {
            let relation = r.u32()?;
            let kind = r.u8()?;
            Message::Delete {
                relation,
                old: r.old(kind)?,
            }
        }
        b'T' => {
            let n = i64::from(r.i32()?);
            let options = r.u8()?;
            let n = r.count(n, 4)?;
            let mut relations = Vec::with_capacity(n);
            for _ in 0..n {
                relations.push(r.u32()?);
            }
            Message::Truncate { options, relations }
        }
        _ => unreachable!("tags are matched above"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relation_bytes() -> Vec<u8> {
        let mut b = vec![b'R'];
        b.extend(16_385u32.to_be_bytes());
        b.extend(b"public\0orders\0d");
        b.extend(2i16.to_be_bytes());
        b.push(1);
        b.extend(b"id\0");
        b.extend(23u32.to_be_bytes());
        b.extend((-1i32).to_be_bytes());
        b.push(0);
        b.extend(b"note\0");
        b.extend(1043u32.to_be_bytes());
        b.extend(54i32.to_be_bytes());
        b
    }

    #[test]
    fn a_relation_names_its_columns_types_and_key() {
        let Message::Relation(r) = decode(&relation_bytes()).unwrap() else {
            panic!("not a relation");
        };
        assert_eq!(
            (r.oid, r.namespace.as_str(), r.name.as_str()),
            (16_385, "public", "orders")
        );
        assert_eq!(r.replica_identity, b'd');
        assert_eq!(r.columns.len(), 2);
        assert!(r.columns[0].key && !r.columns[1].key);
        assert_eq!(
            (r.columns[1].type_oid, r.columns[1].type_modifier),
            (1043, 54)
        );
    }

    #[test]
    fn an_update_with_a_full_old_row_and_an_unchanged_toast_value() {
        let mut b = vec![b'U'];
        b.extend(7u32.to_be_bytes());
        b.push(b'O');
        b.extend(2i16.to_be_bytes());
        b.push(b't');
        b.extend(1i32.to_be_bytes());
        b.push(b'1');
        b.push(b'n');
        b.push(b'N');
        b.extend(2i16.to_be_bytes());
        b.push(b't');
        b.extend(1i32.to_be_bytes());
        b.push(b'2');
        b.push(b'u');
        let m = decode(&b).unwrap();
        assert_eq!(
            m,
            Message::Update {
                relation: 7,
                old: Some((
                    OldKind::Full,
                    Tuple(vec![Datum::Text("1".into()), Datum::Null])
                )),
                new: Tuple(vec![Datum::Text("2".into()), Datum::UnchangedToast]),
            }
        );
    }

    #[test]
    fn a_truncate_lists_its_relations() {
        let mut b = vec![b'T'];
        b.extend(2i32.to_be_bytes());
        b.push(2);
        b.extend(5u32.to_be_bytes());
        b.extend(6u32.to_be_bytes());
        assert_eq!(
            decode(&b).unwrap(),
            Message::Truncate {
                options: 2,
                relations: vec![5, 6]
            }
        );
    }

    #[test]
    fn every_truncation_of_a_message_is_an_error_not_a_panic() {
        let full = relation_bytes();
        for len in 0..full.len() {
            assert!(decode(&full[..len]).is_err(), "{len} bytes decoded");
        }
    }

    #[test]
    fn forged_counts_allocate_nothing() {
        let mut b = vec![b'T'];
        b.extend(i32::MAX.to_be_bytes());
        b.push(0);
        let e = decode(&b).unwrap_err();
        assert!(e.0.contains("cannot hold"), "{e}");
        let mut b = vec![b'I'];
        b.extend(1u32.to_be_bytes());
        b.push(b'N');
        b.extend(1i16.to_be_bytes());
        b.push(b't');
        b.extend(i32::MAX.to_be_bytes());
        assert!(decode(&b).is_err());
        let mut b = vec![b'I'];
        b.extend(1u32.to_be_bytes());
        b.push(b'N');
        b.extend((-1i16).to_be_bytes());
        assert!(decode(&b).unwrap_err().0.contains("negative"));
    }
}
