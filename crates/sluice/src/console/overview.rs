//! The Overview page: the cluster id, the brokers (rack, endpoints, leaders, disk use),
//! the metadata quorum (leader, voters, lag) and the guide's health signals at a glance,
//! coloured by the guide's thresholds.

use std::fmt::Write;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;

use super::html::{self, Nav, esc};
use super::sampler::{self, Snapshot};
use super::state::Console;

pub fn routes() -> Router<Arc<Console>> {
    Router::new().route("/", get(overview))
}

/// A health signal's colour by the guide's thresholds: every one is healthy at one value
/// (UnderReplicatedPartitions 0, OfflinePartitionsCount 0, ActiveControllerCount 1) and
/// alerts at any other.
fn health(value: usize, healthy: usize) -> &'static str {
    if value == healthy { "ok" } else { "err" }
}

async fn overview(State(console): State<Arc<Console>>) -> Response {
    let snapshot = match sampler::current(&console).await {
        Ok(snapshot) => snapshot,
        Err(error) => {
            return html::error_page(
                &console,
                axum::http::StatusCode::BAD_GATEWAY,
                "Overview",
                &format!("The cluster did not answer: {error:#}"),
            );
        }
    };
    let quorum = console.admin.describe_quorum().await;
    let mut body = String::new();
    let _ = write!(
        body,
        "<p>Cluster id <strong class=\"mono\" id=\"cluster-id\">{}</strong> · {} brokers · \
         {} topics · {} partitions · read at {} UTC</p>",
        esc(snapshot.cluster_id.as_deref().unwrap_or("(none)")),
        snapshot.brokers.len(),
        snapshot.topics.len(),
        snapshot.partition_count(),
        html::time_ms(snapshot.taken_ms)
    );
    body.push_str(&health_cards(&snapshot, quorum.as_ref().ok()));
    body.push_str(
        "<p><a href=\"/topics\">Topics</a> · <a href=\"/groups\">Consumer groups</a> · \
         <a href=\"/schemas\">Schemas</a> · <a href=\"/connectors\">Connectors</a> · \
         <a href=\"/plan\">Partition planner</a></p>",
    );
    body.push_str(&brokers_table(&snapshot));
    body.push_str("<h2>Metadata quorum</h2>");
    match &quorum {
        Ok(quorum) => {
            let _ = write!(
                body,
                "<p>Leader <strong id=\"quorum-leader\">{}</strong> in epoch {}, high \
                 watermark {}.</p><table id=\"quorum\"><thead><tr><th scope=\"col\">Replica</th>\
                 <th scope=\"col\">Role</th><th scope=\"col\" class=\"num\">Log end offset</th>\
                 <th scope=\"col\" class=\"num\">Lag</th><th scope=\"col\">Last fetch</th>\
                 <th scope=\"col\">Last caught up</th></tr></thead><tbody>",
                quorum.leader_id, quorum.leader_epoch, quorum.high_watermark
            );
            let leader_end = quorum
                .voters
                .iter()
                .find(|v| v.id == quorum.leader_id)
                .map_or(quorum.high_watermark, |v| v.log_end_offset);
            let replicas = quorum
                .voters
                .iter()
                .map(|r| (r, "Voter"))
                .chain(quorum.observers.iter().map(|r| (r, "Observer")));
            for (replica, role) in replicas {
                let role = if replica.id == quorum.leader_id {
                    "Leader"
                } else {
                    role
                };
                let lag = (leader_end - replica.log_end_offset).max(0);
                let _ = write!(
                    body,
                    "<tr><td>{}</td><td>{role}</td><td class=\"num\">{}</td>\
                     <td class=\"num\">{lag}</td><td>{}</td><td>{}</td></tr>",
                    replica.id,
                    replica.log_end_offset,
                    html::time_ms(replica.last_fetch_timestamp),
                    html::time_ms(replica.last_caught_up_timestamp)
                );
            }
            body.push_str("</tbody></table>");
        }
        Err(error) => {
            let _ = write!(
                body,
                "<p class=\"muted\">The quorum could not be described: {}</p>",
                esc(&error.to_string())
            );
        }
    }
    if !snapshot.problems.is_empty() {
        body.push_str("<h2>Not read this time</h2><ul>");
        for problem in &snapshot.problems {
            let _ = write!(body, "<li>{}</li>", esc(problem));
        }
        body.push_str("</ul>");
    }
    html::page(&console, Nav::Overview, "Overview", &body)
}

