//! Consumer groups: every group of the cluster with its state, type, members, lag and
//! Burrow's status; one group's members, partitions, lag over time and why it lags; and,
//! unless the console is read-only, resetting its offsets (as `kafka-consumer-groups.sh
//! --reset-offsets` does, with a dry run first) and deleting it.
//!
//! A KIP-848 group (`group.protocol=consumer`) is described with ConsumerGroupDescribe,
//! so it shows its real state, members and target assignments rather than `Dead`, which
//! is what DescribeGroups answers for it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::{Value, json};
use sluice_client::{
    ConsumerGroupDescription, Error as ClientError, ErrorCode, GROUP_ID_NOT_FOUND, GroupListing,
    GroupType, ListGroupsFilter, NON_EMPTY_GROUP, OffsetSpec, TopicPartition,
};
use sluice_monitor::types::GroupStatus;

use super::html::{self, Nav, OnSuccess, esc, seg};
use super::sampler::{self, Snapshot};
use super::state::{ApiError, ApiResult, Console};
use crate::group::{
    CONSUMER_GROUP_STATES, OffsetRow, assignment_string, canonical, offset_rows, parse_datetime,
    partitions_to_reset,
};

/// How long the list waits for one group's description.
const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(10);
/// How many groups the list describes at once.
const DESCRIBE_CONCURRENCY: usize = 16;

pub fn routes() -> Router<Arc<Console>> {
    Router::new()
        .route("/groups", get(list_page))
        .route("/groups/{group}", get(group_page))
        .route("/api/groups/{group}/offsets/preview", post(preview_reset))
        .route("/api/groups/{group}/offsets/reset", post(apply_reset))
        .route("/api/groups/{group}/delete", post(delete_group))
}

// ---------------------------------------------------------------------------------------
// The list
// ---------------------------------------------------------------------------------------

/// Whether groups of this protocol type are consumer groups (classic ones with the
/// consumer protocol, KIP-848 ones, and `""`: groups that only commit offsets).
fn is_consumer_protocol(protocol_type: &str) -> bool {
    protocol_type.is_empty() || protocol_type == sluice_client::CONSUMER_PROTOCOL_TYPE
}

/// A state as Kafka spells it (`Stable`), or as the broker did when it is none of those.
fn state_name(raw: &str) -> String {
    match canonical(Some(raw), CONSUMER_GROUP_STATES).as_str() {
        "Unknown" if !raw.is_empty() => raw.to_string(),
        name => name.to_string(),
    }
}

fn state_badge(state: &str) -> String {
    let kind = match state {
        "Stable" => "ok",
        "PreparingRebalance" | "CompletingRebalance" | "Assigning" | "Reconciling" => "warn",
        "Dead" => "err",
        _ => "muted",
    };
    html::badge(state, kind)
}

fn type_name(group_type: GroupType) -> &'static str {
    match group_type {
        GroupType::Classic => "classic",
        GroupType::Consumer => "consumer (KIP-848)",
    }
}

fn protocol_label(protocol_type: &str) -> String {
    match protocol_type {
        "" => "<span class=\"muted\">none (offsets only)</span>".to_string(),
        "consumer" => "consumer".to_string(),
        other => format!(
            "{} {}",
            esc(other),
            html::badge("not a consumer group", "muted")
        ),
    }
}

/// Every group's description, described a few at a time; an error as text.
async fn describe_all(
    console: &Arc<Console>,
    listings: &[GroupListing],
) -> BTreeMap<String, Result<ConsumerGroupDescription, String>> {
    let wanted: Vec<String> = listings
        .iter()
        .filter(|listing| is_consumer_protocol(&listing.protocol_type))
        .map(|listing| listing.group_id.clone())
        .collect();
    let mut described = BTreeMap::new();
    for chunk in wanted.chunks(DESCRIBE_CONCURRENCY) {
        let mut tasks = tokio::task::JoinSet::new();
        for group in chunk {
            let console = console.clone();
            let group = group.clone();
            tasks.spawn(async move {
                let result = match tokio::time::timeout(
                    DESCRIBE_TIMEOUT,
                    console.admin.describe_consumer_group(&group),
                )
                .await
                {
                    Ok(Ok(description)) => Ok(description),
                    Ok(Err(error)) => Err(error.to_string()),
                    Err(_) => Err(format!("no answer in {} s", DESCRIBE_TIMEOUT.as_secs())),
                };
                (group, result)
            });
        }
        while let Some(joined) = tasks.join_next().await {
            if let Ok((group, result)) = joined {
                described.insert(group, result);
            }
        }
    }
    described
}

/// A group's total lag in a snapshot: the sum over its committed partitions of log end
/// minus committed offset; `None` when the snapshot has no offsets of the group.
fn snapshot_lag(snapshot: &Snapshot, group: &str) -> Option<i64> {
    let committed = snapshot.committed.get(group)?;
    Some(
        committed
            .iter()
            .filter_map(|(key, offset)| snapshot.end_offsets.get(key).map(|end| end - offset))
            .map(|lag| lag.max(0))
            .sum(),
    )
}

fn burrow_status(console: &Console, group: &str, show_all: bool) -> Option<GroupStatus> {
    console
        .monitor()
        .map(|monitor| monitor.group_status(&console.config.monitor_cluster, group, show_all))
}

async fn list_page(State(console): State<Arc<Console>>) -> Response {
    let listings = match console
        .admin
        .list_groups(&ListGroupsFilter::default())
        .await
    {
        Ok(listings) => listings,
        Err(error) => {
            return html::error_page(
                &console,
                StatusCode::BAD_GATEWAY,
                "Consumer groups",
                &format!("The cluster did not list its groups: {error}"),
            );
        }
    };
    let described = describe_all(&console, &listings).await;
    let snapshot = sampler::current(&console).await.ok();
    let mut body = String::new();
    let _ = write!(
        body,
        "<p>{} group{} (consumer groups of both protocols, and other groups such as Kafka \
         Connect's workers). Lag is the sum over the group's partitions of log end offset \
         minus committed offset; the status is Burrow's evaluation of its recent commits.</p>",
        listings.len(),
        if listings.len() == 1 { "" } else { "s" }
    );
    if listings.is_empty() {
        body.push_str("<p class=\"muted\">The cluster has no groups yet.</p>");
        return html::page(&console, Nav::Groups, "Consumer groups", &body);
    }
    body.push_str(&html::table_filter("groups", "Search groups"));
    body.push_str(
        "<table id=\"groups\"><thead><tr><th scope=\"col\">Group</th><th scope=\"col\">Type</th>\
         <th scope=\"col\">Protocol type</th><th scope=\"col\">State</th>\
         <th scope=\"col\">Assignor</th><th scope=\"col\" class=\"num\">Members</th>\
         <th scope=\"col\" class=\"num\">Total lag</th><th scope=\"col\">Status</th>\
         </tr></thead><tbody>",
    );
    for listing in &listings {
        let group = &listing.group_id;
        let description = described.get(group);
        let ok = description.and_then(|d| d.as_ref().ok());
        let group_type = match ok {
            Some(d) => type_name(d.group_type).to_string(),
            None => match listing.group_type.as_deref() {
                Some(kind) if kind.eq_ignore_ascii_case("consumer") => {
                    type_name(GroupType::Consumer).to_string()
                }
                Some(kind) => kind.to_lowercase(),
                None => "—".to_string(),
            },
        };
        let state = match (ok, listing.state.as_deref()) {
            (Some(d), _) => state_name(&d.state),
            (None, Some(state)) => state_name(state),
            (None, None) => "Unknown".to_string(),
        };
        let mut state_cell = state_badge(&state);
        if let Some(Err(error)) = description {
            let _ = write!(
                state_cell,
                " <small class=\"muted\" title=\"{}\">(not described)</small>",
                esc(error)
            );
        }
        let assignor = ok
            .map(|d| d.partition_assignor.clone())
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| "—".to_string());
        let members = ok.map_or("—".to_string(), |d| d.members.len().to_string());
        let lag = snapshot
            .as_deref()
            .and_then(|s| snapshot_lag(s, group))
            .map_or("—".to_string(), |lag| lag.to_string());
        let status = burrow_status(&console, group, false)
            .map_or("—".to_string(), |s| html::status_badge(s.status.as_str()));
        let _ = write!(
            body,
            "<tr><td><a href=\"/groups/{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            seg(group),
            esc(group),
            esc(&group_type),
            protocol_label(&listing.protocol_type),
            state_cell,
            esc(&assignor),
            members,
            lag,
            status
        );
    }
    body.push_str("</tbody></table>");
    html::page(&console, Nav::Groups, "Consumer groups", &body)
}

// ---------------------------------------------------------------------------------------
// One group
// ---------------------------------------------------------------------------------------

fn not_found(console: &Console, group: &str) -> Response {
    html::error_page(
        console,
        StatusCode::NOT_FOUND,
        "Consumer group not found",
        &format!("Consumer group '{group}' does not exist."),
    )
}

/// A member's name in sentences: its client id and the end of its member id.
fn member_label(client_id: &str, member_id: &str) -> String {
    let tail: String = {
        let chars: Vec<char> = member_id.chars().collect();
        chars[chars.len().saturating_sub(8)..].iter().collect()
    };
    if tail.is_empty() {
        client_id.to_string()
    } else {
        format!("{client_id} (member …{tail})")
    }
}

