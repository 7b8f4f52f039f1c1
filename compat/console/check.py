#!/usr/bin/env python3
"""The web console, judged in a real browser: Debian's headless Chromium driven through
ChromeDriver (Selenium), against one `sluice server` that runs the broker, the schema
registry, a Kafka Connect worker, the lag monitor and the console.

Through the pages, as a person would:
  - the overview shows the cluster, its broker and quorum, health signals green;
  - a topic created from the form (an invalid config first: the broker's error next to
    the field, no topic), a config edited (an invalid value refused the same way);
  - a message produced with headers from the page (a 10 MB value first: the broker's
    error next to the value, nothing written), found in the browser with a header filter
    and with an expression; an Avro value written by confluent-kafka's AvroSerializer
    decoded through the registry;
  - a group's offsets reset to earliest after a dry run that changed nothing;
  - a lagging group marked WARN (Burrow's rules), with its "why is it lagging" view;
  - an incompatible schema refused with the registry's 409 reason, after the
    compatibility check said so;
  - a file source connector created from JSON (malformed JSON first: the error next to
    the field, nothing created) and seen RUNNING;
  - the partition planner;
  - a read-only console (`sluice console --set console.read.only=true`) shows no form;
  - every control has a label, the skip link comes first, no request leaves the host.
A screenshot of each page is written to the folder printed at the start
(target/console-screenshots by default).

    python3 compat/console/check.py [--screenshots DIR] [--keep] [--headed]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "compat", "lib"))
from ports import free_ports  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

SLUICE = os.path.join(ROOT, "target", "debug", "sluice")
WAIT = 30

failures = []
started = []


def check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + ((": " + str(detail)[:2000]) if detail and not ok else ""), flush=True)
    if not ok:
        failures.append(name)
    return ok


def http(method, url, body=None, timeout=10):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, method=method, data=data,
                                     headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
        return None, str(error)


def spawn(cmd, log_path):
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    started.append(proc)
    return proc


def stop_all():
    for proc in started:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def wait_until(what, predicate, timeout=WAIT):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = predicate()
        except Exception as error:  # a page mid-reload
            last = error
        if last and not isinstance(last, Exception):
            return last
        time.sleep(0.25)
    raise SystemExit(f"timed out after {timeout}s waiting for {what} (last: {last})")


def log_line(path, prefix, timeout=WAIT):
    def found():
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith(prefix):
                    return line[len(prefix):].strip()
        return None
    return wait_until(f"'{prefix}' in {path}", found, timeout)


def monitor_config(path, servers):
    """Burrow's evaluation on short intervals, so a lagging group shows WARN in seconds."""
    with open(path, "w") as f:
        f.write("\n".join([
            "[cluster.local]",
            'class-name="kafka"',
            f"servers=[{', '.join(json.dumps(s) for s in servers)}]",
            "topic-refresh=2",
            "offset-refresh=1",
            "[storage.default]",
            'class-name="inmemory"',
            "intervals=5",
            "min-distance=1",
            "[evaluator.default]",
            'class-name="caching"',
            "expire-cache=1",
        ]) + "\n")


