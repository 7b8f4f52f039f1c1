//! What `mysql_common` leaves raw in a MariaDB binlog: MariaDB's own GTID events
//! (`GTID_EVENT`, type 162; `GTID_LIST_EVENT`, type 163), and MariaDB's GTID positions
//! (`domain-server-sequence`, one per replication domain: `0-1-19,1-2-7`).
//!
//! Every reader here takes the bytes the server sent (another process wrote them):
//! a short or inconsistent event is an error naming what is wrong, never a panic.

use std::collections::BTreeMap;
use std::fmt;

/// `GTID_EVENT` (MariaDB 10.0+).
pub const GTID_EVENT: u8 = 162;
/// `GTID_LIST_EVENT`: the binlog state at the start of a file.
pub const GTID_LIST_EVENT: u8 = 163;
/// `ANNOTATE_ROWS_EVENT`: the statement text before its rows events.
pub const ANNOTATE_ROWS_EVENT: u8 = 160;
/// `BINLOG_CHECKPOINT_EVENT`.
pub const BINLOG_CHECKPOINT_EVENT: u8 = 161;

/// `FL_STANDALONE`: the event group has no BEGIN/COMMIT (a DDL statement).
const FL_STANDALONE: u8 = 1;

/// One MariaDB GTID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gtid {
    pub domain: u32,
    pub server: u32,
    pub sequence: u64,
}

impl fmt::Display for Gtid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{}", self.domain, self.server, self.sequence)
    }
}

/// A `GTID_EVENT`'s body: the GTID of the event group it starts (the server id is the
/// event header's) and whether the group is a standalone statement (DDL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GtidEvent {
    pub gtid: Gtid,
    pub standalone: bool,
}

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    data.get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn u64_at(data: &[u8], at: usize) -> Option<u64> {
    data.get(at..at + 8).map(|b| {
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        u64::from_le_bytes(a)
    })
}

/// Reads a `GTID_EVENT` body (`seq_no` u64, `domain_id` u32, `flags` u8, ...).
pub fn gtid_event(server: u32, data: &[u8]) -> Result<GtidEvent, String> {
    let (Some(sequence), Some(domain), Some(flags)) =
        (u64_at(data, 0), u32_at(data, 8), data.get(12).copied())
    else {
        return Err(format!(
            "a MariaDB GTID event of {} bytes (at least 13 expected)",
            data.len()
        ));
    };
    Ok(GtidEvent {
        gtid: Gtid {
            domain,
            server,
            sequence,
        },
        standalone: flags & FL_STANDALONE != 0,
    })
}

/// Reads a `GTID_LIST_EVENT` body: a count (low 28 bits) and that many
/// (domain u32, server u32, sequence u64).
pub fn gtid_list_event(data: &[u8]) -> Result<Vec<Gtid>, String> {
    let count = u32_at(data, 0)
        .ok_or_else(|| "a MariaDB GTID list event without its count".to_string())?
        & 0x0fff_ffff;
    let count = count as usize;
    if data.len() < 4 + count.saturating_mul(16) {
        return Err(format!(
            "a MariaDB GTID list event of {} bytes announcing {count} GTIDs",
            data.len()
        ));
    }
    Ok((0..count)
        .filter_map(|i| {
            let at = 4 + i * 16;
            Some(Gtid {
                domain: u32_at(data, at)?,
                server: u32_at(data, at + 4)?,
                sequence: u64_at(data, at + 8)?,
            })
        })
        .collect())
}

/// MariaDB's replication position: per domain, the last GTID applied
/// (`@@gtid_binlog_pos`, `@slave_connect_state`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GtidSet(BTreeMap<u32, Gtid>);

impl GtidSet {
    /// Parses `0-1-19,1-2-7` (empty: no GTIDs).
    pub fn parse(text: &str) -> Result<GtidSet, String> {
        let mut set = GtidSet::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let mut fields = part.splitn(3, '-');
            let (Some(d), Some(s), Some(n)) = (fields.next(), fields.next(), fields.next()) else {
                return Err(format!(
                    "{part:?} is not a MariaDB GTID (domain-server-sequence)"
                ));
            };
            let bad = || format!("{part:?} is not a MariaDB GTID (domain-server-sequence)");
            set.add(Gtid {
                domain: d.parse().map_err(|_| bad())?,
                server: s.parse().map_err(|_| bad())?,
                sequence: n.parse().map_err(|_| bad())?,
            });
        }
        Ok(set)
    }

    pub fn add(&mut self, gtid: Gtid) {
        self.0.insert(gtid.domain, gtid);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `gtid`'s event group is in the set (its domain got at least as far).
    pub fn contains(&self, gtid: &Gtid) -> bool {
        self.0
            .get(&gtid.domain)
            .is_some_and(|g| g.sequence >= gtid.sequence)
    }
}

impl fmt::Display for GtidSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for gtid in self.0.values() {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            write!(f, "{gtid}")?;
        }
        Ok(())
    }
}

/// A binlog file name's place in the sequence (`binlog.000012` → 12), to order
/// positions across files; names without a numeric suffix sort first.
pub fn file_number(name: &str) -> u64 {
    name.rsplit('.')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// For the `connect_records` fuzz target: every reader of this module on the same
/// bytes.
pub fn fuzz(data: &[u8]) {
    let _ = gtid_event(1, data);
    let _ = gtid_list_event(data);
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(set) = GtidSet::parse(text)
    {
        assert_eq!(GtidSet::parse(&set.to_string()).ok(), Some(set));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gtid_events_are_read_and_short_ones_refused() {
        let mut body = 19u64.to_le_bytes().to_vec();
        body.extend(0u32.to_le_bytes());
        body.push(FL_STANDALONE | 2);
        body.extend([0u8; 8]);
        let e = gtid_event(1, &body).unwrap();
        assert_eq!(e.gtid.to_string(), "0-1-19");
        assert!(e.standalone);
        assert!(gtid_event(1, &body[..12]).is_err());
    }

    #[test]
    fn gtid_lists_are_bounded_by_the_bytes_present() {
        let mut body = 2u32.to_le_bytes().to_vec();
        for (d, s, n) in [(0u32, 1u32, 18u64), (1, 2, 7)] {
            body.extend(d.to_le_bytes());
            body.extend(s.to_le_bytes());
            body.extend(n.to_le_bytes());
        }
        let list = gtid_list_event(&body).unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[1].to_string(), "1-2-7");
        assert!(gtid_list_event(&body[..30]).is_err());
        let mut huge = 0x0fff_ffffu32.to_le_bytes().to_vec();
        huge.extend([0u8; 16]);
        assert!(gtid_list_event(&huge).is_err());
    }

    #[test]
    fn gtid_sets_parse_print_and_advance_per_domain() {
        let mut set = GtidSet::parse("1-2-7, 0-1-18").unwrap();
        assert_eq!(set.to_string(), "0-1-18,1-2-7");
        set.add(Gtid {
            domain: 0,
            server: 1,
            sequence: 19,
        });
        assert_eq!(set.to_string(), "0-1-19,1-2-7");
        assert!(set.contains(&Gtid {
            domain: 1,
            server: 9,
            sequence: 7
        }));
        assert!(!set.contains(&Gtid {
            domain: 2,
            server: 1,
            sequence: 1
        }));
        assert!(GtidSet::parse("0-1").is_err());
        assert!(GtidSet::parse("a-1-2").is_err());
        assert!(GtidSet::parse("").unwrap().is_empty());
    }

    #[test]
    fn binlog_files_order_by_number() {
        assert!(file_number("binlog.000010") > file_number("binlog.000009"));
        assert_eq!(file_number("weird"), 0);
    }
}
