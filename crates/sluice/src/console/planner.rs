//! The partition planner as a page: `sluice plan`'s reasoning (the guide's
//! partition-count formula: target throughput over per-partition producer and consumer
//! rates, growth, consumers, the 6–50 range) from a form, set beside an existing
//! topic's partition count and its observed message rate. A plain GET form: it works
//! without the script and changes nothing, so read-only consoles show it too.

use std::fmt::Write;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::response::Response;
use axum::routing::get;
use serde::Deserialize;

use super::html::{self, Nav, esc, seg};
use super::state::Console;
use crate::plan::{
    self, ByteRate, GUIDE_CONSUMER_RATE_BYTES_PER_SECOND, GUIDE_PRODUCER_RATE_BYTES_PER_SECOND,
    Growth, Inputs, PartitionRate, RateSource,
};

pub fn routes() -> Router<Arc<Console>> {
    Router::new().route("/plan", get(page))
}

#[derive(Deserialize, Default)]
struct PlanQuery {
    #[serde(default)]
    target: String,
    #[serde(default)]
    producer_rate: String,
    #[serde(default)]
    consumer_rate: String,
    #[serde(default)]
    consumers: String,
    #[serde(default)]
    growth: String,
    #[serde(default)]
    years: String,
    #[serde(default)]
    topic: String,
}

/// The form's inputs read as `sluice plan` reads its flags; errors by field.
fn inputs(query: &PlanQuery) -> Result<Inputs, Vec<(&'static str, String)>> {
    let mut errors = Vec::new();
    let target = match plan::parse_rate(&query.target) {
        Ok(rate) => Some(rate),
        Err(error) => {
            errors.push(("target", error));
            None
        }
    };
    let mut rate = |field: &'static str, text: &str, guide: u64| -> PartitionRate {
        if text.trim().is_empty() {
            return PartitionRate {
                rate: ByteRate::decimal(guide),
                source: RateSource::Assumed,
            };
        }
        match plan::parse_rate(text) {
            Ok(rate) => PartitionRate {
                rate,
                source: RateSource::Given,
            },
            Err(error) => {
                errors.push((field, error));
                PartitionRate {
                    rate: ByteRate::decimal(guide),
                    source: RateSource::Assumed,
                }
            }
        }
    };
    let producer = rate(
        "producer_rate",
        &query.producer_rate,
        GUIDE_PRODUCER_RATE_BYTES_PER_SECOND,
    );
    let consumer = rate(
        "consumer_rate",
        &query.consumer_rate,
        GUIDE_CONSUMER_RATE_BYTES_PER_SECOND,
    );
    let consumers = match query.consumers.trim() {
        "" => None,
        text => match text.parse::<u64>() {
            Ok(n) if (1..=100_000).contains(&n) => Some(n),
            _ => {
                errors.push((
                    "consumers",
                    "a whole number of consumers, 1 to 100000".into(),
                ));
                None
            }
        },
    };
    let years = match query.years.trim() {
        "" => None,
        text => match text.parse::<u32>() {
            Ok(n) if (1..=50).contains(&n) => Some(n),
            _ => {
                errors.push(("years", "a whole number of years, 1 to 50".into()));
                None
            }
        },
    };
    let growth = match query.growth.trim() {
        "" => {
            if years.is_some() {
                errors.push(("years", "years apply to a growth percentage a year".into()));
            }
            None
        }
        text => match plan::parse_growth(text)
            .map_err(|e| e.to_string())
            .and_then(|rate| Growth::new(rate, years).map_err(|e| e.to_string()))
        {
            Ok(growth) => Some(growth),
            Err(error) => {
                errors.push(("growth", error));
                None
            }
        },
    };
    match target {
        Some(target) if errors.is_empty() => Ok(Inputs {
            target,
            producer,
            consumer,
            consumers,
            growth,
        }),
        _ => Err(errors),
    }
}

