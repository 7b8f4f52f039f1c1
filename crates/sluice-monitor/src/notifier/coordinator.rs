//! When to notify: Burrow's notifier coordinator rules, with time passed in. Given one
//! evaluation of a group and the time it was made, [`Coordinator::evaluate`] says which
//! notifiers send an open or a close notification; it does no I/O and reads no clock, so
//! every rule is testable with a table of evaluations and times.
//!
//! Burrow's rules (`core/internal/notifier/coordinator.go`):
//! - an evaluation whose status is NOTFOUND is ignored;
//! - a group's incident opens, with a new id (a random UUID) and the evaluation's time as
//!   its start, at the first status worse than OK; it is shared by all notifiers;
//! - a notifier whose allowlist does not match the group, or whose denylist does, is
//!   skipped;
//! - when an incident is open and the group is OK again, a notifier with `send-close`
//!   sends a close (with the incident's id and start), once;
//! - otherwise a notifier sends an open when the status is at or above its threshold and
//!   its last open for the group is at least `send-interval` old (never twice with
//!   `send-once`), which repeats the open while the problem lasts;
//! - an OK evaluation ends the incident.
//!
//! Where Sluice departs from Burrow, deliberately:
//! - a close is sent only by a notifier that sent an open for the incident. Burrow opens
//!   the incident at WARN for everyone, so a notifier with threshold ERR got a close for a
//!   WARN episode it was never told about;
//! - when an incident ends, each notifier with a threshold above OK forgets when it last
//!   sent an open, so the group's next incident is announced at once. Burrow forgot only
//!   on a close: without `send-close`, a relapse within `send-interval` went unannounced
//!   until the interval ran out, and with `send-once` it was never announced again;
//! - an open is due when `send-interval` has passed (Burrow: strictly more than), so
//!   evaluations fed exactly every interval each send; and if the clock goes back, the
//!   open is due rather than held until the clock catches up.
//!
//! A notifier with threshold OK (or NOTFOUND) notifies about healthy groups too, every
//! `send-interval`, with an empty id outside an incident: Burrow's "tell me everything".

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use regex::Regex;

use crate::types::{GroupStatus, Status};

/// Groups whose alert state is kept; an evaluation of a further group is ignored and
/// logged. Storage expires groups long before this in any real cluster.
pub const TRACKED_GROUPS_MAX: usize = 100_000;

/// One notifier's alerting rules (the common half of a `[notifier.NAME]` section).
#[derive(Clone, Debug)]
pub struct AlertRules {
    pub allowlist: Option<Regex>,
    pub denylist: Option<Regex>,
    /// Opens are sent at this status or worse.
    pub threshold: Status,
    /// Least time between two opens for one group.
    pub send_interval: Duration,
    /// One open per incident, no repeats.
    pub send_once: bool,
    pub send_close: bool,
}

impl AlertRules {
    fn accepts_group(&self, group: &str) -> bool {
        self.allowlist
            .as_ref()
            .is_none_or(|allowlist| allowlist.is_match(group))
            && !self
                .denylist
                .as_ref()
                .is_some_and(|denylist| denylist.is_match(group))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NotificationKind {
    /// The group has a problem (Burrow's `stateGood == false`: the open template and URL).
    Open,
    /// The problem is over (the close template and URL).
    Close,
}

/// A notification the coordinator decided on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Index of the notifier in the rules the coordinator was made with.
    pub notifier: usize,
    pub kind: NotificationKind,
    /// The incident's id; empty for an open outside an incident (threshold OK).
    pub event_id: String,
    /// The incident's start; `None` outside an incident.
    pub start: Option<SystemTime>,
}

#[derive(Clone, Debug)]
struct Incident {
    id: String,
    start: SystemTime,
}

#[derive(Clone, Debug, Default)]
struct NotifierState {
    last_open: Option<SystemTime>,
    /// An open was sent for the current incident, so its close is owed.
    announced: bool,
}

#[derive(Clone, Debug)]
struct GroupState {
    incident: Option<Incident>,
    notifiers: Vec<NotifierState>,
}

/// Alert state for every group evaluated so far, for a fixed list of notifiers.
pub struct Coordinator {
    rules: Vec<AlertRules>,
    groups: HashMap<(String, String), GroupState>,
    new_id: Box<dyn FnMut() -> String + Send>,
}

impl Coordinator {
    pub fn new(rules: Vec<AlertRules>) -> Coordinator {
        Coordinator::with_ids(rules, || uuid::Uuid::new_v4().to_string())
    }