class Browser:
    def __init__(self, base, shots, headed=False):
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        # The flags that keep Chromium off the network (this machine has none) and fast.
        for arg in ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--disable-dev-shm-usage", "--window-size=1280,1000",
                    "--user-data-dir=" + tempfile.mkdtemp(prefix="sluice-chromium-")]:
            options.add_argument(arg)
        if not headed:
            options.add_argument("--headless=new")
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        self.driver.set_page_load_timeout(WAIT)
        self.base = base
        self.shots = shots

    def open(self, path):
        # A reload the previous page's script started can overtake a navigation: go again
        # until the browser is where it was sent.
        for _ in range(3):
            self.driver.get(self.base + path)
            # (The message browser writes its form into the query string.)
            if self.driver.current_url.split("?")[0] == (self.base + path).split("?")[0]:
                return
        raise SystemExit(f"the browser stayed on {self.driver.current_url}, not {path}")

    def find(self, css):
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def finds(self, css):
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def text(self, css):
        elements = self.finds(css)
        return elements[0].text if elements else ""

    def fill(self, field_id, value):
        element = self.find(f"#{field_id}")
        element.clear()
        if value:
            element.send_keys(value)

    def fill_js(self, field_id, value):
        """Sets a field's value without typing it (a 10 MB value would take minutes)."""
        self.driver.execute_script("document.getElementById(arguments[0]).value = arguments[1];", field_id, value)

    def click(self, css):
        element = self.find(css)
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)
        element.click()

    def wait_text(self, css, predicate, what, timeout=WAIT):
        return wait_until(what, lambda: (lambda t: t if predicate(t) else None)(self.text(css)), timeout)

    def shot(self, name):
        path = os.path.join(self.shots, f"{name}.png")
        # The whole page, not only the window.
        height = self.driver.execute_script("return document.documentElement.scrollHeight")
        self.driver.set_window_size(1280, max(800, min(int(height) + 40, 4000)))
        self.driver.save_screenshot(path)
        self.driver.set_window_size(1280, 1000)

    def console_errors(self):
        # Network entries are the refusals the checks provoke (400, 409); a script error
        # is not.
        return [e for e in self.driver.get_log("browser")
                if e.get("level") == "SEVERE" and e.get("source") != "network"]

    def quit(self):
        self.driver.quit()


# --- the pages ---------------------------------------------------------------------------

def overview(b, env):
    b.open("/")
    check("overview: the cluster id, the broker's endpoint, the quorum's leader",
          b.text("#cluster-id") != "" and env["bootstrap"] in b.text("#brokers")
          and b.text("#quorum-leader") == "1", b.text("main"))
    check("overview: the guide's health signals, green on a healthy node",
          all("ok" in b.find(f"#{card}").get_attribute("class").split()
              for card in ("under-replicated", "active-controllers", "offline")),
          b.find("#health").get_attribute("outerHTML"))
    links = [a.text for a in b.finds("main a")]
    check("overview: the first page links to Topics and Consumer groups",
          "Topics" in links and "Consumer groups" in links, links)
    b.shot("overview")


def topics(b, env):
    admin = env["admin"]
    b.open("/topics")
    b.click("details summary")
    b.fill("f-name", "web-orders")
    b.fill("f-partitions", "3")
    b.fill("f-configs", "cleanup.policy=delete\nretention.ms=next-week")
    b.click("form[data-api='/api/topics'] button[type=submit]")
    error = b.wait_text("[data-error-for='configs']", bool, "the configs field's error")
    check("create topic: an invalid config gets the broker's error next to the field",
          error.startswith("INVALID_CONFIG: Invalid value next-week for configuration retention.ms"), error)
    check("create topic: the refused topic was not created",
          "web-orders" not in admin.list_topics(timeout=10).topics)
    check("create topic: the invalid field is marked for assistive technology",
          b.find("#f-configs").get_attribute("aria-invalid") == "true")
    b.fill("f-configs", "retention.ms=86400000")
    b.click("form[data-api='/api/topics'] button[type=submit]")
    wait_until("the new topic's page", lambda: b.driver.current_url.endswith("/topics/web-orders"))
    rows = b.finds("#partitions tbody tr")
    check("create topic: created with 3 partitions and its config, source 'topic'",
          len(rows) == 3 and "topic" in b.text("tr[data-config='retention.ms']")
          and "86400000" in b.text("tr[data-config='retention.ms']"),
          b.text("#configs"))
    # An invalid config value: refused, nothing changed.
    b.fill("f-config_name", "cleanup.policy")
    b.fill("f-config_value", "shred")
    b.click("form[data-api='/api/topics/web-orders/configs'] button[type=submit]")
    error = b.wait_text("[data-error-for='config_value']", bool, "the config value's error")
    check("edit config: an invalid value gets the broker's error next to it",
          "INVALID_CONFIG" in error and "cleanup.policy" in error, error)
    b.fill("f-config_value", "compact,delete")
    b.click("form[data-api='/api/topics/web-orders/configs'] button[type=submit]")
    wait_until("the edited config", lambda: "compact,delete" in b.text("tr[data-config='cleanup.policy']"))
    check("edit config: a valid value applies, its source is the topic",
          "topic" in b.text("tr[data-config='cleanup.policy']"))
    b.shot("topic")
    b.open("/topics")
    b.fill("filter-topics", "web-ord")
    visible = [r.text for r in b.finds("#topics tbody tr") if r.is_displayed()]
    check("topics: the search box keeps the matching rows", len(visible) == 1 and "web-orders" in visible[0], visible)
    b.fill("filter-topics", "")
    b.shot("topics")