async fn group_page(State(console): State<Arc<Console>>, Path(group): Path<String>) -> Response {
    let description = match console.admin.describe_consumer_group(&group).await {
        Ok(description) => description,
        Err(ClientError::Api(error)) if error.code == GROUP_ID_NOT_FOUND => {
            return not_found(&console, &group);
        }
        // What DescribeGroups answers for a group that is not a consumer group (Connect's).
        Err(ClientError::Api(error)) if error.code == ErrorCode::INCONSISTENT_GROUP_PROTOCOL => {
            return other_group_page(&console, &group, error.message()).await;
        }
        Err(error) => {
            return html::error_page(
                &console,
                StatusCode::BAD_GATEWAY,
                &format!("Consumer group {group}"),
                &format!("The cluster did not describe the group: {error}"),
            );
        }
    };
    let mut rows = match offset_rows(&console.admin, &description).await {
        Ok(rows) => rows,
        Err(error) => {
            return html::error_page(
                &console,
                StatusCode::BAD_GATEWAY,
                &format!("Consumer group {group}"),
                &format!("The cluster did not give the group's offsets: {error:#}"),
            );
        }
    };
    let state = state_name(&description.state);
    // Classic coordinators describe a group they do not know as Dead with no members.
    if state == "Dead" && description.members.is_empty() && rows.is_empty() {
        return not_found(&console, &group);
    }
    rows.sort_by(|a, b| a.partition.cmp(&b.partition));
    let burrow = burrow_status(&console, &group, true);
    let snapshot = console.sampler.snapshot();
    let body = render_group(
        &console,
        &description,
        &state,
        &rows,
        burrow.as_ref(),
        snapshot.as_deref(),
    );
    html::page(
        &console,
        Nav::Groups,
        &format!("Consumer group {group}"),
        &body,
    )
}

/// A group that is not a consumer group (Kafka Connect's workers): what ListGroups says.
async fn other_group_page(console: &Console, group: &str, why: &str) -> Response {
    let listing = console
        .admin
        .list_groups(&ListGroupsFilter::default())
        .await
        .ok()
        .and_then(|listings| listings.into_iter().find(|l| l.group_id == group));
    let Some(listing) = listing else {
        return not_found(console, group);
    };
    let state = state_name(listing.state.as_deref().unwrap_or(""));
    let body = format!(
        "<table id=\"group-facts\"><thead><tr><th scope=\"col\">State</th>\
         <th scope=\"col\">Protocol type</th></tr></thead><tbody><tr><td>{}</td><td>{}</td>\
         </tr></tbody></table>\
         <p class=\"muted\">{} Its members are not consumers (for <code>connect</code>, the \
         workers of a Kafka Connect cluster sharing out connectors and tasks), so it has no \
         partitions, lag or offsets to show here.</p>",
        state_badge(&state),
        protocol_label(&listing.protocol_type),
        esc(why)
    );
    html::page(console, Nav::Groups, &format!("Group {group}"), &body)
}

fn card(label: &str, value: &str, kind: &str, id: &str) -> String {
    let id = if id.is_empty() {
        String::new()
    } else {
        format!(" id=\"{id}\"")
    };
    format!(
        "<div class=\"card {kind}\"{id}><div class=\"value\">{value}</div>\
         <div class=\"label\">{}</div></div>",
        esc(label)
    )
}

fn show(value: Option<i64>) -> String {
    value.map_or("—".to_string(), |v| v.to_string())
}

fn render_group(
    console: &Console,
    description: &ConsumerGroupDescription,
    state: &str,
    rows: &[OffsetRow],
    burrow: Option<&GroupStatus>,
    snapshot: Option<&Snapshot>,
) -> String {
    let group = &description.group_id;
    let mut body = String::new();
    let total_lag: i64 = rows
        .iter()
        .filter_map(OffsetRow::lag)
        .map(|l| l.max(0))
        .sum();
    let status = burrow.map_or("—", |b| b.status.as_str());
    let status_kind = match status {
        "OK" => "ok",
        "WARN" => "warn",
        "ERR" | "STOP" | "STALL" | "REWIND" => "err",
        _ => "",
    };
    body.push_str("<div class=\"cards\">");
    body.push_str(&card(
        "Burrow status",
        &html::status_badge(status),
        status_kind,
        "group-status",
    ));
    body.push_str(&card("State", &state_badge(state), "", "group-state"));
    body.push_str(&card(
        "Members",
        &description.members.len().to_string(),
        "",
        "group-members",
    ));
    body.push_str(&card("Total lag", &total_lag.to_string(), "", "group-lag"));
    body.push_str("</div>");

    // The group's facts, as one row of a table.
    let coordinator = &description.coordinator;
    let protocol_type = if description.is_simple_consumer_group {
        ""
    } else {
        "consumer"
    };
    let mut facts: Vec<(&str, String)> = vec![
        ("Type", esc(type_name(description.group_type))),
        ("Protocol type", protocol_label(protocol_type)),
        (
            if description.group_type == GroupType::Consumer {
                "Assignor"
            } else {
                "Protocol (assignor)"
            },
            esc(if description.partition_assignor.is_empty() {
                "—"
            } else {
                &description.partition_assignor
            }),
        ),
        (
            "Coordinator",
            format!(
                "{} (broker {})",
                esc(&coordinator.address()),
                coordinator.node_id
            ),
        ),
    ];
    if description.group_type == GroupType::Consumer {
        let epoch = |e: Option<i32>| e.map_or("—".to_string(), |e| e.to_string());
        facts.push(("Group epoch", epoch(description.group_epoch)));
        facts.push((
            "Target assignment epoch",
            epoch(description.target_assignment_epoch),
        ));
    }
    if let Some(burrow) = burrow {
        facts.push((
            "Burrow",
            format!(
                "{} of {} partitions evaluated, total lag {}",
                burrow.partitions.len(),
                burrow.total_partitions,
                burrow.totallag
            ),
        ));
    }
    body.push_str("<table id=\"group-facts\"><thead><tr>");
    for (label, _) in &facts {
        let _ = write!(body, "<th scope=\"col\">{}</th>", esc(label));
    }
    body.push_str("</tr></thead><tbody><tr>");
    for (_, value) in &facts {
        let _ = write!(body, "<td>{value}</td>");
    }
    body.push_str("</tr></tbody></table>");

    // Lag over time.
    body.push_str("<section id=\"lag-history\"><h2>Lag over time</h2>");
    body.push_str(&html::line_chart(
        &console.sampler.group_lag_history(group),
        "Total lag",
        "records",
    ));
    body.push_str("</section>");

    render_members(&mut body, description);
    render_partitions(&mut body, console, group, rows, burrow);
    render_why_lagging(&mut body, console, description, rows);
    if console.config.read_only {
        body.push_str(
            "<p class=\"muted\" id=\"read-only-note\">The console is read-only: resetting \
             offsets and deleting the group are turned off.</p>",
        );
    } else {
        render_reset_form(&mut body, description, state, rows, snapshot);
        render_delete_form(&mut body, description);
    }
    body
}

fn render_members(body: &mut String, description: &ConsumerGroupDescription) {
    let consumer_group = description.group_type == GroupType::Consumer;
    let _ = write!(
        body,
        "<section id=\"members\"><h2>Members ({})</h2>",
        description.members.len()
    );
    if description.members.is_empty() {
        body.push_str(
            "<p class=\"muted\">No active members: nothing consumes for this group now.</p>\
             </section>",
        );
        return;
    }
    body.push_str(
        "<table id=\"members-table\"><thead><tr><th scope=\"col\">Member id</th>\
         <th scope=\"col\">Instance id</th><th scope=\"col\">Client id</th>\
         <th scope=\"col\">Host</th><th scope=\"col\" class=\"num\">Partitions</th>\
         <th scope=\"col\">Assigned</th>",
    );
    if consumer_group {
        body.push_str(
            "<th scope=\"col\">Target assignment</th><th scope=\"col\" class=\"num\">\
             Member epoch</th><th scope=\"col\">Protocol</th>",
        );
    }
    body.push_str("</tr></thead><tbody>");
    for member in &description.members {
        let _ = write!(
            body,
            "<tr><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td class=\"num\">{}</td><td class=\"mono\">{}</td>",
            esc(&member.member_id),
            esc(member.group_instance_id.as_deref().unwrap_or("—")),
            esc(&member.client_id),
            esc(&member.host),
            member.assignment.len(),
            esc(&assignment_string(&member.assignment))
        );
        if consumer_group {
            let target = member
                .target_assignment
                .as_ref()
                .map_or("—".to_string(), assignment_string);
            let pending = if member.target_assignment.as_ref() == Some(&member.assignment) {
                ""
            } else {
                " <span class=\"badge warn\">moving</span>"
            };
            let protocol = match member.upgraded {
                Some(true) => "consumer",
                Some(false) => "classic",
                None => "—",
            };
            let _ = write!(
                body,
                "<td class=\"mono\">{}{pending}</td><td class=\"num\">{}</td><td>{protocol}</td>",
                esc(&target),
                member
                    .member_epoch
                    .map_or("—".to_string(), |e| e.to_string())
            );
        }
        body.push_str("</tr>");
    }
    body.push_str("</tbody></table></section>");
}

fn owner_cell(row: &OffsetRow) -> String {
    if row.consumer_id == "-" {
        return "<span class=\"muted\">—</span>".to_string();
    }
    format!(
        "{} <small class=\"mono\">{}</small>",
        esc(&row.client_id),
        esc(&row.consumer_id)
    )
}

