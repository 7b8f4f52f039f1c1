// The message browser: reads the NDJSON stream of GET /api/topics/{topic}/messages and
// appends a row per record as each line arrives; "Live" keeps asking for what came after
// (from the positions the last answer ended at) about once a second; "Stop" aborts;
// "More" continues where the last browse stopped. Data goes into the page with
// textContent only. The produce form below the table is console.js's (form.api-form).
"use strict";

(function () {
  const form = document.getElementById("browse");
  const table = document.getElementById("messages");
  if (!form || !table) return;
  const tbody = table.tBodies[0];
  const status = document.getElementById("browse-status");
  const errorList = document.getElementById("browse-errors");
  const browseButton = document.getElementById("browse-button");
  const stopButton = document.getElementById("stop-button");
  const moreButton = document.getElementById("more-button");
  const live = document.getElementById("f-live");
  const api = form.dataset.api;
  const PARAMS = ["partition", "from", "offset", "timestamp", "limit", "key", "value", "header", "expr", "decode"];
  const STRUCTURED = new Set(["json", "avro", "protobuf", "json-schema"]);
  const MAX_ROWS = 5000;
  const LIVE_INTERVAL_MS = 1000;

  let generation = 0;      // bumps on every new browse or stop: stale loops end
  let controller = null;   // aborts the request in flight
  let lastEnd = null;      // the last {"end": ...}
  let totals = { scanned: 0, matched: 0 };

  function query(positions) {
    const params = new URLSearchParams();
    for (const name of PARAMS) {
      const el = form.elements[name];
      if (el && el.value !== "") params.set(name, el.value);
    }
    if (positions) {
      params.set("positions", Object.entries(positions).map(([p, o]) => `${p}:${o}`).join(","));
    }
    return params;
  }

  function clearErrors() {
    for (const p of form.querySelectorAll("[data-error-for]")) p.textContent = "";
    for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
    errorList.replaceChildren();
  }

  // An API error: next to its field when the form has it, else for the whole form.
  function showError(error) {
    const field = error && error.field;
    const message = (error && error.message) || "the request failed";
    let target = field ? form.querySelector(`[data-error-for="${CSS.escape(field)}"]`) : null;
    if (!target) target = form.querySelector('[data-error-for="_form"]');
    target.textContent = message;
    if (field) {
      const input = form.querySelector(`[name="${CSS.escape(field)}"]`);
      if (input) { input.setAttribute("aria-invalid", "true"); input.focus(); }
    }
  }

  // An error line of the stream (the browse goes on).
  function addStreamError(message) {
    const li = document.createElement("li");
    li.textContent = message;
    errorList.appendChild(li);
  }

  function setRunning(running) {
    stopButton.disabled = !running;
    browseButton.disabled = false;
    moreButton.disabled = running || !lastEnd || lastEnd.done;
    table.setAttribute("aria-busy", running ? "true" : "false");
  }

  function utc(ms) {
    if (typeof ms !== "number" || ms < 0) return "—";
    const d = new Date(ms);
    return isNaN(d.getTime()) ? String(ms) : d.toISOString().replace("T", " ").replace("Z", "");
  }

  function show(value, format) {
    if (value === null || value === undefined) return "null";
    if (STRUCTURED.has(format)) return JSON.stringify(value, null, 2);
    return String(value);
  }

  function badge(text, kind) {
    const span = document.createElement("span");
    span.className = `badge ${kind}`;
    span.textContent = text;
    return span;
  }

  // A key or value cell: the shown text, and why it is not decoded as asked.
  function dataCell(value, format, error, truncated) {
    const td = document.createElement("td");
    const pre = document.createElement("pre");
    pre.textContent = show(value, format);
    if (format === "null") pre.className = "muted";
    td.appendChild(pre);
    if (truncated) {
      const note = document.createElement("small");
      note.className = "muted";
      note.textContent = "(truncated)";
      td.appendChild(note);
    }
    if (error) {
      const p = document.createElement("p");
      p.className = "error";
      p.textContent = error;
      td.appendChild(p);
    }
    return td;
  }

  function addRow(r) {
    const tr = document.createElement("tr");
    tr.className = "message";
    tr.dataset.partition = r.partition;
    tr.dataset.offset = r.offset;
    const cell = (text, cls) => {
      const td = document.createElement("td");
      if (cls) td.className = cls;
      td.textContent = text;
      tr.appendChild(td);
      return td;
    };
    cell(String(r.partition), "num");
    cell(String(r.offset), "num");
    const time = cell(utc(r.timestamp));
    time.title = `${r.timestamp} ms (${r.timestamp_type})`;
    tr.appendChild(dataCell(r.key, r.key_format, r.key_error, r.key_truncated));
    tr.appendChild(dataCell(r.value, r.value_format, r.value_error, r.value_truncated));
    const format = cell("");
    const valueBadge = badge(r.value_format + (r.schema_id !== undefined ? ` #${r.schema_id}` : ""),
      r.value_error ? "warn" : "muted");
    valueBadge.title = "value format";
    format.appendChild(valueBadge);
    if (r.key_format && r.key_format !== "text" && r.key_format !== "null") {
      format.appendChild(document.createTextNode(" "));
      const keyBadge = badge(`key: ${r.key_format}` + (r.key_schema_id !== undefined ? ` #${r.key_schema_id}` : ""),
        r.key_error ? "warn" : "muted");
      keyBadge.title = "key format";
      format.appendChild(keyBadge);
    }
    const size = document.createElement("small");
    size.className = "muted";
    size.textContent = ` ${r.size} B`;
    format.appendChild(size);
    const headers = cell("");
    if (r.headers && r.headers.length) {
      const pre = document.createElement("pre");
      pre.textContent = r.headers
        .map((h) => `${h.name}=${h.value === null ? "(null)" : h.value}${h.hex ? " (hex)" : ""}`)
        .join("\n");
      headers.appendChild(pre);
    }
    tbody.appendChild(tr);
    while (tbody.rows.length > MAX_ROWS) tbody.deleteRow(0);
  }

  const REASONS = {
    end: "read to the end",
    limit: "reached the maximum number of messages",
    "scan-bound": "scanned as many records as one browse reads",
    time: "ran as long as one browse may",
    error: "stopped by an error",
    "shutting-down": "the console is shutting down",
  };

  function showStatus(end, following) {
    const rows = tbody.rows.length;
    let text = `${rows} message${rows === 1 ? "" : "s"} shown · scanned ${totals.scanned}, matched ${totals.matched}`;
    if (end) {
      text += ` · ${REASONS[end.reason] || end.reason}`;
      if (!end.done && end.reason !== "end") text += " (More continues)";
    }
    if (following) text += " · Live: following new messages";
    status.textContent = text;
  }

  // One request: rows as the lines arrive; answers the end line, or null when it failed
  // or was superseded.
  async function request(params, gen, signal) {
    let response;
    try {
      response = await fetch(`${api}?${params}`, { signal, headers: { Accept: "application/x-ndjson" } });
    } catch (e) {
      if (gen === generation && e.name !== "AbortError") showError({ message: `the console did not answer: ${e}` });
      return null;
    }
    if (!response.ok) {
      let data = {};
      try { data = await response.json(); } catch (e) { data = {}; }
      if (gen === generation) showError(data.error || { message: `HTTP ${response.status}` });
      return null;
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let end = null;
    const handle = (line) => {
      if (!line.trim() || gen !== generation) return;
      let item;
      try { item = JSON.parse(line); } catch (e) { addStreamError(`an unreadable line: ${line.slice(0, 200)}`); return; }
      if (item.record) addRow(item.record);
      else if (item.error) addStreamError(item.error.message || JSON.stringify(item.error));
      else if (item.end) end = item.end;
    };
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        if (gen !== generation) { reader.cancel(); return null; }
        buffer += decoder.decode(value, { stream: true });
        let newline;
        while ((newline = buffer.indexOf("\n")) >= 0) {
          handle(buffer.slice(0, newline));
          buffer = buffer.slice(newline + 1);
        }
        showStatus(null, false);
      }
      buffer += decoder.decode();
      handle(buffer);
    } catch (e) {
      if (gen === generation && e.name !== "AbortError") addStreamError(`the stream broke: ${e}`);
      return null;
    }
    if (gen !== generation) return null;
    if (!end) addStreamError("the answer ended early (no end line)");
    return end;
  }

  function sleep(ms, signal) {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
    });
  }

  // Browses: from the form's start (positions null) or from positions; appending keeps
  // the rows already shown. With Live on it keeps going until stopped or unchecked.
  async function browse(positions, append) {
    if (controller) controller.abort();
    const gen = ++generation;
    controller = new AbortController();
    const signal = controller.signal;
    clearErrors();
    if (!append) {
      tbody.replaceChildren();
      totals = { scanned: 0, matched: 0 };
      lastEnd = null;
      history.replaceState(null, "", `?${query(null)}`);
    }
    setRunning(true);
    status.textContent = "Reading…";
    let params = query(positions);
    for (;;) {
      const end = await request(params, gen, signal);
      if (gen !== generation) return;
      if (!end) break;
      lastEnd = end;
      totals.scanned += end.scanned;
      totals.matched += end.matched;
      const following = live.checked && end.reason !== "error" && end.reason !== "shutting-down";
      showStatus(end, following);
      if (!following) break;
      // More is waiting: ask at once; else wait for new messages.
      if (end.reason === "end") await sleep(LIVE_INTERVAL_MS, signal);
      if (gen !== generation || signal.aborted) return;
      params = query(end.positions);
    }
    if (gen === generation) {
      controller = null;
      setRunning(false);
      if (!lastEnd) status.textContent = "";
    }
  }

  function stop() {
    generation++;
    if (controller) controller.abort();
    controller = null;
    setRunning(false);
    showStatus(lastEnd, false);
    status.textContent += " · stopped";
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    browse(null, false);
  });
  stopButton.addEventListener("click", stop);
  moreButton.addEventListener("click", () => {
    if (lastEnd) browse(lastEnd.positions, true);
  });
  // Turning Live on after a browse follows from where it ended.
  live.addEventListener("change", () => {
    if (live.checked && !controller && lastEnd) browse(lastEnd.positions, true);
  });
  window.addEventListener("pagehide", () => {
    generation++;
    if (controller) controller.abort();
  });

  browse(null, false);
})();