def planner(b, env):
    b.open("/plan")
    b.fill("f-target", "100MB/s")
    b.fill("f-growth", "2x")
    b.fill("f-topic", "web-orders")
    b.click("form[action='/plan'] button[type=submit]")
    wait_until("the plan", lambda: b.finds("#plan-partitions"))
    check("planner: the guide's reasoning (100 MB/s x2 at 5 MB/s a consumer partition: 40)",
          b.text("#plan-partitions") == "40" and "web-orders" in b.text("#plan-compare"),
          b.text("main"))
    b.shot("planner")


def accessibility(b, env, pages):
    """Every visible control has a label; the skip link is the first stop of the Tab key;
    no resource came from another host."""
    for path in pages:
        b.open(path)
        unlabelled = b.driver.execute_script("""
            const out = [];
            for (const el of document.querySelectorAll('input, select, textarea')) {
              if (el.type === 'hidden') continue;
              const labelled = (el.id && document.querySelector(`label[for="${el.id}"]`))
                || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby')
                || el.closest('label');
              if (!labelled) out.push(el.outerHTML.slice(0, 120));
            }
            return out;""")
        check(f"accessibility: every control of {path} has a label", not unlabelled, unlabelled)
        foreign = b.driver.execute_script("""
            return performance.getEntriesByType('resource').map(e => e.name)
              .filter(n => new URL(n).host !== location.host);""")
        check(f"no external request from {path}", not foreign, foreign)
    b.open("/topics")
    b.find("body").send_keys(Keys.TAB)
    first = b.driver.switch_to.active_element
    check("keyboard: Tab first reaches the skip link",
          first.get_attribute("class") == "skip" and first.get_attribute("href").endswith("#main"))


def read_only(b, env, work):
    port = free_ports(1)[0]
    log = os.path.join(work, "console-read-only.log")
    spawn([SLUICE, "console", "--bootstrap-server", env["bootstrap"], "--listen", f"127.0.0.1:{port}",
           "--registry-url", env["registry"], "--connect-url", env["connect"],
           "--set", "console.read.only=true"], log)
    base = "http://" + log_line(log, "sluice console: serving on ").rstrip("/").removeprefix("http://")
    viewer = Browser(base, b.shots)
    try:
        forms = {}
        for path in ["/topics", "/topics/web-orders", "/topics/web-orders/messages", "/groups/web-reset",
                     "/schemas", "/connectors"]:
            viewer.open(path)
            # Dry runs (a compatibility check, a config validation) stay: they change nothing.
            forms[path] = viewer.driver.execute_script("""
                const dry = /\\/(check|validate|preview)$/;
                return [...document.querySelectorAll('form.api-form')]
                    .filter(f => !dry.test(f.dataset.api)).length
                  + [...document.querySelectorAll('form.api-form button[type=submit]')]
                    .filter(b => !b.dataset.api && !dry.test(b.form.dataset.api)).length
                  + document.querySelectorAll('button.api-action').length;""")
        check("read-only: no page offers a change", not any(forms.values()), forms)
        check("read-only: the header says so", "read-only" in viewer.text("header"))
        viewer.shot("read-only-topics")
    finally:
        viewer.quit()
    status, body = http("POST", base + "/api/topics", {"name": "sneaky"})
    check("read-only: a change sent anyway is refused (403) and not applied",
          status == 403 and "sneaky" not in env["admin"].list_topics(timeout=10).topics, (status, body))