fn render_partitions(
    body: &mut String,
    console: &Console,
    group: &str,
    rows: &[OffsetRow],
    burrow: Option<&GroupStatus>,
) {
    body.push_str("<section id=\"offsets\"><h2>Partitions</h2>");
    if rows.is_empty() {
        body.push_str(
            "<p class=\"muted\">The group owns no partition and has committed no offset.</p>\
             </section>",
        );
        return;
    }
    body.push_str(&html::table_filter("partitions", "Search partitions"));
    body.push_str(
        "<table id=\"partitions\"><thead><tr><th scope=\"col\">Topic</th>\
         <th scope=\"col\" class=\"num\">Partition</th>\
         <th scope=\"col\" class=\"num\">Committed offset</th>\
         <th scope=\"col\" class=\"num\">End offset</th><th scope=\"col\" class=\"num\">Lag</th>\
         <th scope=\"col\" class=\"num\">Consume rate</th><th scope=\"col\">Status</th>\
         <th scope=\"col\">Owner</th></tr></thead><tbody>",
    );
    for row in rows {
        let tp = &row.partition;
        let status = burrow
            .and_then(|b| {
                b.partitions
                    .iter()
                    .find(|p| p.topic == tp.topic && p.partition == tp.partition)
            })
            .map_or("—".to_string(), |p| html::status_badge(p.status.as_str()));
        let _ = write!(
            body,
            "<tr><td><a href=\"/topics/{}\">{}</a></td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            seg(&tp.topic),
            esc(&tp.topic),
            tp.partition,
            show(row.committed_offset),
            show(row.log_end_offset),
            show(row.lag()),
            html::rate(console.sampler.consume_rate(group, &tp.topic, tp.partition)),
            status,
            owner_cell(row)
        );
    }
    body.push_str("</tbody></table></section>");
}

// ---------------------------------------------------------------------------------------
// Why is it lagging
// ---------------------------------------------------------------------------------------

/// What the analysis knows of one partition of the group.
#[derive(Debug, Clone)]
pub(crate) struct PartitionFacts {
    pub partition: TopicPartition,
    /// Log end minus committed offset; `None` without a committed offset.
    pub lag: Option<i64>,
    /// Records per second appended to the partition.
    pub produce_rate: Option<f64>,
    /// Records per second the group's committed offset advanced on it.
    pub consume_rate: Option<f64>,
    /// The member id of its owner.
    pub owner: Option<String>,
}

/// One member's share of the work.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MemberLoad {
    pub member_id: String,
    pub label: String,
    pub partitions: usize,
    pub produce_rate: Option<f64>,
    pub consume_rate: Option<f64>,
    pub lag: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FindingKind {
    NotLagging,
    Stopped,
    HotPartition,
    SlowMember,
    Growing,
    KeepingUp,
    Unknown,
}

