//! The Topics pages: the list (partitions, replication factor, size, message rate,
//! search), creating a topic (partitions, replication factor, configs, validated by the
//! cluster), and a topic's page: per-partition leader, replicas, ISR and offsets; its
//! configs with each value's source (default, broker, topic) and an editor; adding
//! partitions; deleting with confirmation.
//!
//! Every change is one Kafka request that the cluster applies whole or refuses
//! (CreateTopics, IncrementalAlterConfigs, CreatePartitions, DeleteTopics per topic): a
//! refusal changes nothing, and its error is shown next to the field it is about.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use sluice_client::{
    AlterConfigOp, ApiError as KafkaError, ConfigEntry, ConfigSource, NewTopic, OffsetSpec,
    TopicPartition,
};

use super::html::{self, Nav, OnSuccess, esc, seg};
use super::sampler;
use super::state::{ApiError, ApiResult, Console};

pub fn routes() -> Router<Arc<Console>> {
    Router::new()
        .route("/topics", get(list))
        .route("/topics/{topic}", get(detail))
        .route("/api/topics", post(create))
        .route("/api/topics/{topic}/configs", post(alter_config))
        .route("/api/topics/{topic}/partitions", post(add_partitions))
        .route("/api/topics/{topic}/delete", post(delete))
}

#[derive(Deserialize)]
struct ListQuery {
    /// Show internal topics (`__consumer_offsets`, ...) too.
    #[serde(default)]
    internal: bool,
    /// Only topics whose name contains this.
    #[serde(default)]
    q: String,
}

async fn list(State(console): State<Arc<Console>>, Query(query): Query<ListQuery>) -> Response {
    let snapshot = match sampler::current(&console).await {
        Ok(snapshot) => snapshot,
        Err(error) => {
            return html::error_page(
                &console,
                StatusCode::BAD_GATEWAY,
                "Topics",
                &format!("The cluster did not answer: {error:#}"),
            );
        }
    };
    let topics: Vec<_> = snapshot
        .topics
        .iter()
        .filter(|t| query.internal || !t.internal)
        .filter(|t| query.q.is_empty() || t.name.contains(&query.q))
        .collect();
    let mut body = String::with_capacity(256 * topics.len() + 4096);
    let hidden = snapshot.topics.iter().filter(|t| t.internal).count();
    let _ = write!(
        body,
        "<p>{} topics shown{}. Sizes count each partition once (its leader's copy); rates \
         are records appended per second over the last minute.</p>",
        topics.len(),
        if query.internal || hidden == 0 {
            String::new()
        } else {
            format!(", {hidden} internal hidden (<a href=\"/topics?internal=true\">show them</a>)")
        }
    );
    if !console.config.read_only {
        body.push_str(&create_form());
    }
    body.push_str(&html::table_filter("topics", "Search topics"));
    body.push_str(
        "<table id=\"topics\"><thead><tr><th scope=\"col\">Topic</th>\
         <th scope=\"col\" class=\"num\">Partitions</th><th scope=\"col\" class=\"num\">RF</th>\
         <th scope=\"col\" class=\"num\">Under-replicated</th>\
         <th scope=\"col\" class=\"num\">Size</th><th scope=\"col\" class=\"num\">Messages/s</th>\
         </tr></thead><tbody>",
    );
    for topic in topics {
        let under = topic
            .partitions
            .iter()
            .filter(|p| p.isr.len() < p.replicas.len())
            .count();
        let _ = write!(
            body,
            "<tr><td><a href=\"/topics/{}\">{}</a>{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td></tr>",
            seg(&topic.name),
            esc(&topic.name),
            if topic.internal {
                " <span class=\"badge muted\">internal</span>"
            } else {
                ""
            },
            topic.partitions.len(),
            topic.replication_factor(),
            if under == 0 {
                "0".to_string()
            } else {
                html::badge(&under.to_string(), "err")
            },
            snapshot
                .topic_size(topic)
                .map_or("—".to_string(), html::bytes),
            html::rate(console.sampler.topic_rate(topic)),
        );
    }
    body.push_str("</tbody></table>");
    html::page(&console, Nav::Topics, "Topics", &body)
}