def start_lagging_group(env):
    """A producer writing ~20 records a second to web-lagging, and a group committing only
    5 more each 1.2 s: Burrow's rules call it WARN (lag growing over the window)."""
    admin = env["admin"]
    for topic, future in admin.create_topics([NewTopic("web-lagging", 1, 1)]).items():
        future.result()

    def produce():
        producer = Producer({"bootstrap.servers": env["bootstrap"], "linger.ms": 5})
        while not env["stop"].is_set():
            for _ in range(4):
                producer.produce("web-lagging", b"x" * 16)
            producer.poll(0)
            time.sleep(0.2)
        producer.flush(10)

    def commit():
        consumer = Consumer({"bootstrap.servers": env["bootstrap"], "group.id": "web-lagging",
                             "enable.auto.commit": False})
        offset = 0
        try:
            while not env["stop"].wait(1.2):
                offset += 5
                consumer.commit(offsets=[TopicPartition("web-lagging", 0, offset)], asynchronous=False)
        finally:
            consumer.close()

    for body in (produce, commit):
        threading.Thread(target=body, daemon=True).start()


def end_offsets(env, topic, partitions):
    consumer = Consumer({"bootstrap.servers": env["bootstrap"], "group.id": "console-check-probe"})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                for p in range(partitions)]
    finally:
        consumer.close()


def browse(b):
    """Clicks Browse and waits for the stream's end line (the status names why it ended)."""
    b.click("#browse-button")
    ended = ("read to the end", "reached the maximum", "scanned as many", "ran as long")
    b.wait_text("#browse-status", lambda t: any(e in t for e in ended), "the browse's end")
    return [r.text for r in b.finds("#messages tr.message")]


def messages(b, env):
    b.open("/topics/web-orders/messages")
    before = end_offsets(env, "web-orders", 3)
    # 10 MB: more than the broker's message.max.bytes (1 MiB by default).
    b.fill("f-produce_key", "too-big")
    b.fill_js("f-produce_value", "x" * (10 * 1024 * 1024))
    b.click("form.api-form[data-api$='/messages'] button[type=submit]")
    error = b.wait_text("[data-error-for='produce_value']", bool, "the oversized value's error", 60)
    check("produce: a 10 MB value gets the broker's error next to the value",
          "TOO_LARGE" in error.upper() or "too large" in error, error)
    check("produce: nothing was written", end_offsets(env, "web-orders", 3) == before)
    b.fill_js("f-produce_value", "")
    b.fill("f-produce_key", "order-1")
    b.fill("f-produce_value", '{"id": 1, "total": 9.5, "customer": "ada"}')
    b.fill("f-produce_headers", "trace-id=abc123\nsource=console")
    status = None
    b.click("form.api-form[data-api$='/messages'] button[type=submit]")
    status = b.wait_text("form.api-form[data-api$='/messages'] .form-status", bool, "the produce result")
    check("produce: a message with headers written from the page", "offset" in status, status)
    for key, value in (("order-2", '{"id": 2, "total": 120, "customer": "bob"}'),
                       ("order-3", '{"id": 3, "total": 12, "customer": "cy"}')):
        b.fill("f-produce_key", key)
        b.fill("f-produce_value", value)
        b.fill("f-produce_headers", "trace-id=other")
        b.click("form.api-form[data-api$='/messages'] button[type=submit]")
        wait_until("the produce result", lambda: key in b.text("form.api-form[data-api$='/messages'] .form-status")
                   or "offset" in b.text("form.api-form[data-api$='/messages'] .form-status"))
    check("produce: the three messages are in the topic",
          sum(end_offsets(env, "web-orders", 3)) == sum(before) + 3)
    # Find it with a header filter.
    b.open("/topics/web-orders/messages")
    b.fill("f-header", "abc123")
    rows = browse(b)
    check("browse: a header filter finds the message, with its headers and JSON value",
          len(rows) == 1 and "order-1" in rows[0] and "trace-id" in rows[0] and "abc123" in rows[0]
          and '"customer": "ada"' in rows[0], rows)
    b.shot("messages")
    b.fill("f-header", "")
    b.fill("f-expr", 'json.total > 10 && header.trace-id == "other"')
    rows = browse(b)
    check("browse: an expression over the JSON value and a header",
          len(rows) == 2 and any("order-2" in r for r in rows) and any("order-3" in r for r in rows), rows)
    b.fill("f-expr", "json.total >")
    b.click("#browse-button")
    error = b.wait_text("[data-error-for='expr']", bool, "the expression's error")
    check("browse: a malformed expression is explained next to it", error != "", error)


