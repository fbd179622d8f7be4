// Coxswain console: polls the admin's /api/v1 views and renders them.
// Values are inserted as text nodes only, never as markup: names come from
// user configuration.
"use strict";

const REFRESH_MS = 5000;
// Conditions where True is bad news.
const NEGATIVE = new Set(["Conflicted", "PartiallyInvalid", "OverlappingTLSConfig", "Degraded"]);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== undefined && value !== null) node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function table(headers, rows) {
  return el("table", {},
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows));
}

function conditionBadge(c) {
  let tone = "warn";
  if (c.status === "True") tone = NEGATIVE.has(c.type) ? "bad" : "ok";
  if (c.status === "False") tone = NEGATIVE.has(c.type) ? "ok" : "bad";
  return el("span", { class: `badge ${tone}`, title: c.message || "" },
    `${c.type}=${c.status} (${c.reason})`);
}

function conditionBadges(list) {
  return (list || []).map(conditionBadge);
}

function refName(ref) {
  if (!ref) return "";
  const ns = ref.namespace ? `${ref.namespace}/` : "";
  const section = ref.sectionName ? `:${ref.sectionName}` : "";
  return `${ref.kind || "Gateway"} ${ns}${ref.name}${section}`;
}

function seconds(s) {
  if (s === null || s === undefined) return "–";
  return s < 1 ? `${(s * 1000).toFixed(1)} ms` : `${s.toFixed(2)} s`;
}

function percent(ratio) {
  return ratio === null || ratio === undefined ? "–" : `${(ratio * 100).toFixed(1)}%`;
}

