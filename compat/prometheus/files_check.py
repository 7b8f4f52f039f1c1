#!/usr/bin/env python3
"""What can be checked of deploy/ without a server: the Grafana dashboard is a dashboard
JSON model Grafana imports (a Prometheus data source variable that every panel uses,
unique panel ids, a grid position each, a query each), and every metric that a dashboard
expression or an alert rule names is one that exists: the broker's as
crates/sluice-broker/src/metrics.rs spells them (a counter with prometheus-client's
`_total`), the lag metrics under the names in LAG_METRICS. alerts_live.py then runs
every expression against a real Prometheus scraping a real cluster.

    python3 compat/prometheus/files_check.py    # PASS/FAIL lines; exit 1 on a FAIL
    from files_check import dashboard_exprs, rule_exprs, metric_names
"""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "sluice.json")
RULES = os.path.join(ROOT, "deploy", "prometheus", "alerts.yml")
BROKER_METRICS_SOURCE = os.path.join(ROOT, "crates", "sluice-broker", "src", "metrics.rs")

# Not the broker's: consumer lag as sluice monitor exports it (kafka_exporter's names),
# and the consumer's records-lag-max as jmx_exporter's common rule
# `kafka.consumer<type=(.+), client-id=(.+)><>(.+)` names it (Sluice's native client
# uses the same name).
LAG_METRICS = {
    "kafka_consumergroup_lag",
    "kafka_consumergroup_lag_sum",
    "kafka_consumer_consumer_fetch_manager_metrics_records_lag_max",
}

PROMQL_KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
    "unless", "bool", "offset", "inf", "nan",
}


def metric_names(expr):
    """The metric names a PromQL expression selects (Grafana variables allowed)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r"\$\{?\w+\}?", " ", text)  # Grafana variables
    text = re.sub(r"(?<![\w:])\d+(?:\.\d+)?[a-z]*", " ", text)  # numbers, durations
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        name = match.group(0)
        following = text[match.end():].lstrip()
        if following.startswith("(") or name.lower() in PROMQL_KEYWORDS:
            continue  # a function, an aggregation or a keyword
        names.add(name)
    return names


def dashboard_exprs(dashboard):
    """(where, expr) of every panel query and every query variable."""
    exprs = []
    for panel in dashboard.get("panels", []):
        for target in panel.get("targets", []):
            exprs.append(("panel %r %s" % (panel.get("title"), target.get("refId")), target.get("expr", "")))
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") == "query":
            query = variable.get("query")
            query = query.get("query", "") if isinstance(query, dict) else query or ""
            match = re.fullmatch(r"\s*label_values\((.*),\s*\w+\)\s*", query)
            exprs.append(("variable $%s" % variable.get("name"), match.group(1) if match else query))
    return exprs


def rule_exprs(path=RULES):
    """(alert, expr) of every rule; one-line `expr:` values, as alerts.yml writes them."""
    rules, alert = [], None
    with open(path) as f:
        for line in f:
            match = re.match(r"\s*-\s*alert:\s*(\S+)", line)
            if match:
                alert = match.group(1)
            match = re.match(r"\s*expr:\s*(.+?)\s*$", line)
            if match:
                rules.append((alert, match.group(1)))
    return rules


def broker_metric_names(path=BROKER_METRICS_SOURCE):
    """Every `kafka_...` name metrics.rs spells, and each with `_total` (a counter's
    sample name; alerts_live.py checks against real scrapes which one each is)."""
    with open(path) as f:
        literals = set(re.findall(r'"(kafka_[a-z0-9_]+)"', f.read()))
    return literals | {name + "_total" for name in literals}


def check_dashboard_model(dashboard):
    """Problems that would make Grafana refuse or mangle the import."""
    problems = []
    for key in ("title", "uid", "schemaVersion", "panels", "templating"):
        if key not in dashboard:
            problems.append("no %r" % key)
    variables = {v.get("name"): v for v in dashboard.get("templating", {}).get("list", [])}
    source = variables.get("datasource")
    if not source or source.get("type") != "datasource" or source.get("query") != "prometheus":
        problems.append("no Prometheus data source variable $datasource")
    ids = [panel.get("id") for panel in dashboard.get("panels", [])]
    if len(ids) != len(set(ids)) or None in ids:
        problems.append("panel ids missing or repeated: %s" % ids)
    for panel in dashboard.get("panels", []):
        name = "panel %r" % panel.get("title")
        grid = panel.get("gridPos", {})
        if not all(isinstance(grid.get(k), int) for k in "hwxy") or grid["x"] + grid["w"] > 24:
            problems.append("%s: gridPos %s" % (name, grid))
        if panel.get("type") == "row":
            continue
        if panel.get("datasource") != {"type": "prometheus", "uid": "${datasource}"}:
            problems.append("%s: data source is not $datasource" % name)
        targets = panel.get("targets") or []
        if not targets or not all(t.get("expr") and t.get("refId") for t in targets):
            problems.append("%s: a query without expr or refId" % name)
    return problems


def main():
    results = []

    def report(ok, check, reason=""):
        results.append(ok)
        print("PASS files: %s" % check if ok else "FAIL files: %s: %s" % (check, reason), flush=True)

    try:
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
    except (OSError, ValueError) as error:
        report(False, "deploy/grafana/sluice.json parses as JSON", error)
        return 1
    report(True, "deploy/grafana/sluice.json parses as JSON")
    problems = check_dashboard_model(dashboard)
    report(not problems, "a Grafana dashboard model on a $datasource Prometheus variable", "; ".join(problems))

    known = broker_metric_names() | LAG_METRICS
    for what, exprs in (("dashboard", dashboard_exprs(dashboard)), ("alerts.yml", rule_exprs())):
        unknown = ["%s: %s" % (where, sorted(metric_names(expr) - known))
                   for where, expr in exprs if not metric_names(expr) or metric_names(expr) - known]
        report(not unknown and bool(exprs),
               "every %s expression (%d) names metrics that exist" % (what, len(exprs)),
               "; ".join(unknown) or "no expressions")
    # The guide's four metrics, each in a rule and on the dashboard.
    guide = {
        "kafka_server_replicamanager_underreplicatedpartitions",
        "kafka_controller_kafkacontroller_activecontrollercount",
        "kafka_controller_kafkacontroller_offlinepartitionscount",
        "kafka_consumer_consumer_fetch_manager_metrics_records_lag_max",
    }
    for what, exprs in (("dashboard", dashboard_exprs(dashboard)), ("alerts.yml", rule_exprs())):
        shown = set().union(*(metric_names(expr) for _, expr in exprs))
        report(guide <= shown, "the guide's four metrics are in %s" % what, "missing %s" % sorted(guide - shown))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