def avro(b, env):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    for topic, future in env["admin"].create_topics([NewTopic("web-avro", 1, 1)]).items():
        future.result()
    schema = json.dumps({"type": "record", "name": "Widget", "namespace": "shop",
                         "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]})
    client = SchemaRegistryClient({"url": env["registry"]})
    serializer = AvroSerializer(client, schema)
    producer = Producer({"bootstrap.servers": env["bootstrap"]})
    value = serializer({"id": 7, "name": "sprocket"}, SerializationContext("web-avro", MessageField.VALUE))
    producer.produce("web-avro", key=b"w7", value=value)
    producer.flush(10)
    b.open("/topics/web-avro/messages")
    rows = browse(b)
    row = rows[0] if rows else ""
    check("browse: an Avro value (confluent-kafka's serializer) decoded through the registry",
          '"name": "sprocket"' in row and '"id": 7' in row and "avro" in row.lower(), row)
    b.shot("messages-avro")


def committed(env, group, topic, partitions):
    from confluent_kafka import ConsumerGroupTopicPartitions
    futures = env["admin"].list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])])
    result = futures[group].result(timeout=10)
    return {tp.partition: tp.offset for tp in result.topic_partitions}


def groups(b, env):
    # A group that read web-orders to its end and left: Empty, offsets at the end.
    consumer = Consumer({"bootstrap.servers": env["bootstrap"], "group.id": "web-reset",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["web-orders"])
    read = 0
    deadline = time.time() + WAIT
    while read < 3 and time.time() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            read += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    ends = end_offsets(env, "web-orders", 3)
    before = committed(env, "web-reset", "web-orders", 3)
    check("groups: the group committed the end of web-orders' partitions that hold messages",
          all(before[p] == end for p, end in enumerate(ends) if end > 0), (before, ends))
    b.open("/groups")
    wait_until("web-reset in the list", lambda: "web-reset" in b.text("#groups") or b.driver.refresh())
    b.shot("groups")
    b.open("/groups/web-reset")
    # One topic named: every partition of it, committed or not (kafka-consumer-groups
    # --topic).
    Select(b.find("#f-reset_topic")).select_by_value("web-orders")
    Select(b.find("#f-scenario")).select_by_value("to-earliest")
    b.click("#reset-preview-button")
    preview = b.wait_text("#reset-preview", bool, "the dry run's table")
    check("reset offsets: the dry run shows every partition going to 0",
          preview.count("web-orders") == 3, preview)
    check("reset offsets: the dry run changed nothing",
          committed(env, "web-reset", "web-orders", 3) == before)
    b.shot("group-reset-preview")
    b.click("#reset-apply-button")
    wait_until("the reset", lambda: committed(env, "web-reset", "web-orders", 3) == {0: 0, 1: 0, 2: 0})
    # The page reloads after the reset: the dry run's table is gone, the offsets are 0.
    wait_until("the page reloaded after the reset", lambda: not b.text("#reset-preview"))
    check("reset offsets: applied, every partition at 0", True)


def lagging(b, env):
    b.open("/groups/web-lagging")

    seen = []

    def warned():
        b.driver.refresh()
        text = b.text("#group-status")
        seen.append(text)
        return "WARN" in text
    try:
        wait_until("Burrow's WARN on the lagging group", warned, 60)
    except SystemExit as error:
        raise SystemExit(f"{error}; the status read {seen[-5:]}; the page: {b.text('main')[:3000]}")
    check("lag: the lagging group is marked WARN", "WARN" in b.text("#group-status"))
    why = b.text("#why-lagging")
    kinds = [li.get_attribute("data-kind") for li in b.finds("#lag-findings li.finding")]
    check("lag: 'why is it lagging' finds the lag growing (20/s produced, 4/s committed), not a "
          "stopped consumer", kinds == ["growing"], (kinds, why))
    b.open("/groups")
    row = [r.text for r in b.finds("#groups tbody tr") if "web-lagging" in r.text]
    check("lag: the group list shows WARN too", row and "WARN" in row[0], row)
    b.open("/groups/web-lagging")
    b.shot("group-lagging")


def schemas(b, env):
    subject = "web-avro-value"
    b.open("/schemas")
    check("schemas: the subject is listed", subject in b.text("#subjects"), b.text("main"))
    b.shot("schemas")
    b.open(f"/schemas/{subject}")
    incompatible = json.dumps({"type": "record", "name": "Widget", "namespace": "shop",
                               "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
                                          {"name": "price", "type": "double"}]})
    b.fill_js("f-schema", incompatible)
    b.click("form[data-api$='/versions'] button[data-api$='/check']")
    result = b.wait_text("#compat-result", bool, "the compatibility check")
    check("schemas: the check says the new version is incompatible, and why",
          "false" in result.lower() or "incompatible" in result.lower(), result)
    b.click("form[data-api$='/versions'] button:not([data-api])")
    error = b.wait_text("form[data-api$='/versions'] [data-error-for='schema']", bool, "the registry's refusal")
    check("schemas: registering it shows the registry's 409 reason next to the schema",
          "409" in error and "price" in error, error)
    status, versions = http("GET", f"{env['registry']}/subjects/{subject}/versions")
    check("schemas: nothing was registered", status == 200 and json.loads(versions) == [1], versions)
    b.shot("schema-incompatible")
    compatible = json.dumps({"type": "record", "name": "Widget", "namespace": "shop",
                             "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
                                        {"name": "price", "type": "double", "default": 0.0}]})
    b.fill_js("f-schema", compatible)
    b.click("form[data-api$='/versions'] button:not([data-api])")
    wait_until("version 2", lambda: json.loads(http("GET", f"{env['registry']}/subjects/{subject}/versions")[1]) == [1, 2])
    b.open(f"/schemas/{subject}")
    diff = b.text(".diff")
    check("schemas: versions 1 and 2 side by side, the new field marked", "price" in diff
          and b.finds(".diff .add"), diff)
    b.shot("schema-diff")