function rate(bytesPerSecond) {
  const units = ["B/s", "KiB/s", "MiB/s", "GiB/s"];
  let v = bytesPerSecond, i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v.toFixed(i ? 1 : 0)} ${units[i]}`;
}

// An HTTP rule's cells: req/s, p50, p90, p99, 5xx.
function httpCells(t) {
  return [
    el("td", { class: "num" }, t ? t.requestsPerSecond.toFixed(2) : "–"),
    el("td", { class: "num" }, t ? seconds(t.p50Seconds) : "–"),
    el("td", { class: "num" }, t ? seconds(t.p90Seconds) : "–"),
    el("td", { class: "num" }, t ? seconds(t.p99Seconds) : "–"),
    el("td", { class: "num" }, t ? percent(t.errorRatio) : "–"),
  ];
}

// An L4 rule's cells: connections/s, then open connections and bytes each
// way across the latency columns, then failed backend connects.
function l4Cells(t) {
  return [
    el("td", { class: "num" }, `${t.connectionsPerSecond.toFixed(2)} conn/s`),
    el("td", { class: "num", colspan: 3 },
      `${t.active} open · in ${rate(t.bytesInPerSecond)} · out ${rate(t.bytesOutPerSecond)}`),
    el("td", { class: "num" }, `${t.connectErrors} failed`),
  ];
}

function renderGateways(gateways) {
  if (!gateways.length) return el("p", { class: "muted" }, "No Gateways.");
  return gateways.map((g) => el("div", { class: "box gateway" },
    el("h3", {}, `${g.namespace}/${g.name} `, conditionBadges(g.conditions)),
    table(["Listener", "Serves", "Attached routes", "Conditions"], g.listeners.map((l) =>
      el("tr", {},
        el("td", {}, l.name),
        el("td", {}, l.serving.length
          ? l.serving.map((s) => el("div", {}, `${s.protocol} ${s.address}${s.hostname ? ` ${s.hostname}` : ""}`))
          : el("span", { class: "muted" }, "not serving")),
        el("td", { class: "num" }, l.attachedRoutes ?? 0),
        el("td", {}, conditionBadges(l.conditions)))))));
}

function renderRoutes(view) {
  document.getElementById("window").textContent =
    `(traffic over the last ${Math.round(view.windowSeconds)} s)`;
  if (!view.routes.length) return el("p", { class: "muted" }, "No routes.");
  const rows = [];
  for (const r of view.routes) {
    const parents = r.parents.map((p) => el("div", {}, `${refName(p.parentRef)} `, conditionBadges(p.conditions)));
    const rules = r.rules.length ? r.rules : [null];
    rules.forEach((rule, i) => {
      const t = rule && rule.traffic;
      rows.push(el("tr", { class: "route" },
        i === 0 ? el("td", { rowspan: rules.length }, `${r.kind} `, el("b", {}, `${r.namespace}/${r.name}`)) : null,
        i === 0 ? el("td", { rowspan: rules.length }, parents) : null,
        el("td", {}, rule ? el("code", {}, rule.label) : el("span", { class: "muted" }, "not served")),
        el("td", {}, rule ? rule.backends.map((b) => el("div", {}, b.cluster ? `${b.cluster} ×${b.weight}` : "invalid backend")) : null),
        ...(t && t.connectionsPerSecond !== undefined ? l4Cells(t) : httpCells(t))));
    });
  }
  return table(["Route", "Parents and conditions", "Rule", "Backends", "req/s", "p50", "p90", "p99", "5xx"], rows);
}

function renderPolicies(policies) {
  if (!policies.length) return el("p", { class: "muted" }, "No policies or filters.");
  return table(["Kind", "Name", "Attached to and conditions"], policies.map((p) =>
    el("tr", {},
      el("td", {}, p.kind),
      el("td", {}, `${p.namespace}/${p.name}`),
      el("td", {},
        conditionBadges(p.conditions),
        p.ancestors.map((a) => el("div", {}, `${refName(a.ancestorRef)} `, conditionBadges(a.conditions)))))));
}

function breakerBadge(breaker) {
  if (!breaker) return el("span", { class: "muted" }, "no breaker");
  const tone = { closed: "ok", open: "bad", "half-open": "warn" }[breaker.state] || "warn";
  return el("span", { class: `badge ${tone}` },
    `breaker ${breaker.state}${breaker.rejected ? `, ${breaker.rejected} rejected` : ""}`);
}

function renderBackends(backends) {
  if (!backends.length) return el("p", { class: "muted" }, "No backends.");
  return table(["Backend", "Policy", "Endpoints"], backends.map((b) =>
    el("tr", { class: "backend" },
      el("td", {}, el("b", {}, b.name), ` ${b.protocol}`, b.tls ? (b.tls.invalid ? " TLS invalid" : " TLS") : ""),
      el("td", {}, b.policy ? `${b.policy.name} (${b.policy.balancer})` : el("span", { class: "muted" }, "defaults")),
      el("td", {}, b.endpoints.length
        ? b.endpoints.map((e) => el("div", { class: "endpoint" }, `${e.address} `,
          el("span", { class: "badge ok" }, "ready"), breakerBadge(e.breaker)))
        : el("span", { class: "badge bad" }, "no ready endpoint")))));
}

function card(label, value) {
  return el("div", { class: "card" }, el("b", {}, value), label);
}

async function fetchJson(path) {
  const response = await fetch(path, { cache: "no-store" });
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.json();
}

async function refresh() {
  const error = document.getElementById("error");
  try {
    const [gateways, routes, policies, backends] = await Promise.all(
      ["gateways", "routes", "policies", "backends"].map((v) => fetchJson(`/api/v1/${v}`)));
    const breakersOpen = backends.flatMap((b) => b.endpoints)
      .filter((e) => e.breaker && e.breaker.state !== "closed").length;
    document.getElementById("summary").replaceChildren(
      card("Gateways", gateways.length),
      card("Routes", routes.routes.length),
      card("Policies and filters", policies.length),
      card("Backends", backends.length),
      card("Breakers not closed", breakersOpen));
    document.getElementById("gateways").replaceChildren(...[renderGateways(gateways)].flat());
    document.getElementById("routes").replaceChildren(renderRoutes(routes));
    document.getElementById("policies").replaceChildren(renderPolicies(policies));
    document.getElementById("backends").replaceChildren(renderBackends(backends));
    document.getElementById("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
    error.hidden = true;
  } catch (e) {
    error.textContent = `Cannot load: ${e.message}`;
    error.hidden = false;
  }
  setTimeout(refresh, REFRESH_MS);
}

refresh();
