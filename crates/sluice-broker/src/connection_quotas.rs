//! Connection limits, Kafka's `ConnectionQuotas`: `max.connections` for the whole
//! node and `max.connections.per.ip` (with `max.connections.per.ip.overrides`) per
//! client address.
//!
//! As in Kafka:
//! - a connection from an address already at its limit is closed as soon as it is
//!   accepted (the client sees the connection close and retries with backoff);
//! - at `max.connections`, a listener stops accepting until a connection closes: new
//!   connections wait in the kernel's backlog. The controller listeners and the
//!   inter-broker listener are counted but never held back, so the cluster's own
//!   traffic keeps flowing when clients exhaust the limit.
//!
//! What it is not: connection-rate limits (`max.connection.creation.rate`) and
//! listener-prefixed limits are not implemented.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// Why a connection was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooManyConnections {
    pub address: IpAddr,
    pub limit: usize,
}

impl std::fmt::Display for TooManyConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "too many connections from {} (max.connections.per.ip: {})",
            self.address, self.limit
        )
    }
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_address: HashMap<IpAddr, usize>,
}

/// The node's connection counts and limits, shared by its listeners.
#[derive(Debug)]
pub struct ConnectionQuotas {
    max_connections: usize,
    per_ip_default: usize,
    per_ip_overrides: HashMap<IpAddr, usize>,
    counts: Mutex<Counts>,
    /// Woken when a connection closes, for a listener waiting under `max.connections`.
    closed: Notify,
}

impl Default for ConnectionQuotas {
    fn default() -> Self {
        ConnectionQuotas::new(usize::MAX, usize::MAX, HashMap::new())
    }
}

impl ConnectionQuotas {
    pub fn new(
        max_connections: usize,
        per_ip_default: usize,
        per_ip_overrides: HashMap<IpAddr, usize>,
    ) -> ConnectionQuotas {
        ConnectionQuotas {
            max_connections,
            per_ip_default,
            per_ip_overrides,
            counts: Mutex::default(),
            closed: Notify::new(),
        }
    }

    /// Parses `max.connections.per.ip.overrides` (`address:count,address:count`; IPv6
    /// addresses may be bracketed).
    pub fn parse_overrides(text: &str) -> Result<HashMap<IpAddr, usize>, String> {
        let mut overrides = HashMap::new();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (address, count) = entry.rsplit_once(':').ok_or_else(|| {
                format!("max.connections.per.ip.overrides: {entry:?} is not address:count")
            })?;
            let address: IpAddr = address
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse()
                .map_err(|_| {
                    format!("max.connections.per.ip.overrides: {address:?} is not an IP address")
                })?;
            let count: usize = count.parse().map_err(|_| {
                format!("max.connections.per.ip.overrides: {count:?} is not a count")
            })?;
            overrides.insert(address, count);
        }
        Ok(overrides)
    }

    fn limit_for(&self, address: IpAddr) -> usize {
        self.per_ip_overrides
            .get(&address)
            .copied()
            .unwrap_or(self.per_ip_default)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until the node is below `max.connections` (a listener that is held back
    /// calls this before it accepts).
    pub async fn wait_for_slot(&self) {
        loop {
            // Registered before the check, so a close between the two is not missed.
            let closed = self.closed.notified();
            if self.lock().total < self.max_connections {
                return;
            }
            closed.await;
        }
    }

    /// Counts an accepted connection from `address`, or refuses it when that address
    /// is at its limit. The slot is given back when the returned guard drops.
    pub fn admit(self: &Arc<Self>, address: IpAddr) -> Result<ConnectionSlot, TooManyConnections> {
        let limit = self.limit_for(address);
        let mut counts = self.lock();
        let count = counts.per_address.entry(address).or_insert(0);
        if *count >= limit {
            return Err(TooManyConnections { address, limit });
        }
        *count += 1;
        counts.total += 1;
        Ok(ConnectionSlot {
            quotas: self.clone(),
            address,
        })
    }

    /// Open connections, for tests and metrics.
    pub fn open_connections(&self) -> usize {
        self.lock().total
    }
}

/// One open connection's place in the counts.
#[derive(Debug)]
pub struct ConnectionSlot {
    quotas: Arc<ConnectionQuotas>,
    address: IpAddr,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        {
            let mut counts = self.quotas.lock();
            counts.total = counts.total.saturating_sub(1);
            if let Some(count) = counts.per_address.get_mut(&self.address) {
                *count -= 1;
                if *count == 0 {
                    counts.per_address.remove(&self.address);
                }
            }
        }
        self.quotas.closed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_address_limits_with_overrides_and_slots_given_back() {
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let other: IpAddr = "10.0.0.7".parse().unwrap();
        let quotas = Arc::new(ConnectionQuotas::new(
            usize::MAX,
            2,
            ConnectionQuotas::parse_overrides("10.0.0.7:1, [::1]:5").unwrap(),
        ));
        let first = quotas.admit(local).unwrap();
        let _second = quotas.admit(local).unwrap();
        assert_eq!(
            quotas.admit(local).unwrap_err(),
            TooManyConnections {
                address: local,
                limit: 2
            }
        );
        let _only = quotas.admit(other).unwrap();
        assert!(quotas.admit(other).is_err(), "the override is 1");
        assert_eq!(quotas.open_connections(), 3);
        drop(first);
        assert_eq!(quotas.open_connections(), 2);
        assert!(
            quotas.admit(local).is_ok(),
            "a closed connection frees its slot"
        );
    }

    #[test]
    fn overrides_that_do_not_parse_name_the_key() {
        for bad in ["127.0.0.1", "host:3", "127.0.0.1:many"] {
            let error = ConnectionQuotas::parse_overrides(bad).unwrap_err();
            assert!(
                error.starts_with("max.connections.per.ip.overrides"),
                "{error}"
            );
        }
    }

    #[tokio::test]
    async fn a_listener_waits_for_a_slot_under_max_connections() {
        let quotas = Arc::new(ConnectionQuotas::new(1, usize::MAX, HashMap::new()));
        let address: IpAddr = "127.0.0.1".parse().unwrap();
        let held = quotas.admit(address).unwrap();
        let waiting = {
            let quotas = quotas.clone();
            tokio::spawn(async move { quotas.wait_for_slot().await })
        };
        tokio::task::yield_now().await;
        assert!(
            !waiting.is_finished(),
            "no slot while one connection is open"
        );
        drop(held);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("a closed connection wakes the listener")
            .unwrap();
    }
}