impl FindingKind {
    fn class(self) -> &'static str {
        match self {
            FindingKind::NotLagging | FindingKind::KeepingUp => "ok",
            FindingKind::Stopped => "err",
            FindingKind::HotPartition | FindingKind::SlowMember | FindingKind::Growing => "warn",
            FindingKind::Unknown => "muted",
        }
    }

    fn title(self) -> &'static str {
        match self {
            FindingKind::NotLagging => "Not lagging",
            FindingKind::Stopped => "Stopped consumer",
            FindingKind::HotPartition => "Hot partition",
            FindingKind::SlowMember => "Slow member",
            FindingKind::Growing => "Lag growing",
            FindingKind::KeepingUp => "Keeping up",
            FindingKind::Unknown => "Not known yet",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Finding {
    pub kind: FindingKind,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LagAnalysis {
    pub total_lag: i64,
    pub produce_rate: Option<f64>,
    pub consume_rate: Option<f64>,
    pub members: Vec<MemberLoad>,
    pub findings: Vec<Finding>,
}

/// A partition's produce rate at least this many times its topic's mean is hot.
const HOT_FACTOR: f64 = 1.5;
/// A member consuming less than this share of the others' rate per partition is slow.
const SLOW_FACTOR: f64 = 0.5;
/// Produce above consume by this factor (and by more than [`GROWTH_MIN_RATE`]) is growth.
const GROWTH_FACTOR: f64 = 1.1;
const GROWTH_MIN_RATE: f64 = 0.05;

fn sum_known(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    values
        .flatten()
        .fold(None, |sum, v| Some(sum.unwrap_or(0.0) + v))
}

fn rate_text(rate: f64) -> String {
    html::rate(Some(rate))
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Partition names for a sentence, at most five then "and N more".
fn partition_list(partitions: &[&TopicPartition]) -> String {
    let mut names: Vec<String> = partitions.iter().take(5).map(|tp| tp.to_string()).collect();
    if partitions.len() > 5 {
        names.push(format!("and {} more", partitions.len() - 5));
    }
    names.join(", ")
}

/// Why the group lags, in plain words: from each partition's lag, produce rate and the
/// group's consume rate on it, and which member owns it. `members` are (member id,
/// label) of every active member.
pub(crate) fn analyze_lag(
    partitions: &[PartitionFacts],
    members: &[(String, String)],
) -> LagAnalysis {
    let total_lag: i64 = partitions
        .iter()
        .filter_map(|p| p.lag)
        .map(|l| l.max(0))
        .sum();
    let produce_rate = sum_known(partitions.iter().map(|p| p.produce_rate));
    let consume_rate = sum_known(partitions.iter().map(|p| p.consume_rate));
    let loads: Vec<MemberLoad> = members
        .iter()
        .map(|(member_id, label)| {
            let owned: Vec<&PartitionFacts> = partitions
                .iter()
                .filter(|p| p.owner.as_deref() == Some(member_id.as_str()))
                .collect();
            MemberLoad {
                member_id: member_id.clone(),
                label: label.clone(),
                partitions: owned.len(),
                produce_rate: sum_known(owned.iter().map(|p| p.produce_rate)),
                consume_rate: sum_known(owned.iter().map(|p| p.consume_rate)),
                lag: owned.iter().filter_map(|p| p.lag).map(|l| l.max(0)).sum(),
            }
        })
        .collect();
    let mut findings = Vec::new();
    let label_of = |member: &str| {
        members
            .iter()
            .find(|(id, _)| id == member)
            .map_or(member.to_string(), |(_, label)| label.clone())
    };

    if partitions.is_empty() {
        say(
            &mut findings,
            FindingKind::Unknown,
            "The group owns no partition and has committed no offset: there is nothing to \
             measure."
                .to_string(),
        );
    } else if total_lag == 0 {
        say(
            &mut findings,
            FindingKind::NotLagging,
            "Every committed offset is at its partition's log end.".to_string(),
        );
    }
    if total_lag == 0 {
        return LagAnalysis {
            total_lag,
            produce_rate,
            consume_rate,
            members: loads,
            findings,
        };
    }

    // Stopped: lag, and a committed offset that did not move over the window. A group
    // without members whose offsets advance is not stopped: its client commits without
    // joining (assign() and commit, as Flink's and Spark's Kafka sources do).
    let not_moving = |rate: Option<f64>| rate.is_none_or(|r| r == 0.0);
    let stopped: Vec<&PartitionFacts> = partitions
        .iter()
        .filter(|p| {
            p.lag.is_some_and(|l| l > 0)
                && (p.consume_rate == Some(0.0)
                    || (members.is_empty() && not_moving(p.consume_rate)))
        })
        .collect();
    let all_stopped = consume_rate == Some(0.0) || (members.is_empty() && not_moving(consume_rate));
    if !stopped.is_empty() {
        let names: Vec<&TopicPartition> = stopped.iter().map(|p| &p.partition).collect();
        let lag: i64 = stopped.iter().filter_map(|p| p.lag).sum();
        let arriving = sum_known(stopped.iter().map(|p| p.produce_rate))
            .filter(|r| *r > 0.0)
            .map_or(String::new(), |r| {
                format!(
                    " Records keep arriving there at {}, so the lag grows.",
                    rate_text(r)
                )
            });
        let text = if members.is_empty() {
            format!(
                "The group has no active members, so nothing consumes {} ({} records behind). \
                 Start its consumers again, or reset its offsets if the backlog is not \
                 wanted.{arriving}",
                partition_list(&names),
                lag
            )
        } else {
            let owners: BTreeSet<String> = stopped
                .iter()
                .map(|p| p.owner.as_deref().map_or("no member".to_string(), label_of))
                .collect();
            format!(
                "The committed offset of {} has not moved over the last minute although {} \
                 {lag} records behind (owned by {}). That consumer may be stuck (a record it \
                 cannot process, a blocked thread, endless rebalances) or has stopped \
                 committing.{arriving}",
                partition_list(&names),
                if names.len() == 1 {
                    "it is"
                } else {
                    "they are"
                },
                owners.into_iter().collect::<Vec<_>>().join(", ")
            )
        };
        say(&mut findings, FindingKind::Stopped, text);
    }

    // A hot partition: far more traffic than its topic's mean, and most of the lag.
    let mut by_topic: BTreeMap<&str, Vec<&PartitionFacts>> = BTreeMap::new();
    for p in partitions {
        by_topic.entry(&p.partition.topic).or_default().push(p);
    }
    for (topic, facts) in &by_topic {
        let rates: Vec<f64> = facts.iter().filter_map(|p| p.produce_rate).collect();
        if rates.len() < 2 {
            continue;
        }
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        if mean <= 0.0 {
            continue;
        }
        for p in facts {
            let (Some(rate), Some(lag)) = (p.produce_rate, p.lag) else {
                continue;
            };
            if rate >= HOT_FACTOR * mean && lag * 2 > total_lag {
                let owner = p.owner.as_deref().map_or(String::new(), |o| {
                    format!(" Its owner, {}, has to keep up with it alone.", label_of(o))
                });
                say(
                    &mut findings,
                    FindingKind::HotPartition,
                    format!(
                        "{} receives {}, {:.1}× the mean of the partitions of {topic} ({}), and \
                         carries {}% of the lag.{owner} Records with one key all go to one \
                         partition: a skewed key sends most of the traffic here. Spread the \
                         keys (a key with more distinct values) so other partitions share it.",
                        p.partition,
                        rate_text(rate),
                        rate / mean,
                        rate_text(mean),
                        lag * 100 / total_lag
                    ),
                );
            }
        }
    }

    // A slow member: it consumes far less per partition than the others while its
    // partitions lag more than theirs.
    let measured: Vec<(&MemberLoad, f64)> = loads
        .iter()
        .filter(|m| m.partitions > 0)
        .filter_map(|m| m.consume_rate.map(|r| (m, r)))
        .collect();
    if measured.len() >= 2 {
        for (member, rate) in &measured {
            if *rate <= 0.0 || member.lag <= 0 {
                continue;
            }
            let others: Vec<&(&MemberLoad, f64)> = measured
                .iter()
                .filter(|(m, _)| m.member_id != member.member_id)
                .collect();
            let others_partitions: usize = others.iter().map(|(m, _)| m.partitions).sum();
            let others_rate: f64 = others.iter().map(|(_, r)| r).sum();
            let others_lag: i64 = others.iter().map(|(m, _)| m.lag).sum();
            if others_partitions == 0 {
                continue;
            }
            let per_partition = rate / member.partitions as f64;
            let others_per_partition = others_rate / others_partitions as f64;
            let lag_per_partition = member.lag as f64 / member.partitions as f64;
            let others_lag_per_partition = others_lag as f64 / others_partitions as f64;
            if others_per_partition > 0.0
                && per_partition < SLOW_FACTOR * others_per_partition
                && lag_per_partition > others_lag_per_partition
            {
                say(
                    &mut findings,
                    FindingKind::SlowMember,
                    format!(
                        "{} consumes {} per partition against {} for the other members, and \
                         its {} {} records behind ({}% of the lag). Look at that consumer: \
                         its host (CPU, memory, garbage collection), the time it spends on \
                         each record, its max.poll.records.",
                        member.label,
                        rate_text(per_partition),
                        rate_text(others_per_partition),
                        plural(member.partitions, "partition is", "partitions are"),
                        member.lag,
                        member.lag * 100 / total_lag
                    ),
                );
            }
        }
    }

    // Growing: more records arrive than the group consumes.
    if let (Some(produce), Some(consume)) = (produce_rate, consume_rate) {
        if !all_stopped && produce > consume * GROWTH_FACTOR && produce - consume > GROWTH_MIN_RATE
        {
            let owned = partitions.iter().filter(|p| p.owner.is_some()).count();
            let advice = if !members.is_empty() && members.len() < partitions.len() {
                format!(
                    " The group has {} for {}: more members (up to one per partition) \
                     would share the load.",
                    plural(members.len(), "member", "members"),
                    plural(partitions.len(), "partition", "partitions")
                )
            } else if owned < partitions.len() && !members.is_empty() {
                " Some partitions have no owner.".to_string()
            } else {
                " Make each consumer faster (batching, less work per record), or add \
                 partitions and consumers."
                    .to_string()
            };
            say(
                &mut findings,
                FindingKind::Growing,
                format!(
                    "The lag is growing: the group's partitions receive {} in all but it \
                     consumes {}, {} behind.{advice}",
                    rate_text(produce),
                    rate_text(consume),
                    rate_text(produce - consume)
                ),
            );
        } else if consume > 0.0 && consume * GROWTH_FACTOR >= produce {
            let eta = if consume > produce {
                let seconds = total_lag as f64 / (consume - produce);
                format!(
                    " At this pace it catches up in about {}.",
                    duration_text(seconds)
                )
            } else {
                String::new()
            };
            say(
                &mut findings,
                FindingKind::KeepingUp,
                format!(
                    "{total_lag} records behind, but the group consumes {} against {} \
                     produced: it keeps up.{eta}",
                    rate_text(consume),
                    rate_text(produce)
                ),
            );
        }
    }
    if findings.is_empty() {
        let text = if produce_rate.is_none() || consume_rate.is_none() {
            format!(
                "{total_lag} records behind. The rates need at least two samples of the \
                 cluster: look again in a minute to see why."
            )
        } else {
            format!("{total_lag} records behind, with no single cause found.")
        };
        say(&mut findings, FindingKind::Unknown, text);
    }
    LagAnalysis {
        total_lag,
        produce_rate,
        consume_rate,
        members: loads,
        findings,
    }
}

fn say(findings: &mut Vec<Finding>, kind: FindingKind, text: String) {
    findings.push(Finding { kind, text });
}

fn duration_text(seconds: f64) -> String {
    if seconds < 90.0 {
        format!("{:.0} s", seconds.max(1.0))
    } else if seconds < 5400.0 {
        format!("{:.0} min", seconds / 60.0)
    } else {
        format!("{:.1} h", seconds / 3600.0)
    }
}

fn render_why_lagging(
    body: &mut String,
    console: &Console,
    description: &ConsumerGroupDescription,
    rows: &[OffsetRow],
) {
    let group = &description.group_id;
    let facts: Vec<PartitionFacts> = rows
        .iter()
        .map(|row| PartitionFacts {
            partition: row.partition.clone(),
            lag: row.lag(),
            produce_rate: console
                .sampler
                .partition_rate(&row.partition.topic, row.partition.partition),
            consume_rate: console.sampler.consume_rate(
                group,
                &row.partition.topic,
                row.partition.partition,
            ),
            owner: (row.consumer_id != "-").then(|| row.consumer_id.clone()),
        })
        .collect();
    let members: Vec<(String, String)> = description
        .members
        .iter()
        .map(|m| {
            (
                m.member_id.clone(),
                member_label(&m.client_id, &m.member_id),
            )
        })
        .collect();
    let analysis = analyze_lag(&facts, &members);
    let _ = write!(
        body,
        "<section id=\"why-lagging\"><h2>Why is it lagging?</h2>\
         <p>{} records behind; its partitions receive {} and it consumes {} (over the last \
         minute of samples).</p><ul id=\"lag-findings\">",
        analysis.total_lag,
        html::rate(analysis.produce_rate),
        html::rate(analysis.consume_rate)
    );
    for finding in &analysis.findings {
        let _ = write!(
            body,
            "<li class=\"finding\" data-kind=\"{}\">{} {}</li>",
            finding_code(finding.kind),
            html::badge(finding.kind.title(), finding.kind.class()),
            esc(&finding.text)
        );
    }
    body.push_str("</ul>");
    if !facts.is_empty() {
        body.push_str(
            "<h3>By partition</h3><table id=\"lag-partitions\"><thead><tr>\
             <th scope=\"col\">Partition</th><th scope=\"col\" class=\"num\">Lag</th>\
             <th scope=\"col\" class=\"num\">Produce rate</th>\
             <th scope=\"col\" class=\"num\">Consume rate</th><th scope=\"col\">Owner</th>\
             </tr></thead><tbody>",
        );
        for fact in &facts {
            let owner = fact.owner.as_deref().map_or("—".to_string(), |id| {
                members
                    .iter()
                    .find(|(m, _)| m == id)
                    .map_or(id.to_string(), |(_, label)| label.clone())
            });
            let _ = write!(
                body,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td>{}</td></tr>",
                esc(&fact.partition.to_string()),
                show(fact.lag),
                html::rate(fact.produce_rate),
                html::rate(fact.consume_rate),
                esc(&owner)
            );
        }
        body.push_str("</tbody></table>");
    }
    if !analysis.members.is_empty() {
        body.push_str(
            "<h3>By member</h3><table id=\"lag-members\"><thead><tr>\
             <th scope=\"col\">Member</th><th scope=\"col\" class=\"num\">Partitions</th>\
             <th scope=\"col\" class=\"num\">Produce rate</th>\
             <th scope=\"col\" class=\"num\">Consume rate</th>\
             <th scope=\"col\" class=\"num\">Consume rate per partition</th>\
             <th scope=\"col\" class=\"num\">Lag</th></tr></thead><tbody>",
        );
        for member in &analysis.members {
            let per_partition = member
                .consume_rate
                .filter(|_| member.partitions > 0)
                .map(|r| r / member.partitions as f64);
            let _ = write!(
                body,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                esc(&member.label),
                member.partitions,
                html::rate(member.produce_rate),
                html::rate(member.consume_rate),
                html::rate(per_partition),
                member.lag
            );
        }
        body.push_str("</tbody></table>");
    }
    body.push_str("</section>");
}

fn finding_code(kind: FindingKind) -> &'static str {
    match kind {
        FindingKind::NotLagging => "not-lagging",
        FindingKind::Stopped => "stopped",
        FindingKind::HotPartition => "hot-partition",
        FindingKind::SlowMember => "slow-member",
        FindingKind::Growing => "growing",
        FindingKind::KeepingUp => "keeping-up",
        FindingKind::Unknown => "unknown",
    }
}

// ---------------------------------------------------------------------------------------
// Reset offsets
// ---------------------------------------------------------------------------------------

/// Where a reset moves each partition (`kafka-consumer-groups.sh --reset-offsets`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scenario {
    Earliest,
    Latest,
    /// This offset, kept within the log.
    Offset(i64),
    /// The committed offset moved by N, kept within the log.
    ShiftBy(i64),
    /// The first offset at or after this time (ms since the epoch): `--to-datetime`, and
    /// `--by-duration` (now minus the duration).
    Timestamp(i64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResetRequest {
    /// `None`: every partition the group has committed an offset for.
    pub topic: Option<String>,
    pub scenario: Scenario,
}

/// A whole number from a JSON field: a number, or a string of digits; `None` when absent,
/// null or empty.
fn int_field(body: &Value, name: &str) -> Result<Option<i64>, ApiError> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .map(Some)
            .ok_or_else(|| ApiError::field(name, format!("{n} is not a whole number"))),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| ApiError::field(name, format!("'{s}' is not a whole number"))),
        Some(other) => Err(ApiError::field(
            name,
            format!("{other} is not a whole number"),
        )),
    }
}

