// py-scheduler dashboard: one page, six views chosen by the URL's hash, refreshed by polling.
// Everything is built with textContent (never innerHTML from data) and every state is a word, so the
// page reads the same without colour. Errors from the server are one line in #error; the page keeps
// polling, so it comes back by itself when the API server (or the dashboard) does.
"use strict";

const state = { refreshSeconds: 5, timer: null, inFlight: false, route: null, sort: {}, filters: { ns: "", text: "" } };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") node.textContent = v;
    else if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

const main = () => document.getElementById("main");

function showError(message) {
  const box = document.getElementById("error");
  if (message) {
    box.textContent = "Error: " + message;
    box.hidden = false;
  } else {
    box.textContent = "";
    box.hidden = true;
  }
}

function setStatus(text) {
  document.getElementById("status").textContent = text;
}

async function api(path, options) {
  let response;
  try {
    response = await fetch(path, Object.assign({ cache: "no-store" }, options || {}));
  } catch (e) {
    throw new Error("cannot reach the dashboard server");
  }
  let body = null;
  try {
    body = await response.json();
  } catch (e) {
    throw new Error(`the dashboard answered HTTP ${response.status} without JSON`);
  }
  if (!response.ok) throw new Error(body && body.error ? body.error : `HTTP ${response.status}`);
  return body;
}

function age(seconds) {
  if (seconds === null || seconds === undefined) return "?";
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 172800) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

// ----- sortable tables ---------------------------------------------------------------------------

// columns: [{key, label, num, value(row) -> sortable, cell(row) -> node or text}]
function sortableTable(id, columns, rows, defaultKey, defaultDir) {
  const sort = state.sort[id] || { key: defaultKey, dir: defaultDir || 1 };
  const column = columns.find((c) => c.key === sort.key) || columns[0];
  const value = column.value || ((r) => r[column.key]);
  const sorted = rows.slice().sort((a, b) => {
    const x = value(a), y = value(b);
    if (x === y) return 0;
    if (x === null || x === undefined) return 1;
    if (y === null || y === undefined) return -1;
    return (x < y ? -1 : 1) * sort.dir;
  });
  const head = el("tr", {}, columns.map((c) => {
    const active = c.key === column.key;
    const ariaSort = active ? (sort.dir > 0 ? "ascending" : "descending") : null;
    const mark = active ? (sort.dir > 0 ? " \u25B2" : " \u25BC") : "";
    return el("th", { scope: "col", class: c.num ? "num" : null, "aria-sort": ariaSort },
      el("button", {
        type: "button", "data-sort": c.key, title: `sort by ${c.label}`,
        "aria-label": `${c.label}${active ? (sort.dir > 0 ? ", sorted ascending" : ", sorted descending") : ""}; sort`,
        onclick: () => {
          state.sort[id] = { key: c.key, dir: active ? -sort.dir : (c.num ? -1 : 1) };
          rerender();
        },
      }, c.label + mark));
  }));
  const body = sorted.map((r) => el("tr", {}, columns.map((c) => {
    const content = c.cell ? c.cell(r) : r[c.key];
    return el("td", { class: c.num ? "num" : null }, content === null || content === undefined ? "–" : content);
  })));
  return el("div", { class: "scroll" }, el("table", { id }, el("thead", {}, head), el("tbody", {}, body)));
}

// ----- pages -------------------------------------------------------------------------------------

function podLink(ns, name) {
  return el("a", { href: `#/pod/${encodeURIComponent(ns)}/${encodeURIComponent(name)}` }, `${ns}/${name}`);
}

function groupLink(key) {
  const [ns, name] = key.split("/");
  return el("a", { href: `#/podgroup/${encodeURIComponent(ns)}/${encodeURIComponent(name)}` }, key);
}

function conditionText(c) {
  return c ? `${c.type}=${c.status} ${c.reason || ""}${c.message ? ": " + c.message : ""}` : "none yet (no group cycle has run)";
}

function memberText(m) {
  return m.node ? `on ${m.node}` : (m.message || "pending, not tried yet");
}