fn create_form() -> String {
    let mut out = String::from("<details><summary>Create a topic</summary>");
    out.push_str(&html::form_start(
        "/api/topics",
        "POST",
        OnSuccess::Redirect,
        "Create a topic",
    ));
    out.push_str(&html::field(
        "name",
        "Name",
        &html::text_input("name", "", "required autocomplete=\"off\""),
        "letters, digits, '.', '_' and '-', at most 249 characters",
    ));
    out.push_str(&html::field(
        "partitions",
        "Partitions",
        &html::number_input("partitions", "", "min=\"1\""),
        "empty: the cluster's num.partitions",
    ));
    out.push_str(&html::field(
        "replication_factor",
        "Replication factor",
        &html::number_input("replication_factor", "", "min=\"1\""),
        "empty: the cluster's default.replication.factor",
    ));
    out.push_str(&html::field(
        "configs",
        "Configs",
        &html::textarea("configs", "", 4, "placeholder=\"retention.ms=604800000\""),
        "one key=value a line (cleanup.policy, retention.ms, min.insync.replicas, ...)",
    ));
    out.push_str(&html::form_end("Create topic"));
    out.push_str("</details>");
    out
}

#[derive(Deserialize)]
struct CreateBody {
    #[serde(default)]
    name: String,
    partitions: Option<i64>,
    replication_factor: Option<i64>,
    #[serde(default)]
    configs: String,
}

/// `key=value` lines; blank lines and `#` comments are skipped.
fn parse_configs(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut configs = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                configs.push((key.trim().to_string(), value.trim().to_string()))
            }
            _ => return Err(format!("line {}: '{line}' is not key=value", number + 1)),
        }
    }
    Ok(configs)
}

/// The form field a Kafka error on a topic change is about.
fn field_of(error: &KafkaError) -> &'static str {
    match error.code.name().as_str() {
        "INVALID_PARTITIONS" => "partitions",
        "INVALID_REPLICATION_FACTOR" | "INVALID_REPLICA_ASSIGNMENT" => "replication_factor",
        "INVALID_CONFIG" | "POLICY_VIOLATION" => "configs",
        _ => "name",
    }
}

async fn create(State(console): State<Arc<Console>>, Json(body): Json<CreateBody>) -> ApiResult {
    let name = body.name.trim().to_string();
    if name.is_empty() {
        return Err(ApiError::field("name", "a topic needs a name"));
    }
    let partitions = match body.partitions {
        None => None,
        Some(n) => Some(
            i32::try_from(n)
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| ApiError::field("partitions", "partitions must be at least 1"))?,
        ),
    };
    let replication_factor = match body.replication_factor {
        None => None,
        Some(n) => Some(i16::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| {
            ApiError::field(
                "replication_factor",
                "the replication factor must be 1..32767",
            )
        })?),
    };
    let configs = parse_configs(&body.configs).map_err(|e| ApiError::field("configs", e))?;
    let topic = NewTopic {
        name: name.clone(),
        num_partitions: partitions,
        replication_factor,
        configs,
    };
    let mut results = console.admin.create_topics(&[topic], false).await?;
    match results.remove(&name) {
        Some(Ok(_)) => {}
        Some(Err(error)) => return Err(ApiError::kafka(&error).on(field_of(&error))),
        None => {
            return Err(ApiError::field(
                "name",
                "the cluster did not answer for the topic",
            ));
        }
    }
    let _ = sampler::refresh(&console).await;
    Ok(Json(json!({
        "message": format!("Created topic {name}"),
        "redirect": format!("/topics/{}", seg(&name)),
    })))
}

/// Where a config's value comes from, in the words of the issue: default, broker, topic.
fn source_label(source: ConfigSource) -> (&'static str, &'static str) {
    match source {
        ConfigSource::DynamicTopicConfig => ("topic", "ok"),
        ConfigSource::DynamicBrokerConfig
        | ConfigSource::DynamicDefaultBrokerConfig
        | ConfigSource::StaticBrokerConfig => ("broker", "warn"),
        ConfigSource::DefaultConfig => ("default", "muted"),
        _ => ("other", "muted"),
    }
}