fn text_field<'a>(body: &'a Value, name: &str) -> Result<&'a str, ApiError> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s.trim()),
        Some(_) => Err(ApiError::field(name, "expected text")),
    }
}

/// `2026-01-31T12:00`, `2026-01-31T12:00:00` and `2026-01-31 12:00:00Z` as Kafka's
/// `yyyy-MM-ddTHH:mm:ss.SSS[zone]`, which [`parse_datetime`] reads.
pub(crate) fn normalize_datetime(text: &str) -> String {
    let text = text.trim();
    let Some(split) = text.find(['T', 't', ' ']) else {
        return text.to_string();
    };
    let (date, time) = (&text[..split], &text[split + 1..]);
    let zone_start = time.find(['Z', 'z', '+', '-']).unwrap_or(time.len());
    let (clock, zone) = time.split_at(zone_start);
    let zone = if zone.eq_ignore_ascii_case("z") {
        "Z"
    } else {
        zone
    };
    let clock = match (clock.matches(':').count(), clock.contains('.')) {
        (1, false) => format!("{clock}:00.000"),
        (2, false) => format!("{clock}.000"),
        _ => clock.to_string(),
    };
    format!("{date}T{clock}{zone}")
}

/// A duration in milliseconds: ISO 8601 as Java's `Duration.parse` reads it (`PT30M`,
/// `P1DT2H`, `PT1.5S`), or a number with a unit (`30m`, `2h`, `1d`, `45s`).
pub(crate) fn parse_duration(text: &str) -> Result<i64, String> {
    let text = text.trim();
    let invalid = || {
        format!(
            "'{text}' is not a duration: use ISO 8601 (PT30M, PT1H, P1DT12H) or a number \
             with s, m, h or d (90m)"
        )
    };
    if text.is_empty() {
        return Err("give a duration (PT1H, 30m, 1d)".to_string());
    }
    let upper = text.to_ascii_uppercase();
    if let Some(rest) = upper.strip_prefix('P') {
        let (days_part, time_part) = match rest.split_once('T') {
            Some((d, t)) => (d, Some(t)),
            None => (rest, None),
        };
        let mut ms: f64 = 0.0;
        let mut any = false;
        if !days_part.is_empty() {
            let days = days_part.strip_suffix('D').ok_or_else(invalid)?;
            let days: u64 = days.parse().map_err(|_| invalid())?;
            ms += days as f64 * 86_400_000.0;
            any = true;
        }
        if let Some(time) = time_part {
            if time.is_empty() {
                return Err(invalid());
            }
            let mut number = String::new();
            let mut seen = String::new();
            for c in time.chars() {
                match c {
                    '0'..='9' | '.' => number.push(c),
                    'H' | 'M' | 'S' => {
                        if number.is_empty()
                            || seen.contains(c)
                            || (c != 'S' && number.contains('.'))
                        {
                            return Err(invalid());
                        }
                        let value: f64 = number.parse().map_err(|_| invalid())?;
                        ms += value
                            * match c {
                                'H' => 3_600_000.0,
                                'M' => 60_000.0,
                                _ => 1_000.0,
                            };
                        number.clear();
                        seen.push(c);
                        any = true;
                    }
                    _ => return Err(invalid()),
                }
            }
            if !number.is_empty() {
                return Err(invalid());
            }
        }
        if !any || ms > i64::MAX as f64 / 2.0 {
            return Err(invalid());
        }
        return Ok(ms as i64);
    }
    let unit_at = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(invalid)?;
    let (number, unit) = text.split_at(unit_at);
    let number: i64 = number.parse().map_err(|_| invalid())?;
    let factor = match unit.trim() {
        "s" | "sec" | "secs" => 1_000,
        "m" | "min" | "mins" => 60_000,
        "h" | "hour" | "hours" => 3_600_000,
        "d" | "day" | "days" => 86_400_000,
        _ => return Err(invalid()),
    };
    number.checked_mul(factor).ok_or_else(invalid)
}

/// The reset form's fields: `reset_topic`, `scenario` (`to-earliest`, `to-latest`,
/// `to-offset` with `offset`, `to-datetime` with `datetime`, `shift-by` with `shift`,
/// `by-duration` with `duration`). `now_ms` anchors `by-duration`.
pub(crate) fn parse_reset(body: &Value, now_ms: i64) -> Result<ResetRequest, ApiError> {
    let topic = text_field(body, "reset_topic")?;
    let topic = (!topic.is_empty()).then(|| topic.to_string());
    let scenario = match text_field(body, "scenario")? {
        "to-earliest" => Scenario::Earliest,
        "to-latest" => Scenario::Latest,
        "to-offset" => Scenario::Offset(
            int_field(body, "offset")?
                .ok_or_else(|| ApiError::field("offset", "give the offset to move to"))?,
        ),
        "shift-by" => Scenario::ShiftBy(int_field(body, "shift")?.ok_or_else(|| {
            ApiError::field("shift", "give how many records to move by (negative: back)")
        })?),
        "to-datetime" => {
            let text = text_field(body, "datetime")?;
            if text.is_empty() {
                return Err(ApiError::field(
                    "datetime",
                    "give a date and time, e.g. 2026-01-31T12:00:00.000 (UTC)",
                ));
            }
            let ms = parse_datetime(&normalize_datetime(text)).map_err(|error| {
                ApiError::field(
                    "datetime",
                    format!("{error:#} (e.g. 2026-01-31T12:00:00.000, UTC unless a zone is given)"),
                )
            })?;
            Scenario::Timestamp(ms)
        }
        "by-duration" => {
            let ms = parse_duration(text_field(body, "duration")?)
                .map_err(|error| ApiError::field("duration", error))?;
            Scenario::Timestamp(now_ms.saturating_sub(ms))
        }
        "" => return Err(ApiError::field("scenario", "choose where to reset to")),
        other => {
            return Err(ApiError::field(
                "scenario",
                format!(
                    "unknown scenario '{other}' (to-earliest, to-latest, to-offset, \
                     to-datetime, shift-by, by-duration)"
                ),
            ));
        }
    };
    Ok(ResetRequest { topic, scenario })
}

/// One partition of a reset plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResetRow {
    pub partition: TopicPartition,
    pub current: Option<i64>,
    pub new: i64,
    /// Why the new offset is not the one asked for (kept within the log, or no record
    /// after the time).
    pub note: Option<String>,
}

/// The new offset of every partition, as Kafka computes it: `bounds` are each
/// partition's (log start, log end) offsets, `by_time` the offsets ListOffsets found for
/// a timestamp (-1: no record at or after it).
pub(crate) fn plan_reset(
    scenario: Scenario,
    partitions: &BTreeSet<TopicPartition>,
    committed: &BTreeMap<TopicPartition, i64>,
    bounds: &BTreeMap<TopicPartition, (i64, i64)>,
    by_time: &BTreeMap<TopicPartition, i64>,
) -> Result<Vec<ResetRow>, ApiError> {
    let clamp = |tp: &TopicPartition, offset: i64, start: i64, end: i64| {
        if offset > end {
            (
                end,
                Some(format!(
                    "{offset} is past the log end offset of {tp}: set to {end}"
                )),
            )
        } else if offset < start {
            (
                start,
                Some(format!(
                    "{offset} is before the log start offset of {tp}: set to {start}"
                )),
            )
        } else {
            (offset, None)
        }
    };
    let mut rows = Vec::with_capacity(partitions.len());
    for tp in partitions {
        let &(start, end) = bounds.get(tp).ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_GATEWAY,
                format!("the cluster gave no log start and end offsets of {tp}"),
            )
        })?;
        let current = committed.get(tp).copied();
        let (new, note) = match scenario {
            Scenario::Earliest => (start, None),
            Scenario::Latest => (end, None),
            Scenario::Offset(offset) => clamp(tp, offset, start, end),
            Scenario::ShiftBy(shift) => {
                let Some(current) = current else {
                    return Err(ApiError::field(
                        "shift",
                        format!(
                            "Cannot shift offset for partition {tp} since there is no current \
                             committed offset"
                        ),
                    ));
                };
                clamp(tp, current.saturating_add(shift), start, end)
            }
            Scenario::Timestamp(_) => match by_time.get(tp) {
                Some(&offset) if offset >= 0 => (offset, None),
                _ => (
                    end,
                    Some("no record at or after that time: the log end offset".to_string()),
                ),
            },
        };
        rows.push(ResetRow {
            partition: tp.clone(),
            current,
            new,
            note,
        });
    }
    Ok(rows)
}