async fn page(State(console): State<Arc<Console>>, Query(query): Query<PlanQuery>) -> Response {
    let submitted = !query.target.trim().is_empty();
    let (result, errors) = if submitted {
        match inputs(&query) {
            Ok(inputs) => (Some(plan::plan(inputs)), Vec::new()),
            Err(errors) => (None, errors),
        }
    } else {
        (None, Vec::new())
    };
    let error_for = |field: &str| {
        errors
            .iter()
            .filter(|(f, _)| *f == field)
            .map(|(_, e)| esc(e))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let snapshot = console.sampler.snapshot();
    let mut body = String::from(
        "<p>How many partitions a topic needs, reasoned as the guide's formula: the target \
         throughput over what one partition carries for a producer and for a consumer, \
         grown to the horizon, at least one per consumer, kept within 6–50. Rates are \
         written <span class=\"mono\">100MB/s</span>, <span class=\"mono\">2.5GiB/s</span> \
         or bytes per second; empty rates take the guide's 10 MB/s (producer) and 5 MB/s \
         (consumer). <span class=\"mono\">sluice plan --measure</span> measures them on \
         this cluster.</p><form method=\"get\" action=\"/plan\" aria-label=\"Plan partitions\">",
    );
    let fields: [(&str, &str, &str, &str); 7] = [
        (
            "target",
            "Target throughput",
            &query.target,
            "e.g. 100MB/s (required)",
        ),
        (
            "producer_rate",
            "Producer rate per partition",
            &query.producer_rate,
            "default 10MB/s",
        ),
        (
            "consumer_rate",
            "Consumer rate per partition",
            &query.consumer_rate,
            "default 5MB/s",
        ),
        (
            "consumers",
            "Consumers in the largest group",
            &query.consumers,
            "at the horizon",
        ),
        (
            "growth",
            "Growth",
            &query.growth,
            "a factor over the horizon (2x) or a percentage a year (30%)",
        ),
        (
            "years",
            "Years (of a percentage)",
            &query.years,
            "default 1",
        ),
        (
            "topic",
            "Compare with topic",
            &query.topic,
            "an existing topic's partitions",
        ),
    ];
    for (name, label, value, hint) in fields {
        let error = error_for(name);
        let invalid = if error.is_empty() {
            ""
        } else {
            "aria-invalid=\"true\""
        };
        let input = html::text_input(
            name,
            value,
            &format!("aria-describedby=\"h-{name}\" {invalid}"),
        );
        let field = html::field(name, label, &input, hint).replace(
            &format!("data-error-for=\"{name}\" role=\"alert\"></p>"),
            &format!("data-error-for=\"{name}\" role=\"alert\">{error}</p>"),
        );
        body.push_str(&field);
    }
    body.push_str("<div class=\"actions\"><button type=\"submit\">Plan</button></div></form>");
    if let Some(plan) = result {
        let _ = write!(
            body,
            "<section class=\"panel\" aria-labelledby=\"plan-title\"><h2 id=\"plan-title\">\
             Recommendation: <span id=\"plan-partitions\">{}</span> partitions</h2>",
            plan.partitions
        );
        for warning in plan.warnings() {
            let _ = write!(body, "<p class=\"error\">{}</p>", esc(&warning));
        }
        let topic = query.topic.trim();
        if !topic.is_empty() {
            match snapshot.as_ref().and_then(|s| s.topic(topic)) {
                Some(info) => {
                    let current = info.partitions.len() as u64;
                    let advice = if current >= plan.partitions {
                        "enough".to_string()
                    } else {
                        format!(
                            "{} short: add {} partitions (keys will map anew)",
                            plan.partitions - current,
                            plan.partitions - current
                        )
                    };
                    let _ = write!(
                        body,
                        "<p id=\"plan-compare\"><a href=\"/topics/{}\">{}</a> has {current} \
                         partitions, {advice}; it takes {} now.</p>",
                        seg(topic),
                        esc(topic),
                        html::rate(console.sampler.topic_rate(info)).replace("/s", " messages/s")
                    );
                }
                None => {
                    let _ = write!(
                        body,
                        "<p class=\"error\">No topic '{}' in the cluster.</p>",
                        esc(topic)
                    );
                }
            }
        }
        let _ = write!(
            body,
            "<pre class=\"mono\" id=\"plan-reasoning\">{}</pre></section>",
            esc(&plan::render_text(&plan))
        );
    }
    html::page(&console, Nav::Planner, "Partition planner", &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(target: &str) -> PlanQuery {
        PlanQuery {
            target: target.into(),
            ..PlanQuery::default()
        }
    }

    #[test]
    fn the_form_reads_as_the_command_line_does() {
        let inputs = inputs(&query("100MB/s")).unwrap();
        let plan = plan::plan(inputs);
        // 100 MB/s over the guide's 5 MB/s per consumer partition.
        assert_eq!(plan.partitions, 20);
        let mut q = query("100MB/s");
        q.growth = "2x".into();
        q.consumers = "50".into();
        assert_eq!(plan::plan(inputs_ok(&q)).partitions, 50);
    }

    fn inputs_ok(q: &PlanQuery) -> Inputs {
        inputs(q).unwrap()
    }

    #[test]
    fn each_bad_field_is_named() {
        let mut q = query("fast");
        q.consumers = "-3".into();
        q.years = "2".into();
        let errors = inputs(&q).unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|(f, _)| *f).collect();
        assert_eq!(fields, vec!["target", "consumers", "years"]);
        let mut q = query("10MB/s");
        q.growth = "0.5x".into();
        assert_eq!(inputs(&q).unwrap_err()[0].0, "growth");
    }
}
