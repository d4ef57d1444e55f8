// Kneeboard interim dashboard: plain ES2020, no dependencies, no build step.
// Selection lives in the URL hash (#project=<id>&job=<id>) so a reload or a permalink restores it.
"use strict";

const API = "/api/v1";
const POLL_MS = 2000;
const ACTIVE = new Set(["queued", "running"]);
const MAX_LIST = 20; // longer lists in the fidelity summary are shown as "N items"

const state = {
  projects: null, projectId: null, jobId: null, models: null, datasets: null, jobs: null,
  expanded: new Set(), // ids of the models whose layer table is open
  seq: 0, reportSeq: 0, pollTimer: null, // seq/reportSeq discard answers that arrive after a newer selection
};

// ------------------------------------------------------------------ helpers

const $ = (sel) => document.querySelector(sel);

// Builds an element; text is always set as text, never parsed as HTML.
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c != null && c !== false) el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

// replaceChildren that skips null/false children and tolerates a container that is gone.
function put(el, ...kids) {
  if (el) el.replaceChildren(...kids.flat(Infinity).filter((k) => k != null && k !== false));
}

// fetch JSON; a failure throws an Error carrying the API's {"detail": ...} message.
async function api(path, options) {
  let res;
  try {
    res = await fetch(API + path, { headers: { Accept: "application/json" }, ...options });
  } catch (err) {
    throw new Error(`Cannot reach the API (${err.message})`);
  }
  const text = await res.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
  if (res.ok) return body;
  const detail = body?.detail;
  throw new Error(`${res.status}: ${detail == null ? text || res.statusText : typeof detail === "string" ? detail : JSON.stringify(detail)}`);
}

const dash = () => h("span", { class: "muted", title: "not available" }, "—");
const fmtNum = (v) => (typeof v !== "number" || !Number.isFinite(v) ? String(v)
  : Number.isInteger(v) ? v.toLocaleString("en-US") : v.toPrecision(4));

function fmtCount(n) { // parameters, MACs: "1.235 M", exact value on hover
  if (typeof n !== "number") return dash();
  const [div, unit] = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]].find(([d]) => Math.abs(n) >= d) || [1, ""];
  return h("span", { title: n.toLocaleString("en-US") }, unit ? `${(n / div).toPrecision(4)} ${unit}` : String(n));
}