/// The reset plan as a table.
fn render_plan(rows: &[ResetRow]) -> String {
    let mut out = String::from(
        "<table id=\"reset-plan\"><thead><tr><th scope=\"col\">Topic</th>\
         <th scope=\"col\" class=\"num\">Partition</th>\
         <th scope=\"col\" class=\"num\">Current offset</th>\
         <th scope=\"col\" class=\"num\">New offset</th>\
         <th scope=\"col\" class=\"num\">Change</th><th scope=\"col\">Note</th></tr></thead><tbody>",
    );
    for row in rows {
        let change = row.current.map_or("—".to_string(), |c| {
            let d = row.new - c;
            if d > 0 {
                format!("+{d}")
            } else {
                d.to_string()
            }
        });
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(&row.partition.topic),
            row.partition.partition,
            show(row.current),
            row.new,
            change,
            esc(row.note.as_deref().unwrap_or(""))
        );
    }
    out.push_str("</tbody></table>");
    out
}

fn parse_body(bytes: &Bytes) -> Result<Value, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|error| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("the request is not JSON: {error}"),
        )
    })?;
    if value.is_object() {
        Ok(value)
    } else {
        Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "the request must be a JSON object",
        ))
    }
}

/// A reset plan, with the group's state and member count at the time.
struct Plan {
    rows: Vec<ResetRow>,
    state: String,
    members: usize,
}

/// The offsets `specs` ask for, or an error naming the first partition without one.
async fn offsets(
    console: &Console,
    partitions: &BTreeSet<TopicPartition>,
    spec: OffsetSpec,
    what: &str,
) -> Result<BTreeMap<TopicPartition, i64>, ApiError> {
    let specs = partitions.iter().map(|tp| (tp.clone(), spec)).collect();
    let found = console.admin.list_offsets(&specs).await?;
    partitions
        .iter()
        .map(|tp| match found.get(tp) {
            Some(Ok(info)) => Ok((tp.clone(), info.offset)),
            Some(Err(error)) => Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("cannot read the {what} of {tp}: {error}"),
            )
            .on("reset_topic")),
            None => Err(ApiError::new(
                StatusCode::BAD_GATEWAY,
                format!("the cluster gave no {what} of {tp}"),
            )),
        })
        .collect()
}

async fn build_plan(console: &Console, group: &str, body: &Bytes) -> Result<Plan, ApiError> {
    let body = parse_body(body)?;
    let request = parse_reset(&body, sampler::now_ms())?;
    // Kafka resets a group it does not know as an inactive one (it creates the offsets).
    let (state, members) = match console.admin.describe_consumer_group(group).await {
        Ok(description) => (state_name(&description.state), description.members.len()),
        Err(ClientError::Api(error)) if error.code == GROUP_ID_NOT_FOUND => ("Dead".to_string(), 0),
        Err(error) => return Err(error.into()),
    };
    let committed: BTreeMap<TopicPartition, i64> = console
        .admin
        .list_group_offsets(group)
        .await?
        .into_iter()
        .map(|(tp, offset)| (tp, offset.offset))
        .collect();
    let partitions: BTreeSet<TopicPartition> = match &request.topic {
        None => {
            if committed.is_empty() {
                return Err(ApiError::field(
                    "reset_topic",
                    "the group has committed no offsets: choose a topic to reset",
                ));
            }
            committed.keys().cloned().collect()
        }
        Some(topic) => partitions_to_reset(&console.admin, std::slice::from_ref(topic))
            .await
            .map_err(|error| ApiError::field("reset_topic", format!("{error:#}")))?,
    };
    if partitions.is_empty() {
        return Err(ApiError::field("reset_topic", "no partition to reset"));
    }
    let earliest = offsets(
        console,
        &partitions,
        OffsetSpec::Earliest,
        "log start offset",
    )
    .await?;
    let latest = offsets(console, &partitions, OffsetSpec::Latest, "log end offset").await?;
    let bounds = earliest
        .iter()
        .filter_map(|(tp, start)| latest.get(tp).map(|end| (tp.clone(), (*start, *end))))
        .collect();
    let by_time = match request.scenario {
        Scenario::Timestamp(ms) => {
            offsets(
                console,
                &partitions,
                OffsetSpec::Timestamp(ms),
                "offset at that time",
            )
            .await?
        }
        _ => BTreeMap::new(),
    };
    let rows = plan_reset(request.scenario, &partitions, &committed, &bounds, &by_time)?;
    Ok(Plan {
        rows,
        state,
        members,
    })
}

fn is_inactive(state: &str) -> bool {
    state == "Empty" || state == "Dead"
}

fn active_message(group: &str, state: &str, members: usize) -> String {
    format!(
        "Assignments can only be reset if the group '{group}' is inactive, but the current \
         state is {state}: the group has {}; stop {} first.",
        plural(members, "active member", "active members"),
        if members == 1 { "it" } else { "them" }
    )
}

/// POST /api/groups/{group}/offsets/preview: the plan, nothing changed (a dry run).
async fn preview_reset(
    State(console): State<Arc<Console>>,
    Path(group): Path<String>,
    body: Bytes,
) -> ApiResult {
    let plan = build_plan(&console, &group, &body).await?;
    let mut html = String::new();
    if !is_inactive(&plan.state) {
        let _ = write!(
            html,
            "<p class=\"error\" role=\"alert\">{} Apply will be refused until then.</p>",
            esc(&active_message(&group, &plan.state, plan.members))
        );
    }
    let _ = write!(
        html,
        "<p>Preview (dry run) for {}: nothing was changed.</p>",
        plural(plan.rows.len(), "partition", "partitions")
    );
    html.push_str(&render_plan(&plan.rows));
    Ok(axum::Json(json!({
        "message": format!("Preview of {}: nothing was changed.", plural(plan.rows.len(), "partition", "partitions")),
        "html": html,
        "offsets": plan.rows.iter().map(|r| json!({
            "topic": r.partition.topic,
            "partition": r.partition.partition,
            "current": r.current,
            "new": r.new,
            "note": r.note,
        })).collect::<Vec<_>>(),
    })))
}

/// POST /api/groups/{group}/offsets/reset: commits the plan, if the group is inactive.
async fn apply_reset(
    State(console): State<Arc<Console>>,
    Path(group): Path<String>,
    body: Bytes,
) -> ApiResult {
    let plan = build_plan(&console, &group, &body).await?;
    if !is_inactive(&plan.state) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            active_message(&group, &plan.state, plan.members),
        ));
    }
    let offsets: BTreeMap<TopicPartition, i64> = plan
        .rows
        .iter()
        .map(|r| (r.partition.clone(), r.new))
        .collect();
    let results = console.admin.alter_group_offsets(&group, &offsets).await?;
    let failures: Vec<String> = results
        .iter()
        .filter_map(|(tp, result)| result.as_ref().err().map(|error| format!("{tp}: {error}")))
        .collect();
    let _ = sampler::refresh(&console).await;
    if !failures.is_empty() {
        let committed = results.len() - failures.len();
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "the coordinator refused {} of {} partitions ({committed} committed): {}. If \
                 a consumer joined the group meanwhile, stop it first.",
                failures.len(),
                results.len(),
                failures.join("; ")
            ),
        ));
    }
    Ok(axum::Json(json!({
        "message": format!(
            "Committed new offsets for {} of group '{group}'.",
            plural(plan.rows.len(), "partition", "partitions")
        ),
        "html": render_plan(&plan.rows),
    })))
}