    /// With incident ids from `new_id` instead of random UUIDs (for tests).
    pub fn with_ids(
        rules: Vec<AlertRules>,
        new_id: impl FnMut() -> String + Send + 'static,
    ) -> Coordinator {
        Coordinator {
            rules,
            groups: HashMap::new(),
            new_id: Box::new(new_id),
        }
    }

    pub fn rules(&self) -> &[AlertRules] {
        &self.rules
    }

    /// The open incident of a group: its id and start.
    pub fn incident(&self, cluster: &str, group: &str) -> Option<(&str, SystemTime)> {
        let state = self.groups.get(&(cluster.to_string(), group.to_string()))?;
        state
            .incident
            .as_ref()
            .map(|incident| (incident.id.as_str(), incident.start))
    }

    /// Drops a group's state (it was deleted). No close is sent, as in Burrow.
    pub fn forget_group(&mut self, cluster: &str, group: &str) {
        self.groups
            .remove(&(cluster.to_string(), group.to_string()));
    }

    pub fn tracked_groups(&self) -> usize {
        self.groups.len()
    }

    /// Applies one evaluation of a group made at `now`; returns the notifications due.
    pub fn evaluate(&mut self, status: &GroupStatus, now: SystemTime) -> Vec<Decision> {
        if status.status == Status::NotFound {
            return Vec::new();
        }
        let key = (status.cluster.clone(), status.group.clone());
        if !self.groups.contains_key(&key) && self.groups.len() >= TRACKED_GROUPS_MAX {
            tracing::error!(
                cluster = %status.cluster,
                group = %status.group,
                "notifier: not tracking another group past {TRACKED_GROUPS_MAX}"
            );
            return Vec::new();
        }
        let notifier_count = self.rules.len();
        let state = self.groups.entry(key).or_insert_with(|| GroupState {
            incident: None,
            notifiers: vec![NotifierState::default(); notifier_count],
        });
        if state.incident.is_none() && status.status > Status::Ok {
            state.incident = Some(Incident {
                id: (self.new_id)(),
                start: now,
            });
        }
        let recovered = status.status == Status::Ok;
        let mut decisions = Vec::new();
        for (index, rules) in self.rules.iter().enumerate() {
            if !rules.accepts_group(&status.group) {
                continue;
            }
            let notifier = &mut state.notifiers[index];
            if let Some(incident) = &state.incident
                && recovered
                && rules.send_close
            {
                if notifier.announced {
                    decisions.push(Decision {
                        notifier: index,
                        kind: NotificationKind::Close,
                        event_id: incident.id.clone(),
                        start: Some(incident.start),
                    });
                }
                *notifier = NotifierState::default();
                continue;
            }
            if status.status < rules.threshold {
                continue;
            }
            if rules.send_once && notifier.last_open.is_some() {
                continue;
            }
            let due = notifier.last_open.is_none_or(|last| {
                now.duration_since(last)
                    .map_or(true, |elapsed| elapsed >= rules.send_interval)
            });
            if !due {
                continue;
            }
            decisions.push(Decision {
                notifier: index,
                kind: NotificationKind::Open,
                event_id: state
                    .incident
                    .as_ref()
                    .map(|incident| incident.id.clone())
                    .unwrap_or_default(),
                start: state.incident.as_ref().map(|incident| incident.start),
            });
            notifier.last_open = Some(now);
            notifier.announced |= state.incident.is_some() && !recovered;
        }
        if recovered && state.incident.take().is_some() {
            for (rules, notifier) in self.rules.iter().zip(&mut state.notifiers) {
                if rules.threshold > Status::Ok {
                    *notifier = NotifierState::default();
                }
            }
        }
        decisions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn rules(threshold: Status, send_close: bool, send_once: bool) -> AlertRules {
        AlertRules {
            allowlist: None,
            denylist: None,
            threshold,
            send_interval: Duration::from_secs(60),
            send_once,
            send_close,
        }
    }

    fn status(group: &str, status: Status) -> GroupStatus {
        GroupStatus {
            cluster: "local".to_string(),
            group: group.to_string(),
            status,
            complete: 1.0,
            partitions: Vec::new(),
            total_partitions: 1,
            maxlag: None,
            totallag: 0,
        }
    }

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_700_000_000 + seconds)
    }