const pages = {
  pending: {
    title: "Pending pods",
    url: () => "/api/pending",
    setup(root) {
      root.append(el("h2", { tabindex: "-1" }, "Pending pods"),
        el("p", { id: "pending-names", class: "notice" }),
        el("form", { class: "filters", onsubmit: (e) => e.preventDefault() },
          el("label", {}, "Namespace", el("select", { id: "filter-ns", onchange: (e) => { state.filters.ns = e.target.value; rerender(); } },
            el("option", { value: "" }, "all namespaces"))),
          el("label", {}, "Text", el("input", {
            id: "filter-text", type: "search", value: state.filters.text, placeholder: "pod name or message",
            oninput: (e) => { state.filters.text = e.target.value; rerender(); },
          }))),
        el("div", { id: "pending-table" }));
    },
    render(data) {
      document.getElementById("pending-names").textContent =
        `Pods of schedulerName ${data.schedulerNames.join(", ")} that are not bound, oldest first.` + (data.note ? ` ${data.note}` : "");
      const select = document.getElementById("filter-ns");
      const namespaces = [...new Set(data.pods.map((p) => p.namespace))].sort();
      if (state.filters.ns && !namespaces.includes(state.filters.ns)) namespaces.push(state.filters.ns);
      select.replaceChildren(el("option", { value: "" }, "all namespaces"),
        ...namespaces.map((n) => el("option", { value: n, selected: n === state.filters.ns }, n)));
      const text = state.filters.text.toLowerCase();
      const pods = data.pods.filter((p) => (!state.filters.ns || p.namespace === state.filters.ns) &&
        (!text || `${p.namespace}/${p.name} ${p.message} ${p.reason}`.toLowerCase().includes(text)));
      const table = document.getElementById("pending-table");
      if (!pods.length) {
        table.replaceChildren(el("p", { class: "notice", id: "pending-empty" },
          data.pods.length ? "No pending pod matches the filter." : "No pending pods."));
        return;
      }
      table.replaceChildren(el("p", {}, `${pods.length} of ${data.pods.length} pending pod(s).`),
        sortableTable("pending", [
          { key: "pod", label: "Pod", value: (p) => `${p.namespace}/${p.name}`, cell: (p) => podLink(p.namespace, p.name) },
          { key: "age", label: "Age", num: true, value: (p) => p.ageSeconds, cell: (p) => age(p.ageSeconds) },
          { key: "attempts", label: "Attempts", num: true },
          { key: "reason", label: "Reason" },
          { key: "message", label: "Last FailedScheduling message", cell: (p) => el("span", { class: "message" }, p.message || (p.gates.length ? `gated: ${p.gates.join(", ")}` : "not tried yet")) },
          { key: "nominatedNode", label: "Nominated node" },
        ], pods, "age", -1));
    },
  },

  pod: {
    title: "Pod decision",
    url: (ns, name) => `/api/pod?namespace=${encodeURIComponent(ns)}&name=${encodeURIComponent(name)}`,
    setup(root, ns, name) {
      root.append(el("h2", { tabindex: "-1" }, `Pod ${ns}/${name}`), el("div", { id: "decision" }, el("p", { class: "notice" }, "Running explain…")));
    },
    render(d) {
      const out = [];
      out.push(el("p", { class: "notice" }, `Profile ${d.profile}. One scheduling cycle by explain on a snapshot of the cluster now` +
        (d.boundTo ? `; the pod is bound to ${d.boundTo}, explained as if it were pending (removed from its node).` : ".")));
      if (d.podGroup) {
        out.push(el("p", { id: "pod-group" }, el("strong", {}, "Member of pod group "), groupLink(d.podGroup.podGroup),
          `: ${d.podGroup.verdict}: ${d.podGroup.message}`));
      }
      if (d.node) out.push(el("p", { class: "summary", id: "verdict" }, el("strong", {}, "Chosen node: "), el("span", { class: "verdict verdict-chosen" }, d.node)));
      else out.push(el("p", { class: "summary", id: "verdict" }, el("strong", {}, "Unschedulable: "), el("span", { id: "message" }, d.message)));
      if (d.victims.length) {
        out.push(el("p", { id: "victims" }, el("strong", {}, `Preemption would evict on ${d.nominatedNode || "?"}: `), d.victims.join(", ")));
      }
      const s = d.sampling || {};
      if (s.numAllNodes !== undefined) {
        out.push(el("p", {}, `Sampling: ${s.numAllNodes} nodes, numFeasibleNodesToFind ${s.numFeasibleNodesToFind}; filters ran on ${(s.evaluated || []).length}` +
          ((s.notEvaluated || []).length ? `, ${s.notEvaluated.length} not evaluated (enough feasible nodes found first)` : "") + "."));
      }
      if (d.reasons.length) {
        out.push(el("h3", {}, "Filtered out, by reason"),
          sortableTable("reasons", [
            { key: "count", label: "Nodes", num: true },
            { key: "plugin", label: "Plugin" },
            { key: "reason", label: "Reason" },
          ], d.reasons, "count", -1));
      }
      if (d.scoreSkipped.length) out.push(el("p", {}, `Skipped at PreScore (nothing to score for this pod): ${d.scoreSkipped.join(", ")}`));
      const columns = [
        { key: "rank", label: "Rank", num: true },
        { key: "node", label: "Node" },
        { key: "verdict", label: "Verdict", cell: (r) => el("span", { class: `verdict verdict-${r.verdict.replace(" ", "-")}` }, r.verdict) },
        { key: "plugin", label: "Rejected by" },
        { key: "reason", label: "Reason" },
        { key: "total", label: "Total score", num: true },
        ...d.plugins.map((p) => ({
          key: "score:" + p, label: p, num: true,
          value: (r) => (r.scores[p] ? r.scores[p].weighted : null),
          cell: (r) => (r.scores[p] ? `${r.scores[p].raw}/${r.scores[p].normalized}/${r.scores[p].weighted}` : null),
        })),
      ];
      out.push(el("h3", {}, `Every node, closest first (${d.rows.length})`),
        d.plugins.length ? el("p", { class: "notice" }, "Score cells: raw / normalized / weighted.") : null,
        sortableTable("nodes-decision", columns, d.rows, "rank"));
      document.getElementById("decision").replaceChildren(...out.filter(Boolean));
    },
  },

  podgroups: {
    title: "Pod groups",
    url: () => "/api/podgroups",
    setup(root) {
      root.append(el("h2", { tabindex: "-1" }, "Pod groups"), el("div", { id: "groups" }));
    },
    render(d) {
      const out = [el("p", { class: "notice" }, "The Workload API's PodGroups (scheduling.k8s.io) and their members; a member's message is its last FailedScheduling event." + (d.note ? ` ${d.note}` : ""))];
      if (!d.podGroups.length) out.push(el("p", { class: "notice", id: "groups-empty" }, "No pod groups."));
      else {
        out.push(sortableTable("podgroups", [
          { key: "podGroup", label: "Pod group", cell: (g) => groupLink(g.podGroup) },
          { key: "policy", label: "Policy", cell: (g) => (g.exists ? (g.policy === "gang" ? `gang, minCount ${g.minCount}` : g.policy) : "no PodGroup object") },
          { key: "bound", label: "Bound", num: true, value: (g) => g.bound, cell: (g) => `${g.bound} of ${g.members.length}` },
          { key: "condition", label: "PodGroupInitiallyScheduled", value: (g) => (g.condition ? g.condition.status : ""), cell: (g) => el("span", { class: "message" }, conditionText(g.condition)) },
          { key: "members", label: "Members", value: (g) => g.members.length, cell: (g) => el("ul", { class: "members" }, g.members.map((m) => el("li", {}, podLink(...m.pod.split("/")), `: ${memberText(m)}`))) },
        ], d.podGroups, "podGroup"));
      }
      document.getElementById("groups").replaceChildren(...out);
    },
  },

  podgroup: {
    title: "Pod group",
    url: (ns, name) => `/api/podgroup?namespace=${encodeURIComponent(ns)}&name=${encodeURIComponent(name)}`,
    setup(root, ns, name) {
      root.append(el("h2", { tabindex: "-1" }, `Pod group ${ns}/${name}`), el("div", { id: "group" }, el("p", { class: "notice" }, "Running explain…")));
    },
    render(g) {
      const policy = g.exists ? (g.policy === "gang" ? `gang, minCount ${g.minCount}` : g.policy) : "no PodGroup object";
      const out = [
        el("p", { class: "notice" }, `${policy}${g.topologyKeys.length ? "; topology " + g.topologyKeys.join(", ") : ""}. One pod-group cycle by explain on a snapshot of the cluster now.`),
        el("p", { class: "summary", id: "group-verdict" }, el("strong", {}, `${g.verdict}: `), g.message),
        el("p", {}, el("strong", {}, "Last cycle (live): "), conditionText(g.liveCondition)),
      ];
      if (g.condition && conditionText(g.condition) !== conditionText(g.liveCondition)) out.push(el("p", {}, el("strong", {}, "A cycle now would write: "), conditionText(g.condition)));
      const placement = Object.entries(g.placement).map(([k, v]) => `${k}=${v}`).join(", ");
      if (placement) out.push(el("p", {}, el("strong", {}, "Placement: "), placement));
      if (g.victims.length) out.push(el("p", { id: "group-victims" }, el("strong", {}, "Would preempt: "), g.victims.join(", ")));
      out.push(el("h3", {}, `Members (${g.members.length})`), sortableTable("group-members", [
        { key: "pod", label: "Member", cell: (m) => podLink(...m.pod.split("/")) },
        { key: "node", label: "Node" },
        { key: "nominatedNode", label: "Nominated node" },
        { key: "message", label: "Message", cell: (m) => el("span", { class: "message" }, m.message) },
        { key: "filtered", label: "Filtered nodes", value: (m) => Object.keys(m.filtered).length },
      ], g.members, "pod"));
      document.getElementById("group").replaceChildren(...out);
    },
  },

  nodes: {
    title: "Nodes",
    url: () => "/api/nodes",
    setup(root) {
      const result = el("div", { id: "whatif-result", "aria-live": "polite" });
      const area = el("textarea", { id: "whatif-yaml", name: "yaml", spellcheck: "false", placeholder: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: nginx\n    resources:\n      requests: {cpu: 500m}" });
      const form = el("form", {
        class: "whatif", id: "whatif",
        onsubmit: async (e) => {
          e.preventDefault();
          result.replaceChildren(el("p", { class: "notice" }, "Placing…"));
          try {
            const r = await api("/api/whatif", { method: "POST", body: area.value, headers: { "Content-Type": "application/yaml" } });
            result.replaceChildren(...whatIfAnswer(r));
          } catch (err) {
            result.replaceChildren(el("p", { class: "notice", id: "whatif-error", role: "alert" }, "Error: " + err.message));
          }
        },
      }, el("h3", {}, "What if: where would this pod go?"),
      el("label", { for: "whatif-yaml" }, "A Pod's YAML (placed by simulate --from-cluster, counted by capacity)"), area,
      el("button", { type: "submit", id: "whatif-submit" }, "Place it"), result);
      root.append(el("h2", { tabindex: "-1" }, "Nodes"), form, el("div", { id: "zones" }));
    },
    render(data) {
      const zones = data.zones.map((z) => el("section", { "aria-label": `zone ${z.zone}` },
        el("h3", {}, `Zone ${z.zone} (${z.nodes.length} node${z.nodes.length === 1 ? "" : "s"})`),
        sortableTable("zone-" + z.zone.replace(/[^A-Za-z0-9_-]/g, "_"), [
          { key: "name", label: "Node", cell: (n) => el("span", {}, n.name, n.unschedulable ? " (cordoned)" : "") },
          { key: "pods", label: "Pods", num: true },
          { key: "cpu", label: "Requested / allocatable", value: (n) => n.resources[0].percent, cell: resources },
          { key: "taints", label: "Taints", value: (n) => n.taints.length, cell: (n) => (n.taints.length ? n.taints.map((t) => el("span", { class: "taint" }, t)) : "none") },
          { key: "conditions", label: "Conditions", value: (n) => n.conditions.length, cell: conditions },
        ], z.nodes, "name")));
      document.getElementById("zones").replaceChildren(el("p", {}, `${data.nodeCount} node(s) in ${data.zones.length} zone(s).`), ...zones);
    },
  },

  scheduler: {
    title: "Scheduler",
    url: () => "/api/scheduler",
    setup(root) {
      root.append(el("h2", { tabindex: "-1" }, "Scheduler"), el("div", { id: "sched" }));
    },
    render(d) {
      const out = [];
      if (d.metrics) {
        out.push(el("h3", {}, "Queues"), sortableTable("queues", [
          { key: "queue", label: "Queue" }, { key: "pods", label: "Pods", num: true },
        ], Object.entries(d.metrics.queues).map(([queue, pods]) => ({ queue, pods })), "queue"));
        out.push(el("h3", {}, "Scheduling attempts by result"), sortableTable("attempts", [
          { key: "result", label: "Result" },
          { key: "rate", label: "Per second", num: true, cell: (r) => (r.rate === null ? "(next refresh)" : r.rate.toFixed(2)) },
          { key: "total", label: "Total", num: true },
        ], Object.entries(d.metrics.attemptsTotal).map(([result, total]) => ({ result, total, rate: d.metrics.attemptsPerSecond[result] })), "result"));
      } else {
        out.push(el("p", { class: "notice", id: "metrics-error" }, `Metrics: ${d.metricsError}`));
      }
      out.push(el("h3", {}, "Recent decisions (from run --record-results annotations)"));
      if (d.decisions.length) {
        out.push(sortableTable("decisions", [
          { key: "time", label: "Time" },
          { key: "pod", label: "Pod", cell: (r) => podLink(...r.pod.split("/")) },
          { key: "outcome", label: "Outcome", cell: (r) => el("span", { class: r.node ? "outcome-ok" : "outcome-bad" }, r.outcome) },
        ], d.decisions, "time", -1));
      } else {
        out.push(el("p", { class: "notice" }, "No pod carries result annotations (the scheduler writes them with run --record-results)."));
      }
      document.getElementById("sched").replaceChildren(...out);
    },
  },
};

function resources(n) {
  return el("div", { class: "res" }, n.resources.map((r) => [
    el("span", {}, r.name),
    r.allocatable > 0 ? el("meter", { min: "0", max: String(r.allocatable), value: String(Math.min(r.requested, r.allocatable)), "aria-label": `${r.name}: ${r.text}` }) : el("span", {}, "none"),
    el("span", {}, r.text),
  ]));
}

function conditions(n) {
  return n.conditions.map((c) => {
    const problem = (c.type === "Ready" && c.status !== "True") || (c.type !== "Ready" && c.status === "True");
    return el("span", { class: "cond" + (problem ? " cond-problem" : "") }, `${c.type}=${c.status}${problem ? " (problem)" : ""}`);
  });
}

function whatIfAnswer(r) {
  const out = [];
  if (r.invalid.length) out.push(el("p", { id: "whatif-node" }, el("strong", {}, "Invalid: "), r.invalid.join("; ")));
  else if (r.node) out.push(el("p", { class: "summary", id: "whatif-node" }, el("strong", {}, `${r.pod} would go to: `), el("span", { class: "verdict verdict-chosen", id: "whatif-chosen" }, r.node)));
  else out.push(el("p", { class: "summary", id: "whatif-node" }, el("strong", {}, `${r.pod} is unschedulable: `), r.message));
  if (r.victims.length) out.push(el("p", {}, `after preempting ${r.victims.join(", ")}`));
  if (r.capacity) {
    const spread = Object.entries(r.capacity.nodes).map(([n, c]) => `${n}: ${c}`).join(", ");
    out.push(el("p", { id: "whatif-capacity" }, el("strong", {}, `${r.capacity.count} copies fit`), spread ? ` (${spread})` : "", `. Stopped: ${r.capacity.message}`));
  }
  return out;
}

// ----- routing and refresh -----------------------------------------------------------------------

function parseRoute() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if ((parts[0] === "pod" || parts[0] === "podgroup") && parts.length >= 3) return { page: parts[0], args: [parts[1], parts.slice(2).join("/")] };
  if (pages[parts[0]] && parts[0] !== "pod" && parts[0] !== "podgroup") return { page: parts[0], args: [] };
  return { page: "pending", args: [] };
}

let lastData = null;

// A selector for the focused element that survives a refresh redrawing it (a row's link, a sort
// button): keyboard users keep their place while the page updates itself.
function focusSelector() {
  const a = document.activeElement;
  if (!a || a === document.body) return null;
  if (a.id) return `#${CSS.escape(a.id)}`;
  const table = a.closest("table[id]");
  const within = table ? `#${CSS.escape(table.id)} ` : "";
  if (a.getAttribute("href")) return `${within}a[href="${CSS.escape(a.getAttribute("href"))}"]`;
  if (a.dataset.sort) return `${within}button[data-sort="${CSS.escape(a.dataset.sort)}"]`;
  return null;
}

function render(data) {
  const selector = focusSelector();
  pages[state.route.page].render(data);
  if (selector && (document.activeElement === document.body || !document.activeElement.isConnected)) {
    const again = document.querySelector(selector);
    if (again) again.focus();
  }
}

function rerender() {
  if (lastData && state.route) render(lastData);
}

async function refresh() {
  if (state.inFlight || !state.route) return;
  const route = state.route;
  state.inFlight = true;
  try {
    const data = await api(pages[route.page].url(...route.args));
    if (route !== state.route) return;
    lastData = data;
    render(data);
    showError("");
    setStatus(`Updated ${new Date().toLocaleTimeString()}`);
  } catch (err) {
    if (route !== state.route) return;
    showError(err.message);
    setStatus(`Update failed at ${new Date().toLocaleTimeString()}; retrying`);
  } finally {
    state.inFlight = false;
  }
}

function navigate(event) {
  state.route = parseRoute();
  state.sort = {};  // every visit starts in the page's own order (a decision: closest first)
  lastData = null;
  const page = pages[state.route.page];
  document.title = `${page.title} · py-scheduler dashboard`;
  for (const name of ["pending", "podgroups", "nodes", "scheduler"]) {
    const link = document.getElementById(`nav-${name}`);
    if (name === state.route.page) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const root = main();
  root.replaceChildren();
  showError("");
  page.setup(root, ...state.route.args);
  const heading = root.querySelector("h2");
  // Followed a link (not the first load): reading goes on at the new page's heading.
  if (event && heading && document.activeElement && document.activeElement.tagName === "A") heading.focus();
  state.inFlight = false;
  refresh();
}

function schedule() {
  clearInterval(state.timer);
  state.timer = setInterval(() => {
    if (document.getElementById("auto").checked) refresh();
  }, state.refreshSeconds * 1000);
}

async function start() {
  try {
    const cfg = await api("/api/config");
    state.refreshSeconds = cfg.refreshSeconds || 5;
  } catch (err) {
    showError(err.message);
  }
  document.getElementById("goto").addEventListener("submit", (e) => {
    e.preventDefault();
    const value = document.getElementById("goto-pod").value.trim();
    const [ns, ...rest] = value.includes("/") ? value.split("/") : ["default", value];
    if (rest.join("/")) location.hash = `#/pod/${encodeURIComponent(ns)}/${encodeURIComponent(rest.join("/"))}`;
  });
  window.addEventListener("hashchange", navigate);
  navigate();
  schedule();
}

document.addEventListener("DOMContentLoaded", start);