fn render_reset_form(
    body: &mut String,
    description: &ConsumerGroupDescription,
    state: &str,
    rows: &[OffsetRow],
    snapshot: Option<&Snapshot>,
) {
    let group = &description.group_id;
    let base = format!("/api/groups/{}/offsets", seg(group));
    body.push_str("<section id=\"reset-offsets\"><h2>Reset offsets</h2>");
    if !is_inactive(state) {
        let _ = write!(
            body,
            "<p class=\"muted\">The group is {} with {}: a preview works, but Kafka resets \
             only an inactive group, so Apply is refused until its consumers stop.</p>",
            esc(state),
            plural(description.members.len(), "member", "members")
        );
    }
    let group_topics: BTreeSet<&str> = rows.iter().map(|r| r.partition.topic.as_str()).collect();
    let mut options: Vec<(String, String)> = vec![(
        String::new(),
        "All the group's topics (its committed partitions)".to_string(),
    )];
    options.extend(group_topics.iter().map(|t| (t.to_string(), t.to_string())));
    if let Some(snapshot) = snapshot {
        options.extend(
            snapshot
                .topics
                .iter()
                .filter(|t| !t.internal && !group_topics.contains(t.name.as_str()))
                .map(|t| {
                    (
                        t.name.clone(),
                        format!("{} (not consumed by the group)", t.name),
                    )
                }),
        );
    }
    let options: Vec<(&str, &str)> = options
        .iter()
        .map(|(v, l)| (v.as_str(), l.as_str()))
        .collect();
    body.push_str(&html::form_start(
        &format!("{base}/reset"),
        "POST",
        OnSuccess::Reload,
        "Reset offsets",
    ));
    body.push_str(&html::field(
        "reset_topic",
        "Topic",
        &html::select("reset_topic", &options, ""),
        "",
    ));
    body.push_str(&html::field(
        "scenario",
        "Reset to",
        &html::select(
            "scenario",
            &[
                ("to-earliest", "The earliest offset (to-earliest)"),
                ("to-latest", "The latest offset (to-latest)"),
                ("to-offset", "An offset (to-offset)"),
                ("to-datetime", "A date and time (to-datetime)"),
                ("shift-by", "The current offset shifted by N (shift-by)"),
                ("by-duration", "A duration ago (by-duration)"),
            ],
            "to-earliest",
        ),
        "",
    ));
    body.push_str(&html::field(
        "offset",
        "Offset (to-offset)",
        &html::number_input("offset", "", "step=\"1\" aria-describedby=\"h-offset\""),
        "Kept within each partition's log start and end offsets, as Kafka does.",
    ));
    body.push_str(&html::field(
        "datetime",
        "Date and time (to-datetime)",
        &html::text_input(
            "datetime",
            "",
            "placeholder=\"2026-01-31T12:00:00.000\" autocomplete=\"off\" \
             aria-describedby=\"h-datetime\"",
        ),
        "ISO 8601, UTC unless a zone is given (Z, +02:00): the first offset at or after it.",
    ));
    body.push_str(&html::field(
        "shift",
        "Shift by (shift-by)",
        &html::number_input("shift", "", "step=\"1\" aria-describedby=\"h-shift\""),
        "Records to move each committed offset by; negative moves back.",
    ));
    body.push_str(&html::field(
        "duration",
        "Duration (by-duration)",
        &html::text_input(
            "duration",
            "",
            "placeholder=\"PT1H\" autocomplete=\"off\" aria-describedby=\"h-duration\"",
        ),
        "How long ago: ISO 8601 (PT30M, PT1H, P1D) or 30m, 2h, 1d.",
    ));
    let _ = write!(
        body,
        "<div class=\"actions\"><button type=\"submit\" class=\"secondary\" \
         id=\"reset-preview-button\" data-api=\"{}\" data-success=\"result:reset-preview\">\
         Preview</button><button type=\"submit\" id=\"reset-apply-button\">Apply</button></div>\
         <p class=\"form-error\" data-error-for=\"_form\" role=\"alert\"></p>\
         <p class=\"form-status\" role=\"status\"></p></form>\
         <div id=\"reset-preview\" aria-live=\"polite\"></div></section>",
        esc(&format!("{base}/preview"))
    );
}

// ---------------------------------------------------------------------------------------
// Delete
// ---------------------------------------------------------------------------------------

fn render_delete_form(body: &mut String, description: &ConsumerGroupDescription) {
    let group = &description.group_id;
    body.push_str("<section id=\"delete-group\"><h2>Delete the group</h2>");
    if !description.members.is_empty() {
        let _ = write!(
            body,
            "<p class=\"muted\">The group has {}: Kafka refuses to delete it \
             (NON_EMPTY_GROUP) until they stop.</p>",
            plural(description.members.len(), "active member", "active members")
        );
    }
    body.push_str(&html::form_start(
        &format!("/api/groups/{}/delete", seg(group)),
        "POST",
        OnSuccess::Redirect,
        "Delete the group",
    ));
    body.push_str(&html::field(
        "confirm",
        "Type the group's name to confirm",
        &html::text_input(
            "confirm",
            "",
            "autocomplete=\"off\" spellcheck=\"false\" aria-describedby=\"h-confirm\"",
        ),
        "Deletes the group and every offset it committed.",
    ));
    body.push_str(&html::form_end("Delete group"));
    body.push_str("</section>");
}