    fn counting_coordinator(rules: Vec<AlertRules>) -> Coordinator {
        let mut next = 0;
        Coordinator::with_ids(rules, move || {
            next += 1;
            format!("incident-{next}")
        })
    }

    /// A compact form of a decision for tables: "open incident-1 @0" (id, start).
    fn describe(decisions: &[Decision]) -> Vec<String> {
        decisions
            .iter()
            .map(|decision| {
                let kind = match decision.kind {
                    NotificationKind::Open => "open",
                    NotificationKind::Close => "close",
                };
                let start = decision
                    .start
                    .map(|start| {
                        format!(
                            " @{}",
                            start.duration_since(at(0)).map_or(0, |d| d.as_secs())
                        )
                    })
                    .unwrap_or_default();
                format!("{}:{kind} {}{start}", decision.notifier, decision.event_id)
                    .trim_end()
                    .to_string()
            })
            .collect()
    }

    /// Runs (seconds, status, expected decisions) steps against one group.
    fn run(coordinator: &mut Coordinator, steps: &[(u64, Status, &[&str])]) {
        for (seconds, group_status, expected) in steps {
            let decisions = coordinator.evaluate(&status("billing", *group_status), at(*seconds));
            assert_eq!(
                describe(&decisions),
                *expected,
                "at {seconds}s, {group_status}"
            );
        }
    }

    #[test]
    fn an_incident_opens_repeats_every_interval_and_closes_once() {
        let mut coordinator = counting_coordinator(vec![rules(Status::Warning, true, false)]);
        run(
            &mut coordinator,
            &[
                (0, Status::Ok, &[]),
                (10, Status::Warning, &["0:open incident-1 @10"]),
                (40, Status::Error, &[]),
                (69, Status::Warning, &[]),
                (70, Status::Warning, &["0:open incident-1 @10"]),
                (100, Status::Ok, &["0:close incident-1 @10"]),
                (110, Status::Ok, &[]),
                // A relapse inside the interval is a new incident, announced at once.
                (120, Status::Error, &["0:open incident-2 @120"]),
                (130, Status::Ok, &["0:close incident-2 @120"]),
            ],
        );
        assert!(coordinator.incident("local", "billing").is_none());
    }