def connectors(b, env):
    source = os.path.join(env["work"], "web-source.txt")
    with open(source, "w") as f:
        f.write("line one\nline two\n")
    b.open("/connectors")
    b.fill_js("f-config", '{"name": "web-file", "config": {"connector.class": ')
    b.click("form[data-api='/api/connectors'] button:not([data-api])")
    error = b.wait_text("[data-error-for='config']", bool, "the malformed JSON's error")
    check("connectors: malformed JSON is explained next to the field", "malformed" in error.lower(), error)
    check("connectors: nothing was created", json.loads(http("GET", env["connect"] + "/connectors")[1]) == [])
    config = {"name": "web-file", "config": {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "tasks.max": "1", "file": source, "topic": "web-file-lines"}}
    b.fill_js("f-config", json.dumps(config, indent=2))
    b.click("form[data-api='/api/connectors'] button:not([data-api])")

    def running():
        b.open("/connectors/web-file")
        return "RUNNING" in b.text("main")
    wait_until("the connector RUNNING", running, 60)
    check("connectors: created from JSON and RUNNING", "RUNNING" in b.text("main"))
    b.shot("connector")
    b.open("/connectors")
    check("connectors: listed RUNNING", "RUNNING" in b.text("#connectors"), b.text("#connectors"))
    b.shot("connectors")


