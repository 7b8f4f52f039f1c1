// The Sluice console's one script: submits `form.api-form` as JSON to the API, shows
// each error next to its field, runs `button.api-action`, and filters tables.
// No library, no request to another host.
"use strict";

function formBody(form) {
  const body = {};
  for (const el of form.elements) {
    if (!el.name || el.disabled) continue;
    if (el.type === "checkbox") body[el.name] = el.checked;
    else if (el.type === "number") body[el.name] = el.value === "" ? null : Number(el.value);
    else if (el.type === "radio") { if (el.checked) body[el.name] = el.value; }
    else body[el.name] = el.value;
  }
  return body;
}

function clearErrors(scope) {
  for (const p of scope.querySelectorAll("[data-error-for]")) p.textContent = "";
  for (const el of scope.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
  const status = scope.querySelector(".form-status");
  if (status) status.textContent = "";
}

// Shows an API error: next to its field when it names one the form has, else for the
// whole form. Focus moves to the field so a keyboard user lands on it.
function showError(scope, error) {
  const field = error && error.field;
  let target = field ? scope.querySelector(`[data-error-for="${CSS.escape(field)}"]`) : null;
  if (!target) target = scope.querySelector('[data-error-for="_form"]');
  const message = (error && error.message) || "the request failed";
  if (target) target.textContent = message; else alert(message);
  if (field) {
    const input = scope.querySelector(`[name="${CSS.escape(field)}"]`);
    if (input) { input.setAttribute("aria-invalid", "true"); input.focus(); }
  }
}

async function callApi(url, method, body) {
  const init = { method, headers: { "Accept": "application/json" } };
  if (body !== undefined && method !== "GET") {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (e) {
    return { ok: false, data: { error: { message: `the console did not answer: ${e}` } } };
  }
  let data = {};
  try { data = await response.json(); } catch (e) { data = {}; }
  if (!response.ok && !data.error) data.error = { message: `HTTP ${response.status}` };
  return { ok: response.ok, data };
}

function onSuccess(scope, how, data) {
  if (how === "reload") { location.reload(); return; }
  if (how === "redirect") { location.assign(data.redirect || location.href); return; }
  if (how && how.startsWith("result:")) {
    const target = document.getElementById(how.slice(7));
    if (target) target.innerHTML = data.html || "";
  }
  const status = scope.querySelector(".form-status");
  if (status) status.textContent = data.message || "Done.";
}

document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (!form.matches("form.api-form")) return;
  event.preventDefault();
  clearErrors(form);
  const submitter = event.submitter;
  const body = formBody(form);
  // A second submit button can send to another API (`data-api` on the button), e.g.
  // "Preview" beside "Apply".
  const api = (submitter && submitter.dataset.api) || form.dataset.api;
  const how = (submitter && submitter.dataset.success) || form.dataset.success;
  const buttons = form.querySelectorAll("button");
  for (const b of buttons) b.disabled = true;
  form.setAttribute("aria-busy", "true");
  const { ok, data } = await callApi(api, form.dataset.method || "POST", body);
  for (const b of buttons) b.disabled = false;
  form.removeAttribute("aria-busy");
  if (ok) onSuccess(form, how, data); else showError(form, data.error);
});

document.addEventListener("click", async (event) => {
  const button = event.target.closest("button.api-action");
  if (!button) return;
  const scope = button.closest("section, tr, main") || document.body;
  const body = button.dataset.body ? JSON.parse(button.dataset.body) : {};
  button.disabled = true;
  const { ok, data } = await callApi(button.dataset.api, button.dataset.method || "POST", body);
  button.disabled = false;
  if (ok) location.reload(); else showError(scope, data.error);
});

document.addEventListener("input", (event) => {
  const box = event.target;
  if (!box.matches("input[data-filter-table]")) return;
  const table = document.getElementById(box.dataset.filterTable);
  if (!table) return;
  const needle = box.value.toLowerCase();
  for (const row of table.tBodies[0].rows) {
    row.hidden = needle !== "" && !row.textContent.toLowerCase().includes(needle);
  }
});