async fn detail(State(console): State<Arc<Console>>, Path(name): Path<String>) -> Response {
    let names = [name.clone()];
    let description = match console.admin.describe_topics(&names).await {
        Ok(mut results) => match results.remove(&name) {
            Some(Ok(description)) => description,
            Some(Err(error)) => {
                let status = if error.code.name() == "UNKNOWN_TOPIC_OR_PARTITION" {
                    StatusCode::NOT_FOUND
                } else {
                    StatusCode::BAD_GATEWAY
                };
                return html::error_page(
                    &console,
                    status,
                    &name,
                    &format!("Topic '{name}': {}", ApiError::kafka(&error).message),
                );
            }
            None => {
                return html::error_page(&console, StatusCode::NOT_FOUND, &name, "No such topic.");
            }
        },
        Err(error) => {
            return html::error_page(
                &console,
                StatusCode::BAD_GATEWAY,
                &name,
                &format!("The cluster did not answer: {error}"),
            );
        }
    };
    let mut specs_earliest = BTreeMap::new();
    let mut specs_latest = BTreeMap::new();
    for p in &description.partitions {
        let tp = TopicPartition::new(name.clone(), p.partition);
        specs_earliest.insert(tp.clone(), OffsetSpec::Earliest);
        specs_latest.insert(tp, OffsetSpec::Latest);
    }
    let (earliest, latest, configs) = tokio::join!(
        console.admin.list_offsets(&specs_earliest),
        console.admin.list_offsets(&specs_latest),
        console.admin.describe_topic_configs(&names),
    );
    let offset = |results: &Result<
        BTreeMap<TopicPartition, Result<sluice_client::ListOffsetsResultInfo, KafkaError>>,
        _,
    >,
                  partition: i32| {
        results
            .as_ref()
            .ok()
            .and_then(|r| r.get(&TopicPartition::new(name.clone(), partition)))
            .and_then(|r| r.as_ref().ok())
            .map(|info| info.offset)
    };
    let snapshot = console.sampler.snapshot();
    let mut body = String::new();
    let rf = description
        .partitions
        .first()
        .map_or(0, |p| p.replicas.len());
    let _ = write!(
        body,
        "<p>Topic id <span class=\"mono\">{}</span> · {} partitions · replication factor {rf}{} · \
         <a href=\"/topics/{}/messages\">Browse messages</a></p>",
        description.topic_id,
        description.partitions.len(),
        if description.is_internal {
            " · <span class=\"badge muted\">internal</span>"
        } else {
            ""
        },
        seg(&name)
    );
    body.push_str(
        "<h2>Partitions</h2><table id=\"partitions\"><thead><tr><th scope=\"col\">Partition</th>\
         <th scope=\"col\">Leader</th><th scope=\"col\">Replicas</th><th scope=\"col\">ISR</th>\
         <th scope=\"col\" class=\"num\">Start offset</th><th scope=\"col\" class=\"num\">End offset</th>\
         <th scope=\"col\" class=\"num\">Messages</th><th scope=\"col\" class=\"num\">Size</th>\
         <th scope=\"col\" class=\"num\">Messages/s</th></tr></thead><tbody>",
    );
    for p in &description.partitions {
        let start = offset(&earliest, p.partition);
        let end = offset(&latest, p.partition);
        let isr = p
            .replicas
            .iter()
            .map(|r| {
                if p.isr.contains(r) {
                    r.to_string()
                } else {
                    format!("<span class=\"badge err\" title=\"not in sync\">{r}</span>")
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        let leader = match p.leader {
            Some(leader) => leader.to_string(),
            None => html::badge("offline", "err"),
        };
        let show = |o: Option<i64>| o.map_or("—".to_string(), |o| o.to_string());
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{leader}</td><td>{}</td><td>{isr}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td></tr>",
            p.partition,
            p.replicas
                .iter()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            show(start),
            show(end),
            match (start, end) {
                (Some(s), Some(e)) => (e - s).max(0).to_string(),
                _ => "—".to_string(),
            },
            snapshot
                .as_ref()
                .and_then(|s| s.partition_size(&name, p))
                .map_or("—".to_string(), html::bytes),
            html::rate(console.sampler.partition_rate(&name, p.partition)),
        );
    }
    body.push_str("</tbody></table>");
    if !console.config.read_only {
        body.push_str(&html::form_start(
            &format!("/api/topics/{}/partitions", seg(&name)),
            "POST",
            OnSuccess::Reload,
            "Add partitions",
        ));
        body.push_str(&html::field(
            "partitions",
            "New total number of partitions",
            &html::number_input(
                "partitions",
                &(description.partitions.len() + 1).to_string(),
                &format!("min=\"{}\"", description.partitions.len() + 1),
            ),
            "partitions can be added, never removed; keys map to partitions anew",
        ));
        body.push_str(&html::form_end("Add partitions"));
    }
    body.push_str("<h2>Configs</h2>");
    match configs.map(|mut r| r.remove(&name)) {
        Ok(Some(Ok(entries))) => body.push_str(&configs_section(&console, &name, &entries)),
        Ok(Some(Err(error))) => {
            let _ = write!(
                body,
                "<p class=\"error\">{}</p>",
                esc(&ApiError::kafka(&error).message)
            );
        }
        Ok(None) => body.push_str("<p class=\"muted\">The cluster sent no configs.</p>"),
        Err(error) => {
            let _ = write!(body, "<p class=\"error\">{}</p>", esc(&error.to_string()));
        }
    }
    if !console.config.read_only {
        let _ = write!(body, "<h2>Delete</h2>");
        body.push_str(&html::form_start(
            &format!("/api/topics/{}/delete", seg(&name)),
            "POST",
            OnSuccess::Redirect,
            "Delete the topic",
        ));
        body.push_str(&html::field(
            "confirm",
            "Type the topic's name to delete it and all its messages",
            &html::text_input("confirm", "", "autocomplete=\"off\""),
            "",
        ));
        body.push_str(&html::form_end("Delete topic").replace(
            "<button type=\"submit\">",
            "<button type=\"submit\" class=\"danger\">",
        ));
    }
    html::page(&console, Nav::Topics, &name, &body)
}

fn configs_section(console: &Console, topic: &str, entries: &[ConfigEntry]) -> String {
    let mut out = String::from(
        "<table id=\"configs\"><thead><tr><th scope=\"col\">Config</th><th scope=\"col\">Value</th>\
         <th scope=\"col\">Source</th></tr></thead><tbody>",
    );
    for entry in entries {
        let (source, kind) = source_label(entry.source);
        let value = if entry.is_sensitive {
            "<span class=\"muted\">(sensitive)</span>".to_string()
        } else {
            format!(
                "<span class=\"mono\">{}</span>",
                esc(entry.value.as_deref().unwrap_or("null"))
            )
        };
        let _ = write!(
            out,
            "<tr data-config=\"{0}\"><td class=\"mono\">{0}</td><td>{value}</td><td>{1}</td></tr>",
            esc(&entry.name),
            html::badge(source, kind)
        );
    }
    out.push_str("</tbody></table>");
    if !console.config.read_only {
        out.push_str(&html::form_start(
            &format!("/api/topics/{}/configs", seg(topic)),
            "POST",
            OnSuccess::Reload,
            "Edit a config",
        ));
        let mut names = String::from("<datalist id=\"config-names\">");
        for entry in entries.iter().filter(|e| !e.is_read_only) {
            let _ = write!(names, "<option value=\"{}\">", esc(&entry.name));
        }
        names.push_str("</datalist>");
        out.push_str(&html::field(
            "config_name",
            "Config",
            &format!(
                "{}{names}",
                html::text_input(
                    "config_name",
                    "",
                    "list=\"config-names\" autocomplete=\"off\""
                )
            ),
            "",
        ));
        out.push_str(&html::field(
            "config_value",
            "New value",
            &html::text_input("config_value", "", "autocomplete=\"off\""),
            "the cluster validates it; an invalid value changes nothing",
        ));
        out.push_str(
            "<div class=\"field\"><label for=\"f-op\">Change</label><select id=\"f-op\" name=\"op\">\
             <option value=\"set\">Set on this topic</option>\
             <option value=\"delete\">Reset to the broker's or default value</option></select></div>",
        );
        out.push_str(&html::form_end("Apply config"));
    }
    out
}

#[derive(Deserialize)]
struct ConfigBody {
    #[serde(default)]
    config_name: String,
    #[serde(default)]
    config_value: String,
    #[serde(default)]
    op: String,
}

async fn alter_config(
    State(console): State<Arc<Console>>,
    Path(topic): Path<String>,
    Json(body): Json<ConfigBody>,
) -> ApiResult {
    let name = body.config_name.trim().to_string();
    if name.is_empty() {
        return Err(ApiError::field("config_name", "which config?"));
    }
    let op = match body.op.as_str() {
        "" | "set" => AlterConfigOp::Set {
            name: name.clone(),
            value: body.config_value.trim().to_string(),
        },
        "delete" => AlterConfigOp::Delete { name: name.clone() },
        other => return Err(ApiError::field("op", format!("unknown change '{other}'"))),
    };
    let changes = BTreeMap::from([(topic.clone(), vec![op])]);
    let mut results = console
        .admin
        .incremental_alter_topic_configs(&changes, false)
        .await?;
    match results.remove(&topic) {
        Some(Ok(())) => Ok(Json(json!({"message": format!("{name} changed")}))),
        Some(Err(error)) => {
            let field = if error.code.name() == "UNKNOWN_TOPIC_OR_PARTITION" {
                "_form"
            } else if error
                .message
                .as_deref()
                .is_some_and(|m| m.contains("Unknown") || m.contains("unknown"))
            {
                "config_name"
            } else {
                "config_value"
            };
            Err(ApiError::kafka(&error).on(field))
        }
        None => Err(ApiError::field("_form", "the cluster did not answer")),
    }
}

#[derive(Deserialize)]
struct PartitionsBody {
    partitions: Option<i64>,
}

async fn add_partitions(
    State(console): State<Arc<Console>>,
    Path(topic): Path<String>,
    Json(body): Json<PartitionsBody>,
) -> ApiResult {
    let count = body
        .partitions
        .and_then(|n| i32::try_from(n).ok())
        .filter(|n| *n >= 1)
        .ok_or_else(|| ApiError::field("partitions", "the new total number of partitions"))?;
    let counts = BTreeMap::from([(topic.clone(), count)]);
    let mut results = console.admin.create_partitions(&counts, false).await?;
    match results.remove(&topic) {
        Some(Ok(())) => {
            let _ = sampler::refresh(&console).await;
            Ok(Json(
                json!({"message": format!("{topic} has {count} partitions")}),
            ))
        }
        Some(Err(error)) => Err(ApiError::kafka(&error).on("partitions")),
        None => Err(ApiError::field("partitions", "the cluster did not answer")),
    }
}

#[derive(Deserialize)]
struct DeleteBody {
    #[serde(default)]
    confirm: String,
}

async fn delete(
    State(console): State<Arc<Console>>,
    Path(topic): Path<String>,
    Json(body): Json<DeleteBody>,
) -> ApiResult {
    if body.confirm != topic {
        return Err(ApiError::field(
            "confirm",
            format!("type '{topic}' to confirm; nothing was deleted"),
        ));
    }
    let mut results = console
        .admin
        .delete_topics(std::slice::from_ref(&topic))
        .await?;
    match results.remove(&topic) {
        Some(Ok(())) => {
            let _ = sampler::refresh(&console).await;
            Ok(Json(json!({
                "message": format!("Deleted {topic}"),
                "redirect": "/topics",
            })))
        }
        Some(Err(error)) => Err(ApiError::kafka(&error).on("confirm")),
        None => Err(ApiError::field("confirm", "the cluster did not answer")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_are_key_value_lines() {
        assert_eq!(
            parse_configs("retention.ms=1000\n\n# note\n cleanup.policy = compact \n").unwrap(),
            vec![
                ("retention.ms".to_string(), "1000".to_string()),
                ("cleanup.policy".to_string(), "compact".to_string())
            ]
        );
        assert_eq!(
            parse_configs("a=1\nnonsense").unwrap_err(),
            "line 2: 'nonsense' is not key=value"
        );
        assert!(parse_configs("=x").is_err());
    }

    #[test]
    fn kafka_errors_point_at_their_field() {
        let error = |code: i16| KafkaError {
            code: sluice_client::ErrorCode(code),
            message: None,
        };
        assert_eq!(field_of(&error(37)), "partitions");
        assert_eq!(field_of(&error(38)), "replication_factor");
        assert_eq!(field_of(&error(40)), "configs");
        assert_eq!(field_of(&error(36)), "name");
        assert_eq!(field_of(&error(17)), "name");
    }

    #[test]
    fn sources_read_as_default_broker_topic() {
        assert_eq!(source_label(ConfigSource::DefaultConfig).0, "default");
        assert_eq!(source_label(ConfigSource::StaticBrokerConfig).0, "broker");
        assert_eq!(source_label(ConfigSource::DynamicTopicConfig).0, "topic");
    }
}