function fmtBytes(n) {
  if (typeof n !== "number") return dash();
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  for (; n >= 1024 && i < units.length - 1; i += 1) n /= 1024;
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

function fmtDuration(s) {
  if (typeof s !== "number") return dash();
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

const fmtTime = (iso) => (iso ? new Date(iso).toLocaleString() : dash());
const badge = (status) => h("span", { class: `badge badge-${status}` }, status);
const loading = () => h("p", { class: "muted" }, "Loading…");
const empty = (...text) => h("p", { class: "empty" }, ...text);
const errorBox = (err) => h("p", { class: "error" }, err.message || String(err));
const num = (v) => h("td", { class: "num" }, v == null ? dash() : v);

// columns: [label, class?]; rows: <tr> elements
const table = (columns, rows, cls) => h("table", { class: cls },
  h("thead", {}, h("tr", {}, columns.map(([label, c]) => h("th", { scope: "col", class: c }, label)))),
  h("tbody", {}, rows));

function flash(message) {
  const el = $("#flash");
  el.textContent = message;
  el.hidden = false;
  clearTimeout(flash.timer);
  flash.timer = setTimeout(() => { el.hidden = true; }, 8000);
}

// Re-rendering replaces DOM nodes: keep keyboard focus on the "same" control, matched by data-key.
function keepFocus(render) {
  const key = document.activeElement?.dataset?.key;
  render();
  if (key) document.querySelector(`[data-key="${CSS.escape(key)}"]`)?.focus();
}

// ------------------------------------------------------------------ routing

function setHash(projectId, jobId) {
  const p = new URLSearchParams();
  if (projectId) p.set("project", projectId);
  if (jobId) p.set("job", jobId);
  if (location.hash === `#${p}`) route(true); // a click on the current selection reloads it
  else location.hash = `#${p}`;
}

function route(force = false) {
  const p = new URLSearchParams(location.hash.slice(1));
  const projectId = p.get("project");
  const jobId = projectId ? p.get("job") : null;
  const projectChanged = force || projectId !== state.projectId;
  const jobChanged = projectChanged || jobId !== state.jobId;
  Object.assign(state, { projectId, jobId });
  renderProjects();
  if (projectChanged) loadProject();
  if (jobChanged) loadReport();
}

// ------------------------------------------------------------------ projects

async function loadProjects() {
  put($("#projects"), loading());
  try {
    state.projects = await api("/projects");
  } catch (err) {
    state.projects = null;
    put($("#projects"), errorBox(err));
    put($("#main"), errorBox(err));
    return;
  }
  renderProjects();
}

function renderProjects() {
  if (!state.projects) return;
  put($("#projects"), state.projects.length ? h("ul", { class: "project-list" }, state.projects.map((p) =>
    h("li", {}, h("button", {
      type: "button", "data-key": `project-${p.id}`, title: p.description || p.name,
      "aria-current": p.id === state.projectId ? "page" : null, onclick: () => setHash(p.id, null),
    }, p.name)))) : empty("None yet."));
}

const section = (key, title) => h("section", { "aria-labelledby": `${key}-heading` },
  h("h3", { id: `${key}-heading` }, title), h("div", { id: `${key}-body` }, loading()));

async function loadProject() {
  stopPolling();
  const id = state.projectId;
  const seq = ++state.seq;
  Object.assign(state, { models: null, datasets: null, jobs: null });
  state.expanded.clear();
  if (!state.projects) return;
  if (!id) {
    put($("#main"), state.projects.length ? empty("Select a project on the left.")
      : empty("No projects yet — create one with POST /api/v1/projects, see ", h("a", { href: "/docs" }, "/docs"), "."));
    return;
  }
  const project = state.projects.find((p) => p.id === id);
  put($("#main"), h("h2", {}, project ? project.name : `Project ${id}`),
    project?.description ? h("p", { class: "muted" }, project.description) : null,
    section("models", "Models"), section("datasets", "Datasets"), section("jobs", "Jobs"),
    h("section", { id: "report", "aria-live": "polite" }));
  const load = async (key, path, render) => {
    try {
      const data = await api(path);
      if (seq !== state.seq) return;
      state[key] = data;
      render();
    } catch (err) {
      if (seq === state.seq) put($(`#${key}-body`), errorBox(err));
    }
  };
  await Promise.all([
    load("models", `/projects/${id}/models`, renderModels),
    load("datasets", `/projects/${id}/datasets`, renderDatasets),
    load("jobs", `/jobs?project_id=${encodeURIComponent(id)}&limit=50`, renderJobs),
  ]);
  if (seq === state.seq) schedulePoll();
}

// ------------------------------------------------------------------ models & datasets

function renderModels() {
  if (!state.models.length) {
    put($("#models-body"), empty("No models yet — upload one with POST /api/v1/projects/{id}/models."));
    return;
  }
  const rows = state.models.map((m) => {
    const ins = m.inspection || {};
    const open = state.expanded.has(m.id);
    const name = m.status !== "ready" ? m.name : h("button", {
      type: "button", class: "link", "aria-expanded": String(open), "data-key": `model-${m.id}`,
      title: "Show the layer table", onclick: () => toggleModel(m.id),
    }, `${open ? "▾" : "▸"} ${m.name}`);
    return [
      h("tr", {}, h("th", { scope: "row" }, name), h("td", {}, m.format), num(fmtBytes(m.size_bytes)),
        h("td", {}, badge(m.status)), num(fmtCount(ins.total_params)), num(fmtCount(ins.macs))),
      m.status === "invalid" && m.error
        ? h("tr", { class: "detail" }, h("td", { colspan: 6, class: "error" }, m.error)) : null,
      open ? h("tr", { class: "detail" }, h("td", { colspan: 6 }, layerTable(ins.layers))) : null,
    ];
  });
  put($("#models-body"), table(
    [["Name"], ["Format"], ["Size", "num"], ["Status"], ["Params", "num"], ["MACs", "num"]], rows));
}

function toggleModel(id) {
  if (!state.expanded.delete(id)) state.expanded.add(id);
  keepFocus(renderModels);
}

function layerTable(layers) {
  if (!Array.isArray(layers) || !layers.length) return empty("No layer information.");
  const rows = layers.map((l, i) => h("tr", {}, num(i), h("th", { scope: "row" }, l.name ?? dash()),
    h("td", {}, l.type ?? dash()), num(fmtCount(l.params)), num(fmtCount(l.macs))));
  return h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": "Layers" },
    table([["#", "num"], ["Layer"], ["Type"], ["Params", "num"], ["MACs", "num"]], rows, "compact"));
}

function renderDatasets() {
  put($("#datasets-body"), !state.datasets.length
    ? empty("No datasets yet — upload a .npz with POST /api/v1/projects/{id}/datasets.")
    : table([["Name"], ["Samples", "num"], ["Arrays"], ["Labels"]], state.datasets.map((d) => h("tr", {},
      h("th", { scope: "row" }, d.name), num(fmtNum(d.n_samples)),
      h("td", {}, Object.entries(d.arrays || {}).map(([name, a]) =>
        h("div", {}, h("code", {}, name), ` [${a.shape.join(", ")}] ${a.dtype}`))),
      h("td", {}, d.has_labels ? "yes" : "no")))));
}

// ------------------------------------------------------------------ jobs & polling

function jobRow(j) {
  const active = ACTIVE.has(j.status);
  const reportable = j.kind === "fidelity" && j.status === "succeeded";
  const selected = j.id === state.jobId;
  const action = active
    ? h("button", { type: "button", "data-key": `cancel-${j.id}`, onclick: (e) => cancelJob(j.id, e.currentTarget) }, "Cancel")
    : reportable && h("button", {
      type: "button", "data-key": `report-${j.id}`, "aria-pressed": String(selected),
      onclick: (e) => { e.stopPropagation(); setHash(state.projectId, selected ? null : j.id); },
    }, selected ? "Hide report" : "Report");
  return [
    h("tr", {
      class: `${reportable ? "clickable" : ""} ${selected ? "selected" : ""}`.trim() || null,
      onclick: reportable ? () => setHash(state.projectId, j.id) : null, // the Report button is the keyboard path
    },
    h("td", {}, h("code", { title: j.id }, j.id.slice(0, 8))), h("th", { scope: "row" }, j.kind),
    h("td", {}, badge(j.status)),
    h("td", { class: "progress-cell" },
      h("progress", { max: 1, value: j.progress || 0, "aria-label": `${j.kind} job progress` }),
      ` ${Math.round((j.progress || 0) * 100)}%`,
      j.progress_message ? h("div", { class: "muted small" }, j.progress_message) : null),
    h("td", {}, fmtTime(j.created_at)), num(active ? "…" : fmtDuration(j.duration_s)),
    h("td", {}, j.worker_id || dash()), num(j.attempts), h("td", {}, action)),
    j.error ? h("tr", { class: "detail" }, h("td", { colspan: 9, class: "error" }, j.error)) : null,
  ];
}

function renderJobs() {
  const { items, total } = state.jobs;
  put($("#jobs-body"), !items.length ? empty("No jobs yet — start one with POST /api/v1/jobs.") : [
    table([["ID"], ["Kind"], ["Status"], ["Progress"], ["Created"], ["Duration", "num"], ["Worker"],
      ["Attempts", "num"], [h("span", { class: "sr-only" }, "Actions")]], items.map(jobRow)),
    total > items.length ? h("p", { class: "muted small" }, `Showing the latest ${items.length} of ${total} jobs.`) : null,
  ]);
}

async function cancelJob(id, button) {
  button.disabled = true;
  button.textContent = "Cancelling…";
  try {
    await api(`/jobs/${id}/cancel`, { method: "POST" });
  } catch (err) {
    flash(`Cancel failed — ${err.message}`);
  }
  await poll();
}

function stopPolling() {
  clearTimeout(state.pollTimer);
  state.pollTimer = null;
}

// Poll only while some job is queued or running.
function schedulePoll() {
  stopPolling();
  if (state.jobs?.items.some((j) => ACTIVE.has(j.status))) state.pollTimer = setTimeout(poll, POLL_MS);
}

async function poll() {
  stopPolling();
  const seq = state.seq;
  const id = state.projectId;
  if (!id) return;
  try {
    const jobs = await api(`/jobs?project_id=${encodeURIComponent(id)}&limit=50`);
    if (seq !== state.seq) return;
    const before = new Map((state.jobs?.items || []).map((j) => [j.id, j.status]));
    if (JSON.stringify(jobs) !== JSON.stringify(state.jobs)) {
      state.jobs = jobs;
      keepFocus(renderJobs);
    }
    // Inspect jobs fill in models: refresh them when a job changed status or a model is still inspecting.
    if (jobs.items.some((j) => before.get(j.id) !== j.status) || state.models?.some((m) => m.status === "inspecting")) {
      const models = await api(`/projects/${id}/models`);
      if (seq !== state.seq) return;
      if (JSON.stringify(models) !== JSON.stringify(state.models)) {
        state.models = models;
        keepFocus(renderModels);
      }
    }
    const sel = jobs.items.find((j) => j.id === state.jobId);
    if (sel && sel.status !== before.get(sel.id) && !ACTIVE.has(sel.status)) loadReport();
  } catch (err) {
    if (seq !== state.seq) return;
    flash(`Refreshing jobs failed — ${err.message}`);
  }
  if (seq === state.seq) schedulePoll();
}

// ------------------------------------------------------------------ fidelity report

async function loadReport() {
  const rseq = ++state.reportSeq;
  const jobId = state.jobId;
  const head = h("div", { class: "report-head" }, h("h3", {}, "Fidelity report"),
    h("button", { type: "button", onclick: () => setHash(state.projectId, null) }, "Close report"));
  if (!jobId) return put($("#report"));
  put($("#report"), head, loading());
  try {
    const [report, samples] = await Promise.all([
      api(`/jobs/${jobId}/fidelity`),
      api(`/jobs/${jobId}/fidelity/samples?sort=kl&order=desc&limit=20`),
    ]);
    if (rseq === state.reportSeq) put($("#report"), head, renderReport(report, samples));
  } catch (err) {
    if (rseq === state.reportSeq) put($("#report"), head, errorBox(err));
  }
}

function nameOf(list, id) {
  const row = list?.find((x) => x.id === id);
  return row ? h("span", { title: id }, row.name) : h("code", {}, id);
}

function renderReport(report, samples) {
  const meta = [
    ["Job", h("code", {}, report.job_id)],
    ["Golden model", nameOf(state.models, report.golden_model_id)],
    ["Compressed model", nameOf(state.models, report.compressed_model_id)],
    ["Dataset", nameOf(state.datasets, report.dataset_id)],
  ];
  const rows = samples.items.map((s) => h("tr", { class: s.flagged ? "flagged" : null },
    h("th", { scope: "row", class: "num" }, s.sample_index),
    [s.kl, s.cosine, s.mse].map((v) => num(v == null ? null : fmtNum(v))),
    h("td", {}, s.top1_match == null ? dash() : s.top1_match ? "yes" : "no"),
    [s.golden_class, s.compressed_class, s.label].map(num),
    h("td", {}, s.flagged ? h("strong", {}, "flagged") : "no")));
  return [
    h("dl", { class: "meta" }, meta.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    h("h4", {}, "Summary"),
    h("div", { class: "summary" }, renderSummary(report.summary || {}, 0)),
    h("h4", {}, `Worst ${samples.items.length} samples by KL`, h("span", { class: "muted small" }, ` of ${samples.total}`)),
    rows.length ? table([["Sample", "num"], ["KL", "num"], ["Cosine", "num"], ["MSE", "num"], ["Top-1 match"],
      ["Golden class", "num"], ["Compressed class", "num"], ["Label", "num"], ["Flagged"]], rows, "compact")
      : empty("No per-sample results."),
  ];
}

// The summary's keys are not final, so it is rendered generically: scalars as name -> value rows,
// nested objects (and short lists of objects) as sub-sections.
const isPlainObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const isSection = (v) => (isPlainObject(v) ? Object.keys(v).length > 0
  : Array.isArray(v) && v.length <= MAX_LIST && v.some((x) => x !== null && typeof x === "object"));

function renderValue(v) {
  if (v == null) return dash();
  if (typeof v === "number") return h("span", { title: String(v) }, fmtNum(v));
  if (typeof v === "boolean" || typeof v === "string") return String(v);
  if (!Array.isArray(v)) return "{}"; // an empty object
  if (v.length > MAX_LIST) return `${v.length} items`;
  if (!v.length) return h("span", { class: "muted" }, "(none)");
  if (v.every((x) => typeof x === "string") && v.some((x) => x.length > 30)) {
    return h("ul", {}, v.map((x) => h("li", {}, x)));
  }
  return `[${v.map((x) => (typeof x === "number" ? fmtNum(x) : String(x))).join(", ")}]`;
}

function renderSummary(obj, depth) {
  const entries = Array.isArray(obj) ? obj.map((x, i) => [`[${i}]`, x]) : Object.entries(obj);
  const scalars = entries.filter(([, v]) => !isSection(v));
  return [
    scalars.length ? h("table", { class: "kv" }, h("tbody", {}, scalars.map(([k, v]) =>
      h("tr", {}, h("th", { scope: "row" }, k), h("td", {}, renderValue(v)))))) : null,
    entries.filter(([, v]) => isSection(v)).map(([k, v]) => h("section", { class: "sub" },
      h(`h${Math.min(6, 5 + depth)}`, {}, k), renderSummary(v, depth + 1))),
  ];
}

// ------------------------------------------------------------------ start

window.addEventListener("hashchange", () => route());
$("#refresh-projects").addEventListener("click", async () => {
  await loadProjects();
  route(true);
});

(async function init() {
  await loadProjects();
  if (state.projects?.length && !new URLSearchParams(location.hash.slice(1)).get("project")) {
    history.replaceState(null, "", `#project=${state.projects[0].id}`);
  }
  route(true);
})();