/// POST /api/groups/{group}/delete with `confirm` equal to the group's name.
async fn delete_group(
    State(console): State<Arc<Console>>,
    Path(group): Path<String>,
    body: Bytes,
) -> ApiResult {
    let body = parse_body(&body)?;
    let confirm = text_field(&body, "confirm")?;
    if confirm != group {
        return Err(ApiError::field(
            "confirm",
            format!("type the group's name, '{group}', to confirm"),
        ));
    }
    let results = console
        .admin
        .delete_groups(std::slice::from_ref(&group))
        .await?;
    match results.get(&group) {
        Some(Ok(())) => {}
        Some(Err(error)) if error.code == NON_EMPTY_GROUP => {
            let mut api = ApiError::kafka(error);
            api.status = StatusCode::CONFLICT;
            api.message = format!(
                "NON_EMPTY_GROUP: {} The group has active members; stop them first.",
                error.message()
            );
            return Err(api);
        }
        Some(Err(error)) => {
            let mut api = ApiError::kafka(error);
            api.message = format!("{}: {}", error.code, error.message());
            return Err(api);
        }
        None => {
            return Err(ApiError::new(
                StatusCode::BAD_GATEWAY,
                format!("the cluster gave no result for group '{group}'"),
            ));
        }
    }
    let _ = sampler::refresh(&console).await;
    Ok(axum::Json(json!({
        "message": format!("Deleted group '{group}'."),
        "redirect": "/groups",
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition::new(topic, partition)
    }

    fn field_of(error: ApiError) -> (Option<String>, String) {
        (error.field, error.message)
    }

    #[test]
    fn reset_requests_name_the_field_in_error() {
        let now = 1_000_000_000;
        let ok = |body: Value| parse_reset(&body, now).unwrap();
        assert_eq!(
            ok(json!({"reset_topic": "", "scenario": "to-earliest"})),
            ResetRequest {
                topic: None,
                scenario: Scenario::Earliest
            }
        );
        assert_eq!(
            ok(json!({"reset_topic": "orders", "scenario": "to-offset", "offset": 42})).scenario,
            Scenario::Offset(42)
        );
        assert_eq!(
            ok(json!({"scenario": "shift-by", "shift": "-5"})).scenario,
            Scenario::ShiftBy(-5)
        );
        assert_eq!(
            ok(json!({"scenario": "to-datetime", "datetime": "1970-01-01T00:00:01Z"})).scenario,
            Scenario::Timestamp(1000)
        );
        assert_eq!(
            ok(json!({"scenario": "by-duration", "duration": "PT1M"})).scenario,
            Scenario::Timestamp(now - 60_000)
        );
        let err = |body: Value| field_of(parse_reset(&body, now).unwrap_err());
        assert_eq!(
            err(json!({"scenario": "to-offset"})).0.as_deref(),
            Some("offset")
        );
        assert_eq!(
            err(json!({"scenario": "to-offset", "offset": 1.5}))
                .0
                .as_deref(),
            Some("offset")
        );
        assert_eq!(
            err(json!({"scenario": "shift-by", "shift": "x"}))
                .0
                .as_deref(),
            Some("shift")
        );
        assert_eq!(
            err(json!({"scenario": "to-datetime", "datetime": "yesterday"}))
                .0
                .as_deref(),
            Some("datetime")
        );
        assert_eq!(
            err(json!({"scenario": "to-datetime", "datetime": "2023-02-29T00:00"}))
                .0
                .as_deref(),
            Some("datetime")
        );
        assert_eq!(
            err(json!({"scenario": "by-duration", "duration": "soon"}))
                .0
                .as_deref(),
            Some("duration")
        );
        assert_eq!(
            err(json!({"scenario": "to-moon"})).0.as_deref(),
            Some("scenario")
        );
        assert_eq!(err(json!({})).0.as_deref(), Some("scenario"));
        assert_eq!(
            err(json!({"reset_topic": 3, "scenario": "to-latest"}))
                .0
                .as_deref(),
            Some("reset_topic")
        );
    }

    #[test]
    fn datetimes_without_seconds_or_millis_are_completed() {
        assert_eq!(
            normalize_datetime("2026-01-31T12:00"),
            "2026-01-31T12:00:00.000"
        );
        assert_eq!(
            normalize_datetime("2026-01-31 12:00:05"),
            "2026-01-31T12:00:05.000"
        );
        assert_eq!(
            normalize_datetime("2026-01-31T12:00:05z"),
            "2026-01-31T12:00:05.000Z"
        );
        assert_eq!(
            normalize_datetime("2026-01-31T12:00+02:00"),
            "2026-01-31T12:00:00.000+02:00"
        );
        assert_eq!(
            normalize_datetime("2026-01-31T12:00:05.250Z"),
            "2026-01-31T12:00:05.250Z"
        );
        assert_eq!(
            parse_datetime(&normalize_datetime("2024-02-29T14:34:56+02:00")).unwrap(),
            1_709_210_096_000
        );
    }

    #[test]
    fn durations_read_iso_8601_and_short_forms() {
        assert_eq!(parse_duration("PT30M"), Ok(1_800_000));
        assert_eq!(parse_duration("pt1h"), Ok(3_600_000));
        assert_eq!(parse_duration("P1DT2H"), Ok(93_600_000));
        assert_eq!(parse_duration("P2D"), Ok(172_800_000));
        assert_eq!(parse_duration("PT1.5S"), Ok(1_500));
        assert_eq!(parse_duration("90m"), Ok(5_400_000));
        assert_eq!(parse_duration("1d"), Ok(86_400_000));
        assert_eq!(parse_duration("45 s"), Ok(45_000));
        for bad in [
            "", "P", "PT", "PT1", "PT1X", "P1H", "PT1M1M", "PT1.5H", "10", "5w", "m",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    fn bounds(entries: &[(TopicPartition, i64, i64)]) -> BTreeMap<TopicPartition, (i64, i64)> {
        entries
            .iter()
            .map(|(tp, s, e)| (tp.clone(), (*s, *e)))
            .collect()
    }

    #[test]
    fn resets_are_computed_and_kept_within_the_log_as_kafka_does() {
        let partitions: BTreeSet<TopicPartition> = [tp("a", 0), tp("a", 1)].into();
        let committed = BTreeMap::from([(tp("a", 0), 50), (tp("a", 1), 5)]);
        let bounds = bounds(&[(tp("a", 0), 10, 100), (tp("a", 1), 0, 20)]);
        let none = BTreeMap::new();
        let new = |scenario, by_time: &BTreeMap<TopicPartition, i64>| {
            plan_reset(scenario, &partitions, &committed, &bounds, by_time)
                .unwrap()
                .iter()
                .map(|r| (r.new, r.note.is_some()))
                .collect::<Vec<_>>()
        };
        assert_eq!(new(Scenario::Earliest, &none), [(10, false), (0, false)]);
        assert_eq!(new(Scenario::Latest, &none), [(100, false), (20, false)]);
        assert_eq!(new(Scenario::Offset(15), &none), [(15, false), (15, false)]);
        assert_eq!(new(Scenario::Offset(5), &none), [(10, true), (5, false)]);
        assert_eq!(new(Scenario::Offset(500), &none), [(100, true), (20, true)]);
        assert_eq!(new(Scenario::ShiftBy(-10), &none), [(40, false), (0, true)]);
        assert_eq!(new(Scenario::ShiftBy(70), &none), [(100, true), (20, true)]);
        let by_time = BTreeMap::from([(tp("a", 0), 60), (tp("a", 1), -1)]);
        assert_eq!(
            new(Scenario::Timestamp(1), &by_time),
            [(60, false), (20, true)]
        );
        let rows = plan_reset(Scenario::Earliest, &partitions, &committed, &bounds, &none).unwrap();
        assert_eq!(rows[0].current, Some(50));
        assert!(render_plan(&rows).contains("<td class=\"num\">-40</td>"));
    }

    #[test]
    fn shifting_needs_a_committed_offset() {
        let partitions: BTreeSet<TopicPartition> = [tp("a", 0)].into();
        let bounds = bounds(&[(tp("a", 0), 0, 10)]);
        let error = plan_reset(
            Scenario::ShiftBy(1),
            &partitions,
            &BTreeMap::new(),
            &bounds,
            &BTreeMap::new(),
        )
        .unwrap_err();
        assert_eq!(error.field.as_deref(), Some("shift"));
        assert!(
            error.message.contains("no current committed offset"),
            "{}",
            error.message
        );
        // A partition without bounds is the cluster's fault, not the form's.
        let error = plan_reset(
            Scenario::Latest,
            &[tp("b", 0)].into(),
            &BTreeMap::new(),
            &bounds,
            &BTreeMap::new(),
        )
        .unwrap_err();
        assert_eq!(error.field, None);
    }

    fn fact(
        topic: &str,
        partition: i32,
        lag: i64,
        produce: f64,
        consume: f64,
        owner: &str,
    ) -> PartitionFacts {
        PartitionFacts {
            partition: tp(topic, partition),
            lag: Some(lag),
            produce_rate: Some(produce),
            consume_rate: Some(consume),
            owner: (!owner.is_empty()).then(|| owner.to_string()),
        }
    }

    fn members(ids: &[&str]) -> Vec<(String, String)> {
        ids.iter()
            .map(|id| (id.to_string(), format!("client-{id}")))
            .collect()
    }

    fn kinds(analysis: &LagAnalysis) -> Vec<FindingKind> {
        analysis.findings.iter().map(|f| f.kind).collect()
    }

    #[test]
    fn a_group_at_the_log_end_is_not_lagging() {
        let facts = [
            fact("t", 0, 0, 10.0, 10.0, "m1"),
            fact("t", 1, 0, 10.0, 10.0, "m2"),
        ];
        let analysis = analyze_lag(&facts, &members(&["m1", "m2"]));
        assert_eq!(kinds(&analysis), [FindingKind::NotLagging]);
        assert_eq!(analysis.total_lag, 0);
        assert_eq!(analysis.members[0].partitions, 1);
        assert_eq!(kinds(&analyze_lag(&[], &[])), [FindingKind::Unknown]);
    }

    #[test]
    fn a_hot_partition_is_found() {
        let facts = [
            fact("orders", 0, 9_000, 90.0, 60.0, "m1"),
            fact("orders", 1, 100, 5.0, 5.0, "m2"),
            fact("orders", 2, 100, 5.0, 5.0, "m3"),
        ];
        let analysis = analyze_lag(&facts, &members(&["m1", "m2", "m3"]));
        assert!(
            kinds(&analysis).contains(&FindingKind::HotPartition),
            "{analysis:?}"
        );
        let hot = &analysis.findings[0];
        assert!(
            hot.text.starts_with("orders-0 receives 90.0/s, 2.7×"),
            "{}",
            hot.text
        );
        assert!(hot.text.contains("97% of the lag"), "{}", hot.text);
        // It also makes the group fall behind.
        assert!(kinds(&analysis).contains(&FindingKind::Growing));
        // m1 consumes 60/s per partition: fast, not slow.
        assert!(!kinds(&analysis).contains(&FindingKind::SlowMember));
    }

    #[test]
    fn a_slow_member_is_found() {
        let facts = [
            fact("t", 0, 5_000, 20.0, 2.0, "slow"),
            fact("t", 1, 5_000, 20.0, 2.0, "slow"),
            fact("t", 2, 10, 20.0, 20.0, "fast"),
            fact("t", 3, 10, 20.0, 20.0, "fast"),
        ];
        let analysis = analyze_lag(&facts, &members(&["slow", "fast"]));
        let kinds = kinds(&analysis);
        assert!(kinds.contains(&FindingKind::SlowMember), "{analysis:?}");
        assert!(!kinds.contains(&FindingKind::HotPartition));
        let slow = analysis
            .findings
            .iter()
            .find(|f| f.kind == FindingKind::SlowMember)
            .unwrap();
        assert!(
            slow.text
                .starts_with("client-slow consumes 2.0/s per partition against 20.0/s"),
            "{}",
            slow.text
        );
        assert_eq!(analysis.members[0].lag, 10_000);
        assert_eq!(analysis.members[0].consume_rate, Some(4.0));
    }

    #[test]
    fn lag_grows_when_more_is_produced_than_consumed() {
        let facts = [
            fact("t", 0, 500, 100.0, 60.0, "m1"),
            fact("t", 1, 500, 100.0, 60.0, "m1"),
        ];
        let analysis = analyze_lag(&facts, &members(&["m1"]));
        assert_eq!(kinds(&analysis), [FindingKind::Growing]);
        let text = &analysis.findings[0].text;
        assert!(
            text.contains("receive 200/s in all but it consumes 120/s"),
            "{text}"
        );
        assert!(text.contains("1 member for 2 partitions"), "{text}");
    }

    #[test]
    fn a_stopped_consumer_is_found() {
        let facts = [
            fact("t", 0, 300, 5.0, 0.0, "m1"),
            fact("t", 1, 0, 5.0, 5.0, "m2"),
        ];
        let analysis = analyze_lag(&facts, &members(&["m1", "m2"]));
        assert_eq!(kinds(&analysis)[0], FindingKind::Stopped);
        let text = &analysis.findings[0].text;
        assert!(text.contains("t-0 has not moved"), "{text}");
        assert!(text.contains("client-m1"), "{text}");
        // No member at all: nothing consumes, whether or not the rates are known yet.
        let mut unsampled = fact("t", 1, 200, 5.0, 0.0, "");
        unsampled.consume_rate = None;
        let facts = [fact("t", 0, 300, 5.0, 0.0, ""), unsampled];
        let analysis = analyze_lag(&facts, &[]);
        assert_eq!(kinds(&analysis), [FindingKind::Stopped]);
        assert!(analysis.findings[0].text.contains("no active members"));
        assert!(
            analysis.findings[0]
                .text
                .contains("t-0, t-1 (500 records behind)")
        );
        assert!(analysis.findings[0].text.contains("the lag grows"));
        // No member, but the committed offsets advance (a client that assigns and
        // commits without joining): not stopped, only too slow.
        let facts = [fact("t", 0, 300, 20.0, 4.0, "")];
        let analysis = analyze_lag(&facts, &[]);
        assert!(
            !kinds(&analysis).contains(&FindingKind::Stopped),
            "{analysis:?}"
        );
        assert!(
            kinds(&analysis).contains(&FindingKind::Growing),
            "{analysis:?}"
        );
    }

    #[test]
    fn a_group_that_keeps_up_or_lacks_samples_says_so() {
        let facts = [fact("t", 0, 1_000, 10.0, 20.0, "m1")];
        let analysis = analyze_lag(&facts, &members(&["m1"]));
        assert_eq!(kinds(&analysis), [FindingKind::KeepingUp]);
        assert!(
            analysis.findings[0]
                .text
                .contains("catches up in about 2 min")
        );
        let unknown = PartitionFacts {
            partition: tp("t", 0),
            lag: Some(10),
            produce_rate: None,
            consume_rate: None,
            owner: Some("m1".to_string()),
        };
        assert_eq!(
            kinds(&analyze_lag(&[unknown], &members(&["m1"]))),
            [FindingKind::Unknown]
        );
    }

    #[test]
    fn member_labels_use_the_end_of_the_member_id() {
        assert_eq!(
            member_label("app", "app-8bc5341e-04b6-488f-99dc-51465e2f1b38"),
            "app (member …5e2f1b38)"
        );
        assert_eq!(member_label("app", ""), "app");
    }
}