# --- the run -----------------------------------------------------------------------------

def start_node(work):
    broker, controller, registry, connect, monitor, console, metrics = free_ports(7)
    config = os.path.join(work, "monitor.toml")
    monitor_config(config, [f"127.0.0.1:{broker}"])
    log = os.path.join(work, "sluice.log")
    spawn([SLUICE, "server",
           "--set", f"log.dirs={work}/data",
           "--set", f"listeners=PLAINTEXT://127.0.0.1:{broker},CONTROLLER://127.0.0.1:{controller}",
           "--set", f"advertised.listeners=PLAINTEXT://127.0.0.1:{broker}",
           "--set", "group.initial.rebalance.delay.ms=0",
           "--set", f"metrics.listener=127.0.0.1:{metrics}",
           "--set", "console.sample.interval.ms=1000",
           "--with-registry", "--registry-listen", f"127.0.0.1:{registry}",
           "--with-connect", "--connect-listen", f"127.0.0.1:{connect}",
           "--with-monitor", "--monitor-listen", f"127.0.0.1:{monitor}", "--monitor-config", config,
           "--with-console", "--console-listen", f"127.0.0.1:{console}"], log)
    log_line(log, "sluice: console on ")
    env = {
        "bootstrap": f"127.0.0.1:{broker}",
        "registry": f"http://127.0.0.1:{registry}",
        "connect": f"http://127.0.0.1:{connect}",
        "console": f"http://127.0.0.1:{console}",
        "work": work,
    }
    wait_until("the registry", lambda: http("GET", env["registry"] + "/subjects")[0] == 200)
    wait_until("the Connect worker", lambda: http("GET", env["connect"] + "/connectors")[0] == 200, 60)
    env["admin"] = AdminClient({"bootstrap.servers": env["bootstrap"]})
    return env


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--screenshots", default=os.path.join(ROOT, "target", "console-screenshots"))
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--headed", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.screenshots, exist_ok=True)
    print(f"screenshots: {args.screenshots}", flush=True)
    work = tempfile.mkdtemp(prefix="sluice-console-check-")
    start = time.time()
    browser = None
    stop = threading.Event()
    try:
        env = start_node(work)
        env["stop"] = stop
        start_lagging_group(env)
        browser = Browser(env["console"], args.screenshots, args.headed)
        overview(browser, env)
        topics(browser, env)
        messages(browser, env)
        avro(browser, env)
        groups(browser, env)
        lagging(browser, env)
        schemas(browser, env)
        connectors(browser, env)
        planner(browser, env)
        accessibility(browser, env, ["/", "/topics", "/topics/web-orders", "/topics/web-orders/messages",
                                     "/groups", "/groups/web-reset", "/schemas", "/connectors", "/plan"])
        severe = browser.console_errors()
        check("no script error in the browser's console on any page", not severe, severe)
        read_only(browser, env, work)
    finally:
        stop.set()
        if browser:
            browser.quit()
        stop_all()
        if failures:
            for name in os.listdir(work):
                if name.endswith(".log"):
                    print(f"--- {name} (tail)")
                    with open(os.path.join(work, name), errors="replace") as f:
                        print("".join(f.readlines()[-30:]))
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{'FAILED' if failures else 'ok'}: {len(failures)} failure(s) in {time.time() - start:.0f}s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