fn health_cards(snapshot: &Snapshot, quorum: Option<&sluice_client::QuorumInfo>) -> String {
    let under = snapshot.under_replicated();
    let offline = snapshot.offline();
    // ActiveControllerCount summed over the cluster: 1 when the quorum has a leader.
    let active = match quorum {
        Some(q) => usize::from(q.leader_id >= 0),
        None => usize::from(snapshot.controller_id.is_some()),
    };
    let mut out = String::from("<div class=\"cards\" id=\"health\">");
    for (id, label, value, healthy, hint) in [
        (
            "under-replicated",
            "UnderReplicatedPartitions",
            under,
            0,
            "partitions whose ISR is smaller than their replicas; alert above 0",
        ),
        (
            "active-controllers",
            "ActiveControllerCount",
            active,
            1,
            "exactly one active controller in the cluster",
        ),
        (
            "offline",
            "OfflinePartitionsCount",
            offline,
            0,
            "partitions without a leader; alert above 0",
        ),
    ] {
        let _ = write!(
            out,
            "<div class=\"card {}\" id=\"{id}\" title=\"{}\"><div class=\"value\">{value}</div>\
             <div class=\"label\">{label}</div></div>",
            health(value, healthy),
            esc(hint)
        );
    }
    out.push_str("</div>");
    out
}

fn brokers_table(snapshot: &Snapshot) -> String {
    let leaders = snapshot.leader_counts();
    let mut out = String::from(
        "<h2>Brokers</h2><table id=\"brokers\"><thead><tr><th scope=\"col\">Id</th>\
         <th scope=\"col\">Endpoint</th><th scope=\"col\">Rack</th>\
         <th scope=\"col\" class=\"num\">Leaders</th><th scope=\"col\" class=\"num\">Disk use</th>\
         <th scope=\"col\">Log directories</th></tr></thead><tbody>",
    );
    for broker in &snapshot.brokers {
        let controller = if snapshot.controller_id == Some(broker.id) {
            " <span class=\"badge muted\">controller</span>"
        } else {
            ""
        };
        let dirs = snapshot
            .log_dirs
            .get(&broker.id)
            .map(|dirs| {
                dirs.iter()
                    .map(|dir| {
                        let space = if dir.total_bytes > 0 {
                            format!(
                                " ({} free of {})",
                                html::bytes(dir.usable_bytes.max(0) as u64),
                                html::bytes(dir.total_bytes as u64)
                            )
                        } else {
                            String::new()
                        };
                        let error = dir
                            .error
                            .as_ref()
                            .map(|e| format!(" {}", html::badge(&e.code.name(), "err")))
                            .unwrap_or_default();
                        format!(
                            "<span class=\"mono\">{}</span>{space}{error}",
                            esc(&dir.path)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("<br>")
            })
            .unwrap_or_else(|| "<span class=\"muted\">not reported</span>".to_string());
        let _ = write!(
            out,
            "<tr><td>{}{controller}</td><td class=\"mono\">{}:{}</td><td>{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td>{dirs}</td></tr>",
            broker.id,
            esc(&broker.host),
            broker.port,
            esc(broker.rack.as_deref().unwrap_or("—")),
            leaders.get(&broker.id).copied().unwrap_or(0),
            snapshot
                .broker_disk_use(broker.id)
                .map_or("—".to_string(), html::bytes),
        );
    }
    out.push_str("</tbody></table>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::sampler::{BrokerInfo, TopicInfo};
    use sluice_client::PartitionInfo;

    fn partition(partition: i32, leader: Option<i32>, isr: &[i32]) -> PartitionInfo {
        PartitionInfo {
            partition,
            leader,
            leader_epoch: 0,
            replicas: vec![1, 2, 3],
            isr: isr.to_vec(),
            offline_replicas: Vec::new(),
        }
    }

    #[test]
    fn health_cards_follow_the_guides_thresholds() {
        let snapshot = Snapshot {
            brokers: vec![BrokerInfo {
                id: 1,
                host: "h".into(),
                port: 1,
                rack: None,
            }],
            topics: vec![TopicInfo {
                name: "t".into(),
                internal: false,
                partitions: vec![
                    partition(0, Some(1), &[1, 2, 3]),
                    partition(1, Some(1), &[1]),
                    partition(2, None, &[]),
                ],
            }],
            controller_id: Some(1),
            ..Snapshot::default()
        };
        let cards = health_cards(&snapshot, None);
        // One partition short of replicas in its ISR besides the offline one.
        assert!(
            cards.contains("card err\" id=\"under-replicated\"")
                && cards.contains(
                    "<div class=\"value\">2</div><div class=\"label\">UnderReplicatedPartitions"
                ),
            "{cards}"
        );
        assert!(
            cards.contains("card ok\" id=\"active-controllers\""),
            "{cards}"
        );
        assert!(cards.contains("card err\" id=\"offline\""), "{cards}");
        let healthy = Snapshot {
            topics: vec![TopicInfo {
                name: "t".into(),
                internal: false,
                partitions: vec![partition(0, Some(1), &[1, 2, 3])],
            }],
            controller_id: Some(1),
            ..Snapshot::default()
        };
        let cards = health_cards(&healthy, None);
        assert!(!cards.contains("card err"), "{cards}");
        let no_controller = Snapshot::default();
        assert!(
            health_cards(&no_controller, None).contains("card err\" id=\"active-controllers\"")
        );
    }
}