    /// Burrow's `notifyModuleTests` table (coordinator_test.go), replayed through real
    /// evaluations: threshold, status, whether an incident already exists, send-close,
    /// then what Burrow expects sent. Rows where Burrow sends a close for an incident
    /// this notifier never announced are marked: Sluice sends nothing there.
    #[test]
    fn burrows_notify_module_table() {
        struct Row {
            threshold: Status,
            status: Status,
            existing: bool,
            send_close: bool,
            expect: &'static [&'static str],
        }
        let row = |threshold, status, existing, send_close, expect| Row {
            threshold,
            status,
            existing,
            send_close,
            expect,
        };
        use Status::{Error, Ok, Warning};
        let rows = [
            row(Ok, Ok, false, false, &["0:open"]),
            row(Ok, Ok, false, true, &["0:open"]),
            row(Ok, Ok, true, false, &["0:open incident-1 @0"]),
            row(Ok, Ok, true, true, &["0:close incident-1 @0"]),
            row(Ok, Warning, false, false, &["0:open incident-1 @5"]),
            row(Ok, Warning, false, true, &["0:open incident-1 @5"]),
            row(Ok, Warning, true, false, &["0:open incident-1 @0"]),
            row(Ok, Warning, true, true, &["0:open incident-1 @0"]),
            row(Error, Warning, false, false, &[]),
            row(Error, Warning, false, true, &[]),
            row(Error, Warning, true, false, &[]),
            row(Error, Warning, true, true, &[]),
            row(Warning, Ok, false, false, &[]),
            row(Warning, Ok, false, true, &[]),
            row(Warning, Ok, true, false, &[]),
            row(Warning, Ok, true, true, &["0:close incident-1 @0"]),
            // Not in Burrow's table, where it would be a close: this notifier never sent
            // an open (its threshold is above the WARN that opened the incident).
            row(Error, Ok, true, true, &[]),
        ];
        for (index, row) in rows.iter().enumerate() {
            let mut coordinator =
                counting_coordinator(vec![rules(row.threshold, row.send_close, false)]);
            if row.existing {
                // An incident that opened at 0 with a WARN, announced if the notifier's
                // threshold let it through; then the interval passes.
                coordinator.evaluate(&status("billing", Warning), at(0));
            }
            let decisions = coordinator.evaluate(
                &status("billing", row.status),
                at(if row.existing { 300 } else { 5 }),
            );
            assert_eq!(describe(&decisions), row.expect, "row {index}");
        }
    }

    #[test]
    fn send_once_sends_one_open_per_incident() {
        let mut coordinator = counting_coordinator(vec![rules(Status::Warning, false, true)]);
        run(
            &mut coordinator,
            &[
                (0, Status::Warning, &["0:open incident-1 @0"]),
                (600, Status::Error, &[]),
                (700, Status::Ok, &[]),
                // Burrow never announced a second incident with send-once and no close.
                (800, Status::Warning, &["0:open incident-2 @800"]),
            ],
        );
    }

    #[test]
    fn not_found_is_ignored_and_allow_and_deny_lists_filter() {
        let mut listed = rules(Status::Warning, true, false);
        listed.allowlist = Some(Regex::new("^bill").expect("valid"));
        listed.denylist = Some(Regex::new("test$").expect("valid"));
        let mut coordinator =
            counting_coordinator(vec![listed, rules(Status::Warning, true, false)]);
        assert!(
            coordinator
                .evaluate(&status("billing", Status::NotFound), at(0))
                .is_empty()
        );
        assert_eq!(coordinator.tracked_groups(), 0);
        let cases = [
            (
                "billing",
                vec!["0:open incident-1 @1", "1:open incident-1 @1"],
            ),
            ("billing-test", vec!["1:open incident-2 @1"]),
            ("shipping", vec!["1:open incident-3 @1"]),
        ];
        for (group, expected) in cases {
            let decisions = coordinator.evaluate(&status(group, Status::Warning), at(1));
            assert_eq!(describe(&decisions), expected, "{group}");
        }
    }

    #[test]
    fn thresholds_differ_per_notifier_but_the_incident_is_shared() {
        let mut coordinator = counting_coordinator(vec![
            rules(Status::Warning, true, false),
            rules(Status::Error, true, false),
        ]);
        run(
            &mut coordinator,
            &[
                (0, Status::Warning, &["0:open incident-1 @0"]),
                (30, Status::Error, &["1:open incident-1 @0"]),
                (60, Status::Error, &["0:open incident-1 @0"]),
                (90, Status::Error, &["1:open incident-1 @0"]),
                (
                    100,
                    Status::Ok,
                    &["0:close incident-1 @0", "1:close incident-1 @0"],
                ),
            ],
        );
    }

    #[test]
    fn a_clock_that_goes_back_sends_rather_than_waits() {
        let mut coordinator = counting_coordinator(vec![rules(Status::Warning, false, false)]);
        run(
            &mut coordinator,
            &[
                (1000, Status::Warning, &["0:open incident-1 @1000"]),
                (500, Status::Warning, &["0:open incident-1 @1000"]),
                (520, Status::Warning, &[]),
            ],
        );
    }

    #[test]
    fn forgetting_a_group_drops_its_incident_without_a_close() {
        let mut coordinator = counting_coordinator(vec![rules(Status::Warning, true, false)]);
        coordinator.evaluate(&status("billing", Status::Warning), at(0));
        assert_eq!(
            coordinator.incident("local", "billing").map(|(id, _)| id),
            Some("incident-1")
        );
        coordinator.forget_group("local", "billing");
        assert!(
            coordinator
                .evaluate(&status("billing", Status::Ok), at(10))
                .is_empty()
        );
        let real = Coordinator::new(vec![rules(Status::Warning, true, false)])
            .evaluate(&status("g", Status::Stall), at(0));
        assert_eq!(real[0].event_id.len(), 36, "a UUID: {}", real[0].event_id);
    }
}
