// rmexplain explanation explorer: plain JavaScript, no framework, no network.
// Every text from the data is put on the page with textContent (el() below), never parsed as HTML.
// Data files are loaded with <script> tags (fetch() of file:// is blocked in Chromium); each calls RMX.put.
(function () {
  "use strict";

  var M = JSON.parse(document.getElementById("rmx-manifest").textContent);
  var store = {};
  var pending = {};
  var KIND = ["SF", "CF"];
  var SUB = [null, "between", "beyond", "tie"];
  var SIDE = ["plus", "minus"];
  var SIDE_LABEL = { plus: "Y+", minus: "Y−" };
  var TARGET = ["chosen", "rejected"];
  var PAGE = 200; // rows of a long list shown at once
  var BAR_LIMIT = 1000; // perturbations listed behind a flip-rate bar
  var LENGTH = "length";
  var RESCORED = "re-scored";  // the method of a class measured by re-scoring the findings it carries
  var DIR_LABEL = { "1": "better", "-1": "worse" };
  var FLIP_RATES_DIFFER = "The paper's preference flip rates answer another question: how often an edit made " +
    "against the RM's preference flips it. They depend on the margins between the two responses and on what " +
    "else an edit changes; the attribute effects move every response both ways and hold length equal.";
  var WHY_UNEXPLAINED = "the RM ties the originals, the orienting RMs disagree on y+, or every perturbation was skipped";

  window.RMX = {
    put: function (key, value) { store[key] = value; },
    manifest: M,
    applyEdit: applyEdit,
    words: words,
    tokenBucket: function (s) { return bucket(s); },
  };

  // ── DOM ─────────────────────────────────────────────────────────────────────────────────────────────
  function el(tag, props) {
    var e = document.createElement(tag);
    if (props) {
      Object.keys(props).forEach(function (k) {
        var v = props[k];
        if (v === null || v === undefined || v === false) return;
        if (k === "class") e.className = v;
        else if (k === "text") e.textContent = String(v);
        else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), v);
        else if (k === "href") {
          if (String(v).charAt(0) !== "#") throw new Error("only in-page links");
          e.setAttribute("href", v);
        } else e.setAttribute(k, String(v));
      });
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(parent) { // add(parent, child, ...): nodes as they are, anything else as text
    for (var i = 1; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined || child === false) continue;
      if (Array.isArray(child)) child.forEach(function (c) { add(parent, c); });
      else if (child instanceof Node) parent.appendChild(child);
      else parent.appendChild(document.createTextNode(String(child)));
    }
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function fmt(x, digits) {
    if (x === null || x === undefined) return "–";
    return Number(x).toFixed(digits === undefined ? 3 : digits);
  }
  function quoted(text) { return JSON.stringify(text); }

  // ── data files ──────────────────────────────────────────────────────────────────────────────────────
  function load(path, key) {
    if (Object.prototype.hasOwnProperty.call(store, key)) return Promise.resolve(store[key]);
    if (pending[key]) return pending[key];
    pending[key] = new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.charset = "utf-8";
      s.src = path.split("/").map(encodeURIComponent).join("/");
      s.onload = function () {
        if (Object.prototype.hasOwnProperty.call(store, key)) resolve(store[key]);
        else reject(new Error(path + " did not define its data"));
      };
      s.onerror = function () {
        delete pending[key];
        reject(new Error("Could not load " + path + ". The explorer reads its data files from the folder " +
          "of index.html: open results/explorer/index.html itself (from disk or a copy of the folder)."));
      };
      document.head.appendChild(s);
    });
    return pending[key];
  }
  function comparisonsOf(d) { return load("data/datasets/" + d + "/comparisons.js", "comparisons/" + d); }
  function rmFile(d, m, rm) { return load("data/datasets/" + d + "/" + m + "/rm-" + rm + ".js", "rm/" + d + "/" + m + "/" + rm); }
  function textsOf(d, k) { return load("data/datasets/" + d + "/texts-" + k + ".js", "texts/" + d + "/" + k); }
  function editsOf(d, m, k) { // the method's shard k; null where no perturbation falls in it
    if (m.edit_files.indexOf(k) < 0) return Promise.resolve(null);
    return load("data/datasets/" + d + "/" + m.name + "/edits-" + k + ".js", "edits/" + d + "/" + m.name + "/" + k);
  }
  function scanPart(rm, p, b) { // one search file of a scan; none where no token falls in bucket b
    if (M.tokens.scans[rm][p].buckets.indexOf(b) < 0) return Promise.resolve({ text: [], score: [], rank: [] });
    return load("data/tokens/" + rm + "/" + p + "/" + b + ".js", "tokens/" + rm + "/" + p + "/" + b);
  }

  // ── edits (rmexplain.textdiff, replayed) ──────────────────────────────────────────────────────
  function words(text) { return text.match(/[ \t\n\r\f\v]+|[^ \t\n\r\f\v]+[ \t\n\r\f\v]*/g) || []; }
  function applyEdit(original, edit) {
    var a = words(original), out = [], pos = 0;
    edit.forEach(function (step) {
      out.push(a.slice(pos, pos + step[0]).join(""), step[2]);
      pos += step[0] + step[1];
    });
    out.push(a.slice(pos).join(""));
    return out.join("");
  }
  // A replaced stretch shows the words it shares with its replacement at either end (whitespace aside: a
  // last word that gains a space before new text) as kept; the text shown is still exactly the new one.
  function tidy(goneText, putText) {
    var g = words(goneText), p = words(putText), i = 0, j = 0;
    while (i < g.length && i < p.length && g[i].trim() === p[i].trim()) i++;
    while (j < g.length - i && j < p.length - i && g[g.length - 1 - j].trim() === p[p.length - 1 - j].trim()) j++;
    return { pre: p.slice(0, i).join(""), gone: g.slice(i, g.length - j).join(""), put: p.slice(i, p.length - j).join(""),
      post: p.slice(p.length - j).join("") };
  }
  function renderEdit(original, edit) {
    var a = words(original), box = el("div", { class: "diff" }), pos = 0;
    edit.forEach(function (step) {
      var keep = step[0], drop = step[1], t = tidy(a.slice(pos + keep, pos + keep + drop).join(""), step[2]);
      if (keep) add(box, a.slice(pos, pos + keep).join(""));
      if (t.pre) add(box, t.pre);
      if (t.gone) add(box, el("del", { title: "deleted" }, t.gone));
      if (t.put) add(box, el("ins", { title: "inserted" }, t.put));
      if (t.post) add(box, t.post);
      pos += keep + drop;
    });
    if (pos < a.length) add(box, a.slice(pos).join(""));
    return box;
  }
  function editPreview(original, edit) {
    if (!edit.length) return "(unchanged)";
    var a = words(original), pos = 0, step = edit[0];
    pos += step[0];
    var t = tidy(a.slice(pos, pos + step[1]).join(""), step[2]);
    var gone = t.gone.trim(), put = t.put.trim(), s = "";
    if (gone) s += "− " + gone.slice(0, 40) + (gone.length > 40 ? "…" : "") + " ";
    if (put) s += "+ " + put.slice(0, 60) + (put.length > 60 ? "…" : "");
    return s + (edit.length > 1 ? " (+" + (edit.length - 1) + " more)" : "");
  }

  // ── routes ──────────────────────────────────────────────────────────────────────────────────────────
  function href(parts, params) {
    var h = "#" + parts.map(function (p) { return encodeURIComponent(String(p)); }).join("/");
    if (params) {
      var q = new URLSearchParams();
      Object.keys(params).forEach(function (k) {
        if (params[k] !== null && params[k] !== undefined && params[k] !== "" && params[k] !== false) q.set(k, params[k]);
      });
      var s = q.toString();
      if (s) h += "?" + s;
    }
    return h;
  }
  function parseRoute() {
    var raw = location.hash.replace(/^#/, "");
    var cut = raw.indexOf("?");
    var path = cut < 0 ? raw : raw.slice(0, cut);
    var params = new URLSearchParams(cut < 0 ? "" : raw.slice(cut + 1));
    var parts = path ? path.split("/").map(function (p) {
      try { return decodeURIComponent(p); } catch (e) { return p; }
    }) : [];
    return { view: parts[0] || "", args: parts.slice(1), params: params };
  }
  function go(parts, params) { location.hash = href(parts, params); }

  function dataset(name) {
    return M.datasets.filter(function (d) { return d.name === name; })[0] || M.datasets[0];
  }
  function method(d, name) {
    return d.methods.filter(function (m) { return m.name === name; })[0] || d.methods[0];
  }
  function explained() {  // datasets with explanations (one of bias discovery alone has its findings only)
    return M.datasets.filter(function (d) { return d.methods.length; });
  }
  function context(args) {
    var d = dataset(args[0]);
    if (d && !d.methods.length) d = explained()[0];
    if (!d) return null;
    var m = method(d, args[1]);
    var rm = m.rms.indexOf(args[2]) >= 0 ? args[2] : m.rms[0];
    return { d: d, m: m, rm: rm };
  }
  function firstAnalysed() {
    for (var i = 0; i < M.datasets.length; i++) {
      for (var j = 0; j < M.datasets[i].methods.length; j++) {
        if (M.datasets[i].methods[j].pfr.length) return [M.datasets[i].name, M.datasets[i].methods[j].name];
      }
    }
    return null;
  }

  // ── header: tabs and pickers ────────────────────────────────────────────────────────────────────────
  function header(route, ctx) {
    var tabs = clear(document.getElementById("tabs"));
    var cur = ctx ? [ctx.d.name, ctx.m.name, ctx.rm] : [];
    var items = [];
    if (M.findings.length) items.push(["findings", "Findings", href(["findings", cur[0] || firstWithFindings()])]);
    if (explained().length) {
      items.push(["flips", "Flip rates", href(["flips", cur[0] || "", cur[1] || ""])]);
      items.push(["list", "Comparisons", href(["list"].concat(cur))]);
    }
    if (M.tokens) items.push(["tokens", "Tokens", href(["tokens"])]);
    items.forEach(function (t) {
      var active = route.view === t[0] || (t[0] === "list" && (route.view === "cmp" || route.view === "bar")) ||
        (t[0] === "findings" && (route.view === "effect" || route.view === "discovered"));
      add(tabs, el("a", { href: t[2], class: active ? "active" : null, id: "tab-" + t[0] }, t[1]));
    });
    var pickers = clear(document.getElementById("pickers"));
    if (route.view === "findings") {
      var withFindings = M.datasets.map(function (d) { return d.name; }).filter(function (n) { return findingsOf(n).length; });
      var sel = el("select", { id: "pick-dataset", onchange: function () { go(["findings", sel.value]); } });
      withFindings.forEach(function (n) { add(sel, el("option", { value: n, selected: n === route.args[0] ? "selected" : null }, n)); });
      add(pickers, el("label", null, "dataset", sel));
      return;
    }
    if (!ctx) return;
    var view = route.view === "bar" || route.view === "cmp" ? "list" : route.view;
    function picker(label, id, options, value, onchange) {
      var s = el("select", { id: id, onchange: function () { onchange(s.value); } });
      options.forEach(function (o) { add(s, el("option", { value: o, selected: o === value ? "selected" : null }, o)); });
      return el("label", null, label, s);
    }
    add(pickers, picker("dataset", "pick-dataset", explained().map(function (d) { return d.name; }), ctx.d.name,
      function (v) { go([view, v]); }));
    add(pickers, picker("method", "pick-method", ctx.d.methods.map(function (m) { return m.name; }), ctx.m.name,
      function (v) { go([view, ctx.d.name, v, ctx.rm]); }));
    if (view !== "flips") {
      add(pickers, picker("RM", "pick-rm", ctx.m.rms, ctx.rm, function (v) {
        var r = parseRoute();
        if (r.view === "cmp") go(["cmp", ctx.d.name, ctx.m.name, v, r.args[3]], paramsObject(r.params));
        else go([view, ctx.d.name, ctx.m.name, v]);
      }));
    }
  }
  function paramsObject(params) {
    var o = {};
    params.forEach(function (v, k) { o[k] = v; });
    return o;
  }

  // ── helpers over the data ───────────────────────────────────────────────────────────────────────────
  function representative(m) {
    var rep = {};
    m.examples.forEach(function (x) {
      if (!x.comparison_id) return;
      var who = x.kind === "rm" ? x.rm_a : x.rm_a + " vs " + x.rm_b + " (" + SIDE_LABEL[x.side] + ")";
      (rep[x.comparison_id] = rep[x.comparison_id] || []).push(who);
    });
    return rep;
  }
  function plusTarget(cmp, rm, i) {
    var p = cmp.plus[rm] ? cmp.plus[rm][i] : null;
    return p === null || p === undefined ? null : p;
  }
  function rewardsOf(cmp, rm, i) {
    var r = cmp.rewards[rm] ? cmp.rewards[rm][i] : null;
    if (!r) return null;
    var p = plusTarget(cmp, rm, i);
    var plus = p === null ? null : r[p], minus = p === null ? null : r[1 - p];
    return { chosen: r[0], rejected: r[1], plus: plus, minus: minus, margin: p === null ? 0 : plus - minus };
  }
  function byComparison(file) {
    var out = {};
    file.c.forEach(function (c, j) { (out[c] = out[c] || []).push(j); });
    return out;
  }
  function attrName(m, a) { return a < 0 ? "(no attribute)" : m.attributes[a]; }
  function kindBadge(kind, sub) {
    var label = KIND[kind] + (kind === 0 && SUB[sub] ? " · " + SUB[sub] : "");
    var title = kind ? "counterfactual: the preference flipped" : SUB[sub] === "tie" ?
      "semifactual: the reward equals the other original's exactly; a tie is no flip" : "semifactual: the preference held";
    return el("span", { class: "badge " + (kind ? "cf" : "sf"), title: title }, label);
  }
  function showError(err) {
    var view = document.getElementById("view");
    add(view, el("p", { class: "error", id: "load-error" }, String(err && err.message ? err.message : err)));
  }
  function sortableTable(columns, rows, sortKey, onSort, id) {
    var head = el("tr");
    columns.forEach(function (c) {
      add(head, el("th", {
        class: (c.num ? "num " : "") + (c.sort ? "sortable" : ""),
        title: c.tip || null,
        onclick: c.sort ? function () { onSort(c.key); } : null,
      }, c.label + (sortKey && sortKey.key === c.key ? (sortKey.desc ? " ▼" : " ▲") : "")));
    });
    var body = el("tbody");
    rows.forEach(function (r) { add(body, r); });
    return el("table", { id: id || null, class: "long" }, el("thead", null, head), body);
  }

  // ── view: flip rates ────────────────────────────────────────────────────────────────────────────────
  function viewFlips(view, ctx) {
    var m = ctx.m, d = ctx.d;
    add(view, el("h2", null, "Preference flip rates · " + d.name + " · " + m.name));
    if (!m.pfr.length) {
      add(view, el("p", { class: "note" }, "No flip rates for this method: the analyses run on the attribute-" +
        "conditioned methods of the analysis datasets. Browse its comparisons instead: ",
        el("a", { href: href(["list", d.name, m.name, m.rms[0]]) }, "comparisons")));
      var other = firstAnalysed();
      if (other) add(view, el("p", null, el("a", { href: href(["flips", other[0], other[1]]) }, "Flip rates of " + other.join(" · "))));
      return;
    }
    add(view, el("p", { class: "note" }, "Share of perturbations of an attribute that flip the RM's preference " +
      "(mean over comparisons), with its " + Math.round(M.level * 100) + "% bootstrap interval. " +
      "Click a bar for the comparisons and perturbations behind it."));
    var rms = [], attrs = [];
    m.pfr.forEach(function (r) {
      if (rms.indexOf(r.rm) < 0) rms.push(r.rm);
      if (attrs.indexOf(r.attribute) < 0) attrs.push(r.attribute);
    });
    var mean = {};
    attrs.forEach(function (a) {
      var xs = m.pfr.filter(function (r) { return r.attribute === a && r.pfr !== null; });
      mean[a] = xs.reduce(function (s, r) { return s + r.pfr; }, 0) / Math.max(1, xs.length);
    });
    attrs.sort(function (a, b) { return mean[b] - mean[a] || (a < b ? -1 : 1); });
    var max = Math.max(0.05, Math.max.apply(null, m.pfr.map(function (r) { return r.high === null ? 0 : r.high; })));
    var cell = {};
    m.pfr.forEach(function (r) { cell[r.rm + "\u0000" + r.side + "\u0000" + r.attribute] = r; });
    var head = el("tr", null, el("th", null, "attribute"));
    SIDE.forEach(function (side) {
      rms.forEach(function (rm) { add(head, el("th", null, SIDE_LABEL[side] + " · " + rm)); });
    });
    var body = el("tbody");
    attrs.forEach(function (a) {
      var tr = el("tr", null, el("td", null, a));
      SIDE.forEach(function (side) {
        rms.forEach(function (rm) {
          var r = cell[rm + "\u0000" + side + "\u0000" + a];
          if (!r) { add(tr, el("td", { class: "muted" }, "–")); return; }
          var pct = function (x) { return (100 * (x === null ? 0 : x) / max).toFixed(2) + "%"; };
          var bar = el("a", {
            class: "bar " + side, role: "button",
            href: href(["bar", d.name, m.name, rm, side, a]),
            "data-rm": rm, "data-side": side, "data-attribute": a,
            title: rm + ", " + SIDE_LABEL[side] + ", " + a + ": PFR " + fmt(r.pfr) + " [" + fmt(r.low) + ", " +
              fmt(r.high) + "], mean reward delta " + fmt(r.mean_delta) + "; " + r.n_comparisons +
              " comparisons, " + r.n_perturbations + " perturbations",
          },
          el("span", { class: "fill", style: "width:" + pct(r.pfr) }),
          el("span", { class: "ci", style: "left:" + pct(r.low) + ";width:calc(" + pct(r.high) + " - " + pct(r.low) + ")" }));
          add(tr, el("td", null, bar, el("span", { class: "val" }, fmt(r.pfr, 2))));
        });
      });
      add(body, tr);
    });
    add(view, el("table", { class: "bars", id: "flip-table" }, el("thead", null, head), body));
    if (findingsOf(d.name).length) {
      add(view, el("p", { class: "note", id: "flips-differ" }, FLIP_RATES_DIFFER + " What each RM rewards: ",
        el("a", { href: href(["findings", d.name]) }, "findings"), "."));
    }
    examplesTable(view, ctx);
  }
  function examplesTable(view, ctx) {
    var m = ctx.m;
    if (!m.examples.length) return;
    add(view, el("h3", null, "Representative examples (§4.2)"));
    add(view, el("p", { class: "note" }, "The comparison whose local reward deltas best match an RM's global " +
      "flip-rate ranking (sum of local τ); marked ★ in the comparison lists."));
    var rows = m.examples.map(function (x) {
      var who = x.kind === "rm" ? x.rm_a : x.rm_a + " vs " + x.rm_b + " (" + SIDE_LABEL[x.side] + ")";
      var rm = x.rm_a;
      return el("tr", null, el("td", null, "★ " + who), el("td", { class: "num" }, fmt(x.score)),
        el("td", null, x.comparison_id ? el("a", { href: href(["cmp", ctx.d.name, m.name, rm, x.comparison_id]), class: "example-link" }, x.comparison_id) : "none eligible"));
    });
    add(view, el("table", { id: "examples" }, el("thead", null, el("tr", null, el("th", null, "example"), el("th", { class: "num" }, "score"), el("th", null, "comparison"))), el("tbody", null, rows)));
  }

  // ── findings: what each RM rewards (the start page) ─────────────────────────────────────────────────
  function findingsOf(dname) { return M.findings.filter(function (f) { return f.dataset === dname; }); }
  function firstWithFindings() {
    var names = M.datasets.map(function (d) { return d.name; }).filter(function (n) { return findingsOf(n).length; });
    return names[0] || (M.findings[0] && M.findings[0].dataset);
  }
  function signed(x, digits) {
    if (x === null || x === undefined) return "–";
    var s = Number(x).toFixed(digits === undefined ? 2 : digits);
    return (Number(s) > 0 ? "+" : "") + s.replace("-", "−");
  }
  function unitOf(f) {
    if (f.method === RESCORED) return "reward sd per instance added, measured on the edits of the findings under it";
    if (f.kind === "discovered") return "reward sd per instance added";
    return f.name === LENGTH ? "reward sd per sd of length" : "reward sd";
  }
  function numbers(f) {
    var label = f.method === RESCORED ? "re-scored: " : f.kind === "discovered" ? "discovered: " : "";
    return label + f.name + " " + signed(f.effect) + " [" + signed(f.low) +
      ", " + signed(f.high) + "] " + unitOf(f) + (f.reference ? " vs " + f.reference : "") +
      f.significance_note + (f.q_value !== null && f.q_value !== undefined ? ", q = " + fmt(f.q_value, 3) : "");
  }
  function carrierSentence(f) {
    return f.carrier_edits + " of " + f.n_direction + " edits " + (f.carrier_change === "inserts" ? "insert" : "delete") +
      " “" + f.carrier + "”; they account for " + (Math.round(100 * f.carrier_share_change) > 100 ?
        "more than the whole reward change at equal length (" + Math.round(100 * f.carrier_share_change) +
        "%: the other edits move it the other way)." :
        Math.round(100 * f.carrier_share_change) + "% of the reward change at equal length.");
  }
  function effectLink(f) {
    if (f.kind === "discovered") {
      var d = dataset(f.dataset), k = d.discovered.map(function (x) { return x.feature; }).indexOf(f.name);
      return k < 0 ? null : href(["discovered", f.dataset, k]);
    }
    if (!effectEntry(dataset(f.dataset), f.method)) return null;  // discovery's own length row: no effect edits
    return href(["effect", f.dataset, f.method, f.rm, f.name]);
  }
  function effectBar(f, max) {
    if (f.effect === null) return null;
    var pos = function (x) { return (50 + 50 * Math.max(-max, Math.min(max, x)) / max).toFixed(2) + "%"; };
    var lo = Math.min(0, f.effect), hi = Math.max(0, f.effect);
    return el("span", { class: "ebar" + (f.significant ? " sig" : ""), title: numbers(f) },
      el("span", { class: "fill", style: "left:" + pos(lo) + ";width:calc(" + pos(hi) + " - " + pos(lo) + ")" }),
      f.low === null ? null : el("span", { class: "ci", style: "left:" + pos(f.low) + ";width:calc(" + pos(f.high) + " - " + pos(f.low) + ")" }));
  }
  function exampleOf(f) {
    if (!f.example) return null;
    var said = [];
    if (f.example_effect_change !== null && f.example_effect_change !== undefined) said.push(signed(f.example_effect_change) + " sd");
    else if (f.example_reward_change !== null && f.example_reward_change !== undefined) said.push(signed(f.example_reward_change) + " reward");
    if (f.example_words_change) said.push(signed(f.example_words_change, 0) + " words");
    return el("div", { class: "example" }, el("span", { class: "meta" }, f.name === LENGTH ? "e.g. the edit that changed the length most within 30 words: " : "e.g. "),
      renderEdit(f.example.before, f.example.edit), said.length ? el("span", { class: "meta" }, " (" + said.join(", ") + ")") : null);
  }
  function replicationLine(f) {
    if (!f.replication) return null;
    var halves = f.half_a_effect === null || f.half_a_effect === undefined || f.half_b_effect === null ||
      f.half_b_effect === undefined ? "" : " (A " + signed(f.half_a_effect) + ", B " + signed(f.half_b_effect) + ")";
    return el("div", { class: "replication" + (f.replication === "holds in both halves" ? " holds" : ""),
      title: "estimated again on each half of the pairs: it holds where both halves have its sign and an interval without 0" },
      "Replication: " + f.replication + halves);
  }
  function influenceLine(f) {
    if ((f.carried_by !== 1 && f.carried_by !== 2) || !f.influential_pair) return null;
    var without = signed(f.without_it), pair = f.influential_pair;
    return el("div", { class: "influence", title: "leave-one-pair-out: without this pair (or two) the effect is gone (0, the other sign or within the minimum effect); docs/findings.md" },
      f.carried_by === 1 ? "Carried by one pair: without " + pair + " its effect is " + without + "." :
        "Carried by two pairs: without " + pair + " and one more pair it is gone (without " + pair + " alone: " + without + ").");
  }
  function robustLine(f) {
    if (f.robust !== "a few edits far from the rest make it") return null;
    return el("div", { class: "influence robust", title: "Huber's M-estimate of the same fit weighs edits far from the rest less; docs/effects.md" },
      "A few edits far from the rest make it: Huber's robust fit, which weighs them less, gives " + signed(f.robust_effect) + ".");
  }
  function natureLine(f) {
    if (!f.nature || !f.significant) return null;
    var own = f.nature.indexOf("never in your data") === 0 || f.nature.indexOf("not compared") === 0;
    var numbers = f.natural_effect === null || f.natural_effect === undefined ? "" :
      " — a response with it " + signed(f.natural_effect) + " [" + signed(f.natural_low) + ", " +
      signed(f.natural_high) + "] sd, " + (f.natural_pairs === 1 ? "1 pair differs" : f.natural_pairs + " pairs differ") + " in it";
    return el("div", { class: "nature" + (f.nature === "agrees" ? " holds" : ""),
      title: "edit versus nature: among the original responses, in comparisons whose two responses differ in the feature, the reward difference of the one that has it at equal length; docs/discovery.md" },
      own ? f.nature.charAt(0).toUpperCase() + f.nature.slice(1) + "." : "In your data: " + f.nature + numbers + ".");
  }
  var UNDER_SHOWN = 3;  // findings listed under a line in full (largest first); the rest by name, as on the landing page
  function underLines(f, rows) {  // the findings this discovered feature explains: attribute effects, features under a class
    var under = rows.filter(function (a) { return f.kind === "discovered" && a.under === f.name && a.rm === f.rm; });
    under.sort(function (a, b) { return a.order - b.order; });
    var lines = under.slice(0, UNDER_SHOWN).map(underLine);
    if (under.length > UNDER_SHOWN) {
      lines.push(el("div", { class: "under under-rest" }, "It also carries " + (under.length - UNDER_SHOWN) + " more: " +
        under.slice(UNDER_SHOWN).map(function (a) { return a.name; }).join(", ") + "."));
    }
    return lines;
  }
  function underLine(a) {
    if (a.same_edits) {  // a feature of another engine that made the same edits
      return el("div", { class: "under", "data-name": a.name },
        "The " + a.method + " engine's “" + a.name + "” made the same edits (" + signed(a.effect) + " reward sd per instance added).");
    }
    if (a.under_share !== null && a.under_share !== undefined) {
      var perInstance = a.kind === "discovered";
      var share = Math.round(100 * a.under_share), over = share > 100;
      var back = "(" + share + "%: the edits' other changes move it back)";
      var said = a.under_check === "re-scored"
        ? "; scored again with the class undone in the " + a.under_checked_edits + " edits that change it, " +
          (over ? "more than all of its effect goes " + back + "." : share + "% of its effect goes.")
        : ", whose own effect accounts for " + (over ? "more than all of it " + back : share + "% of it") +
          " (inferred: its edits could not be re-scored without the class).";
      return el("div", { class: "under", "data-name": a.name },
        "It is what ", el("a", { href: effectLink(a) }, a.phrase), " reads (" + a.name + " " + signed(a.effect) +
        (perInstance ? " reward sd per instance added): each instance " : " reward sd): each edit ") +
        (a.under_per_instance > 0 ? "adds " : "removes ") +
        Number(Math.abs(a.under_per_instance).toPrecision(2)) + " of this class" + said);
    }
    return el("div", { class: "under", "data-name": a.name },
      "It is what ", el("a", { href: effectLink(a) }, a.phrase), " reads (" + a.name + " " + signed(a.effect) + " reward sd): " +
      a.carrier_edits + " of " + a.n_direction + " of that attribute's edits " + (a.carrier_change === "inserts" ? "insert" : "delete") +
      " “" + a.carrier + "”.");
  }
  function findingItem(f, max, rows) {
    var link = effectLink(f);
    return el("li", { class: "finding", "data-name": f.name, "data-kind": f.kind, "data-rm": f.rm },
      el("div", { class: "phrase" }, f.phrase),
      el("div", { class: "numbers" }, effectBar(f, max), " ", numbers(f)),
      f.members ? el("div", { class: "members", title: "each member word's effect per instance, from the re-scored edits that change it alone; docs/findings.md" }, "Its members measured alone, per instance: " + f.members + ".") : null,
      f.unmasked ? el("div", { class: "influence unmasked", title: "the feature's edits scored again with the class's change undone; docs/findings.md" }, f.unmasked) : null,
      replicationLine(f),
      influenceLine(f),
      robustLine(f),
      natureLine(f),
      f.carrier ? el("div", { class: "carrier" }, carrierSentence(f)) : null,
      exampleOf(f),
      underLines(f, rows || []),
      link ? el("a", { href: link, class: "edits-link" }, f.kind === "discovered" ? "its edits →" :
        f.name === LENGTH ? "the edits that changed the length most →" : "the edits behind it →") : null);
  }
  function viewFindings(view, dname) {
    var d = dataset(dname), rows = findingsOf(d.name);
    add(view, el("h2", null, "What each RM rewards · " + d.name));
    if (!rows.length) { add(view, el("p", { class: "note" }, "This run computed no attribute effects for " + d.name + ".")); return; }
    var intervals = Math.round(M.level * 100) + "% intervals; filled bar: the interval excludes 0";
    var effectsRan = rows.some(function (f) { return f.kind === "attribute"; });
    add(view, el("p", { class: "note" }, effectsRan ? "Each RM's leading findings, in its own order (largest first): the change in its reward, " +
      "in its reward sd, when a response moves to an attribute's better side with its length held equal (" + intervals +
      "), and its sensitivity to length itself" +
      (rows.some(function (f) { return f.kind === "discovered"; }) && rows.some(function (f) { return f.name === LENGTH; }) ?
        ", the one slope by which every finding, discovered features included, holds length equal. " : ". ") +
      "Each finding leads to the edits behind it. docs/findings.md" :
      "Each RM's leading findings, largest first: the change in its reward, in its reward sd, when one instance of a discovered " +
      "feature is added with its length held equal (" + intervals + "), and its sensitivity to length itself, per sd of length: " +
      "the slope bias discovery held its features at (no attribute effects ran here). Each finding leads to the edits behind it. " +
      "docs/findings.md"));
    var max = 0.05;
    rows.forEach(function (f) { [f.low, f.high, f.effect].forEach(function (x) { if (x !== null) max = Math.max(max, Math.abs(x)); }); });
    var rms = d.rms.filter(function (rm) { return rows.some(function (f) { return f.rm === rm; }); });
    var cols = el("div", { class: "cols findings" });
    rms.forEach(function (rm) {
      var mine = rows.filter(function (f) { return f.rm === rm; });
      var effects = mine.filter(function (f) { return f.kind !== "discovered"; }).sort(function (a, b) { return a.rank - b.rank; });
      var found = mine.filter(function (f) { return f.kind === "discovered"; });
      var methods = effects.filter(function (f) { return f.kind === "attribute"; }).map(function (f) { return f.method; })
        .filter(function (m, i, all) { return all.indexOf(m) === i; });
      var card = el("section", { class: "rm-findings", "data-rm": rm },
        el("h3", null, rm + (effects[0] && effects[0].reference ? " (vs " + effects[0].reference + ")" : "")),
        el("div", { class: "meta" }, (methods.length ? methods.join(", ") + " edits" : "") + (found.length ? (methods.length ? " · " : "") + "discovered features" : "")));
      var byOrder = function (a, b) { return a.order - b.order; };  // every kind in one ranking
      var leading = mine.filter(function (f) { return f.leading; }).sort(byOrder);
      if (effects.some(function (f) { return f.kind === "attribute"; }) && !effects.some(function (f) { return f.kind === "attribute" && f.significant; })) {
        add(card, el("p", { class: "note" }, "No attribute effect is significant."));
      }
      add(card, el("ol", { class: "leading" }, leading.map(function (f) { return findingItem(f, max, mine); })));
      var all = mine.slice().sort(byOrder);
      add(card, el("details", { class: "all-findings" }, el("summary", null, "all " + all.length + " of " + rm + "'s findings, largest first"),
        el("table", { class: "findings-table" }, el("tbody", null, all.map(function (f) {
          var link = effectLink(f);
          return el("tr", { "data-name": f.name }, el("td", { class: "num" }, f.order), el("td", null, link ? el("a", { href: link }, f.phrase) : f.phrase),
            el("td", null, effectBar(f, max)), el("td", { class: "num" }, signed(f.effect)), el("td", { class: "meta" }, "[" + signed(f.low) + ", " + signed(f.high) + "]"));
        })))));
      add(cols, card);
    });
    add(view, cols);
    var analysed = d.methods.filter(function (m) { return m.pfr.length; });
    if (analysed.length) {
      add(view, el("h3", null, "The paper's flip rates"), el("p", { class: "note", id: "flips-note" }, FLIP_RATES_DIFFER + " ",
        el("a", { href: href(["flips", d.name, analysed[0].name]), id: "to-flips" }, "Flip rates →")));
    }
  }

  // ── the edits behind an effect ──────────────────────────────────────────────────────────────────────
  function effectEntry(d, method) { return d.effects.filter(function (e) { return e.method === method; })[0]; }
  function explainedMethod(d, rm) { return d.methods.filter(function (m) { return m.rms.indexOf(rm) >= 0; })[0]; }
  function viewEffect(view, args, params) {
    var d = dataset(args[0]), method = args[1], rm = args[2], name = args[3];
    var f = M.findings.filter(function (x) { return x.dataset === d.name && x.method === method && x.rm === rm && x.name === name; })[0];
    var entry = effectEntry(d, method);
    add(view, el("p", null, el("a", { href: href(["findings", d.name]) }, "← what each RM rewards")));
    add(view, el("h2", { id: "effect-title" }, (f ? f.phrase : name) + " · " + rm));
    if (f) add(view, el("p", { id: "effect-summary" }, numbers(f) + " · " + method + " edits" +
      (f.name === LENGTH ? "" : " · " + f.n_direction + " edits to the " + (f.effect < 0 ? "worse" : "better") + " side the RM rewards")));
    if (f && f.carrier) add(view, el("p", { class: "carrier", id: "effect-carrier" }, carrierSentence(f)));
    var key = name === LENGTH ? LENGTH : String(entry ? entry.attributes.indexOf(name) : -1);
    if (!entry || key === "-1" || (name === LENGTH && !entry.length)) {
      add(view, el("p", { class: "note" }, "No effect edits of " + name + " in " + d.name + " · " + method + "."));
      return;
    }
    var where = d.name + "/" + method;
    return load("data/datasets/" + where + "/effects/" + key + ".js", "effects/" + where + "/" + key).then(function (E) {
      var shards = E.c.map(function (c) { return Math.floor(c / M.per_file); }).filter(function (k, i, all) { return all.indexOf(k) === i; });
      return Promise.all([comparisonsOf(d.name)].concat(shards.map(function (k) { return textsOf(d.name, k); }))).then(function (res) {
        var texts = {};
        shards.forEach(function (k, i) { texts[k] = res[i + 1]; });
        drawEffect(view, d, method, rm, name, E, res[0], texts, params, entry);
      });
    });
  }
  function runsTable(runs, direction) {
    var r = runs[direction];
    if (!r) return null;
    var n = Math.max(r.inserted.length, r.deleted.length), rows = [];
    for (var i = 0; i < n; i++) {
      var ins = r.inserted[i], del = r.deleted[i];
      rows.push(el("tr", null, el("td", null, ins ? el("ins", null, ins[0]) : ""), el("td", { class: "num" }, ins ? ins[1] : ""),
        el("td", null, del ? el("del", null, del[0]) : ""), el("td", { class: "num" }, del ? del[1] : "")));
    }
    return el("div", { class: "runs" }, el("h4", null, "Edits to the " + direction + " side"),
      el("table", { id: "runs-" + direction }, el("thead", null, el("tr", null, el("th", null, "inserted"), el("th", { class: "num" }, "edits"),
        el("th", null, "deleted"), el("th", { class: "num" }, "edits"))), el("tbody", null, rows)));
  }
  function drawEffect(view, d, method, rm, name, E, cmp, texts, params, entry) {
    var n = E.id.length, carrier = E.carrier ? E.carrier[rm] : null, mine = E.rm[rm];
    var withCarrier = {};
    if (carrier) carrier.edits.forEach(function (j) { withCarrier[j] = true; });
    function original(j) {
      var c = E.c[j], t = texts[Math.floor(c / M.per_file)];
      return (E.target[j] === 0 ? t.chosen : t.rejected)[c - t.first];
    }
    if (Object.keys(E.runs).length) {
      add(view, el("h3", null, "What the edits changed most often"),
        el("div", { class: "cols" }, runsTable(E.runs, "better"), runsTable(E.runs, "worse")));
    }
    var state = { dir: params.get("dir") || "", carrier: params.get("carrier") === "1", sort: params.get("sort") || (name === LENGTH ? "words" : "up"),
      open: params.get("open") || "", shown: PAGE };
    var controls = el("div", { class: "controls", id: "effect-controls" });
    var dirSel = el("select", { id: "effect-dir" });
    [["", "both directions"], ["1", "to the better side"], ["-1", "to the worse side"]].forEach(function (o) {
      add(dirSel, el("option", { value: o[0], selected: o[0] === state.dir ? "selected" : null }, o[1]));
    });
    var sortSel = el("select", { id: "effect-sort" });
    [["up", "reward change for " + rm + ", largest first"], ["down", "reward change for " + rm + ", smallest first"], ["words", "words changed, most first"]].forEach(function (o) {
      add(sortSel, el("option", { value: o[0], selected: o[0] === state.sort ? "selected" : null }, o[1]));
    });
    add(controls, el("label", null, "edits ", dirSel), el("label", null, "sort ", sortSel));
    var carrierBox = null;
    if (carrier) {
      carrierBox = el("input", { type: "checkbox", id: "effect-carrier-only", checked: state.carrier ? "checked" : null });
      add(controls, el("label", null, carrierBox, " only the " + carrier.edits.length + " that " + (carrier.change === "inserts" ? "insert" : "delete") + " “" + carrier.phrase + "”"));
    }
    var out = el("div", { id: "effect-edits" });
    add(view, el("h3", null, "The edits"), controls, out);
    function sync() {
      state.dir = dirSel.value; state.sort = sortSel.value; state.carrier = carrierBox ? carrierBox.checked : false; state.shown = PAGE;
      history.replaceState(null, "", href(["effect", d.name, method, rm, name], { dir: state.dir, carrier: state.carrier ? 1 : 0, sort: state.sort, open: state.open }));
      draw();
    }
    [dirSel, sortSel].concat(carrierBox ? [carrierBox] : []).forEach(function (c) { c.addEventListener("change", sync); });
    var cm = explainedMethod(d, rm);
    function card(j) {
      var orig = original(j), y = mine.y[j], r = mine.r[j], cid = cmp.id[E.c[j]];
      var summary = el("summary", null, el("span", { class: "badge " + (E.dir[j] > 0 ? "plus" : "minus") }, DIR_LABEL[E.dir[j]]),
        E.a ? el("span", { class: "meta" }, entry.attributes[E.a[j]] + " ") : null,
        el("span", { class: "delta", title: rm + ": reward change " + fmt(r) + " (" + fmt(y) + " reward sd" + (carrier && withCarrier[j] ? "; changes the carrier" : "") + ")" }, signed(y) + " sd"),
        " · " + signed(E.words[j], 0) + " words · ", cid, el("span", { class: "preview" }, editPreview(orig, E.edit[j])));
      var body = el("div", { class: "pert-body" });
      var box = el("details", { class: "pert effect-edit", id: "e-" + E.id[j], "data-id": E.id[j] }, summary, body);
      var filled = false;
      function fill() {
        if (filled) return;
        filled = true;
        add(body, el("p", { class: "meta" }, "edit of the " + TARGET[E.target[j]] + " response of ", cm ? el("a", { href: href(["cmp", d.name, cm.name, rm, cid]), class: "cmp-link" }, cid) : cid,
          " · id " + E.id[j]));
        add(body, renderEdit(orig, E.edit[j]));
        add(body, el("table", { class: "results" }, el("thead", null, el("tr", null, el("th", null, "RM"), el("th", { class: "num" }, "reward change"), el("th", { class: "num" }, "in reward sd (as the effect)"))),
          el("tbody", null, Object.keys(E.rm).map(function (other) {
            return el("tr", null, el("td", null, other), el("td", { class: "num" }, fmt(E.rm[other].r[j])), el("td", { class: "num" }, signed(E.rm[other].y[j], 3)));
          }))));
      }
      box.addEventListener("toggle", function () { if (box.open) { state.open = E.id[j]; fill(); } });
      if (state.open === E.id[j]) { box.open = true; fill(); }
      return box;
    }
    function draw() {
      clear(out);
      var list = [];
      for (var j = 0; j < n; j++) {
        if (state.dir && String(E.dir[j]) !== state.dir) continue;
        if (state.carrier && !withCarrier[j]) continue;
        list.push(j);
      }
      var key = function (j) { return mine.y[j] === null ? -Infinity : mine.y[j]; };
      list.sort(state.sort === "words" ? function (a, b) { return Math.abs(E.words[b]) - Math.abs(E.words[a]) || a - b; } :
        state.sort === "down" ? function (a, b) { return key(a) - key(b) || a - b; } : function (a, b) { return key(b) - key(a) || a - b; });
      add(out, el("p", { class: "note", id: "effect-count" }, list.length + " of " + n + " edits shown" +
        (name === LENGTH ? " (the " + n + " edits, of every attribute, that changed the length most)" : "")));
      list.slice(0, state.shown).forEach(function (j) { add(out, card(j)); });
      if (list.length > state.shown) {
        add(out, el("p", { class: "pager" }, el("button", { class: "link", onclick: function () { state.shown += PAGE; draw(); } }, "show " + Math.min(PAGE, list.length - state.shown) + " more")));
      }
      if (state.open) {
        var opened = document.getElementById("e-" + state.open);
        if (opened) opened.scrollIntoView({ block: "center" });
      }
    }
    draw();
  }

  // ── the edits behind a discovered feature ───────────────────────────────────────────────────────────
  function viewDiscovered(view, args) {
    var d = dataset(args[0]), k = Number(args[1]), feature = d.discovered[k];
    add(view, el("p", null, el("a", { href: href(["findings", d.name]) }, "← what each RM rewards")));
    if (!feature) { add(view, el("p", { class: "note" }, "No discovered feature " + args[1] + " in " + d.name + ".")); return; }
    add(view, el("h2", { id: "discovered-title" }, "Discovered feature: " + feature.feature));
    var rows = M.findings.filter(function (f) { return f.dataset === d.name && f.kind === "discovered" && f.name === feature.feature; });
    add(view, el("ul", { id: "discovered-effects" }, rows.map(function (f) { return el("li", null, el("b", null, f.rm + ": " + f.phrase), " — " + numbers(f)); })));
    return load("data/datasets/" + d.name + "/discovered/" + k + ".js", "discovered/" + d.name + "/" + k).then(function (D) {
      add(view, el("p", { class: "note", id: "discovered-count" }, D.dir.length + " of its " + D.n + " edits shown: +1 adds the feature, −1 removes it."));
      D.dir.forEach(function (dir, j) {
        add(view, el("details", { class: "pert discovered-edit" }, el("summary", null, el("span", { class: "badge " + (dir > 0 ? "plus" : "minus") }, dir > 0 ? "adds" : "removes"),
          el("span", { class: "preview" }, editPreview(D.source[j], D.edit[j]))), el("div", { class: "pert-body" }, renderEdit(D.source[j], D.edit[j]))));
      });
    });
  }

  // ── view: behind a bar ──────────────────────────────────────────────────────────────────────────────
  function viewBar(view, ctx, args) {
    var d = ctx.d, m = ctx.m, rm = args[2], side = args[3], attr = args[4];
    var row = m.pfr.filter(function (r) { return r.rm === rm && r.side === side && r.attribute === attr; })[0];
    add(view, el("h2", null, "Behind the bar: " + rm + " · " + SIDE_LABEL[side] + " · " + attr));
    add(view, el("p", null, el("a", { href: href(["flips", d.name, m.name]) }, "← flip rates")));
    if (row) {
      add(view, el("p", { class: "note", id: "bar-summary" }, "PFR " + fmt(row.pfr) + " [" + fmt(row.low) + ", " + fmt(row.high) +
        "] over " + row.n_comparisons + " comparisons and " + row.n_perturbations + " perturbations; mean reward delta " + fmt(row.mean_delta) + "."));
    }
    var a = m.attributes.indexOf(attr), s = SIDE.indexOf(side);
    return Promise.all([comparisonsOf(d.name), rmFile(d.name, m.name, rm)]).then(function (res) {
      var cmp = res[0], f = res[1], rep = representative(m), groups = {}, order = [];
      f.c.forEach(function (c, j) {
        if (f.side[j] !== s || f.attr[j] !== a) return;
        if (!groups[c]) { groups[c] = []; order.push(c); }
        groups[c].push(j);
      });
      order.sort(function (x, y) { return x - y; });
      var rows = order.map(function (c) {
        var js = groups[c], ncf = js.filter(function (j) { return f.kind[j] === 1; }).length;
        var md = js.reduce(function (t, j) { return t + f.delta[j]; }, 0) / js.length;
        return el("tr", { class: rep[cmp.id[c]] ? "rep" : null }, el("td", null, rep[cmp.id[c]] ? "★" : ""),
          el("td", null, el("a", { href: href(["cmp", d.name, m.name, rm, cmp.id[c]], { attr: attr }), class: "cmp-link" }, cmp.id[c])),
          el("td", null, cmp.prompt[c]), el("td", { class: "num" }, js.length), el("td", { class: "num" }, ncf),
          el("td", { class: "num" }, fmt(ncf / js.length, 2)), el("td", { class: "num" }, fmt(md)));
      });
      add(view, el("h3", null, order.length + " comparisons"));
      add(view, el("table", { id: "bar-comparisons", class: "long" }, el("thead", null, el("tr", null, ["", "comparison", "prompt", "perturbations", "CFs", "CF share", "mean Δ"].map(function (h, i) {
        return el("th", { class: i >= 3 ? "num" : null }, h);
      }))), el("tbody", null, rows)));
      var list = [];
      order.forEach(function (c) { groups[c].forEach(function (j) { list.push(j); }); });
      add(view, el("h3", null, list.length + " perturbations" + (list.length > BAR_LIMIT ? " (the first " + BAR_LIMIT + " shown)" : "")));
      var prow = list.slice(0, BAR_LIMIT).map(function (j) {
        var c = f.c[j];
        return el("tr", null, el("td", null, el("a", { href: href(["cmp", d.name, m.name, rm, cmp.id[c]], { attr: attr, open: f.pid[j] }), class: "pert-link" }, f.pid[j])),
          el("td", null, cmp.id[c]), el("td", null, TARGET[f.target[j]]), el("td", { class: "num" }, f.variant[j]),
          el("td", null, kindBadge(f.kind[j], f.sub[j])), el("td", { class: "num" }, fmt(f.r[j])), el("td", { class: "num" }, fmt(f.delta[j])));
      });
      add(view, el("table", { id: "bar-perturbations", class: "long" }, el("thead", null, el("tr", null, ["perturbation", "comparison", "perturbed", "variant", "kind", "reward", "Δ against preference"].map(function (h, i) {
        return el("th", { class: i === 3 || i >= 5 ? "num" : null }, h);
      }))), el("tbody", null, prow)));
    });
  }

  // ── view: comparison list ───────────────────────────────────────────────────────────────────────────
  function viewList(view, ctx, params) {
    var d = ctx.d, m = ctx.m, rm = ctx.rm;
    add(view, el("h2", null, "Comparisons · " + d.name + " · " + m.name + " · explained for " + rm));
    return Promise.all([comparisonsOf(d.name), rmFile(d.name, m.name, rm)]).then(function (res) {
      var cmp = res[0], f = res[1], rep = representative(m), per = byComparison(f);
      var rows = cmp.id.map(function (id, i) {
        var js = per[i] || [], rw = rewardsOf(cmp, rm, i);
        var cfp = 0, cfm = 0;
        js.forEach(function (j) { if (f.kind[j] === 1) { if (f.side[j] === 0) cfp++; else cfm++; } });
        var pluses = m.rms.map(function (r) { return plusTarget(cmp, r, i); }).filter(function (p) { return p !== null; });
        return {
          i: i, id: id, seed: cmp.seed[i], prompt: cmp.prompt[i], plus: plusTarget(cmp, rm, i),
          margin: rw ? rw.margin : null, n: js.length, cfp: cfp, cfm: cfm, cf: cfp + cfm,
          split: pluses.some(function (p) { return p !== pluses[0]; }), rep: rep[id] || null,
        };
      });
      // A comparison with no perturbation explained for this RM (it ties the originals, the orienting RMs disagree
      // on y+, or every perturbation of it was skipped): hidden unless asked for, and counted.
      var unexplained = rows.filter(function (r) { return r.n === 0; }).length;
      var state = { key: params.get("sort") || "i", desc: params.get("desc") === "1", q: params.get("q") || "",
        cf: params.get("cf") === "1", split: params.get("split") === "1", all: params.get("all") === "1", shown: PAGE };
      var controls = el("div", { class: "controls" });
      var out = el("div");
      var search = el("input", { type: "search", id: "list-search", placeholder: "filter by id or prompt", value: state.q });
      search.addEventListener("input", function () { state.q = search.value; state.shown = PAGE; draw(); });
      var cfBox = el("input", { type: "checkbox", id: "list-cf", checked: state.cf ? "checked" : null });
      cfBox.addEventListener("change", function () { state.cf = cfBox.checked; state.shown = PAGE; draw(); });
      add(controls, search, el("label", null, cfBox, " with CFs for " + rm));
      if (m.rms.length > 1) {
        var spBox = el("input", { type: "checkbox", id: "list-split", checked: state.split ? "checked" : null });
        spBox.addEventListener("change", function () { state.split = spBox.checked; state.shown = PAGE; draw(); });
        add(controls, el("label", null, spBox, " RMs prefer different responses"));
      }
      if (unexplained) {
        var allBox = el("input", { type: "checkbox", id: "list-unexplained", checked: state.all ? "checked" : null });
        allBox.addEventListener("change", function () { state.all = allBox.checked; state.shown = PAGE; draw(); });
        add(controls, el("label", { title: WHY_UNEXPLAINED }, allBox,
          " also the " + unexplained + " not explained for " + rm));
      }
      add(view, controls, out);
      var columns = [
        { key: "rep", label: "★", tip: "representative example" },
        { key: "i", label: "comparison", sort: true },
        { key: "prompt", label: "prompt", sort: true },
        { key: "plus", label: "y+ of " + rm, sort: true, tip: "which response the RM prefers" },
        { key: "margin", label: "margin", num: true, sort: true, tip: "r(y+) − r(y−) under " + rm },
        { key: "n", label: "perturbations", num: true, sort: true },
        { key: "cfp", label: "CF on Y+", num: true, sort: true },
        { key: "cfm", label: "CF on Y−", num: true, sort: true },
        { key: "cf", label: "CFs", num: true, sort: true },
      ];
      function draw() {
        clear(out);
        var q = state.q.toLowerCase();
        var shown = rows.filter(function (r) {
          return (!q || r.id.toLowerCase().indexOf(q) >= 0 || r.prompt.toLowerCase().indexOf(q) >= 0) &&
            (!state.cf || r.cf > 0) && (!state.split || r.split) && (state.all || r.n > 0);
        });
        shown.sort(function (x, y) {
          var a = x[state.key], b = y[state.key];
          if (a === null) return 1; if (b === null) return -1;
          var c = a < b ? -1 : a > b ? 1 : x.i - y.i;
          return state.desc ? -c : c;
        });
        add(out, el("p", { class: "note", id: "list-count" }, shown.length + " of " + rows.length + " comparisons" +
          (unexplained ? " (" + unexplained + " not explained for " + rm + ", " + (state.all ? "greyed" : "hidden") + ")" : "")));
        var trs = shown.slice(0, state.shown).map(function (r) {
          return el("tr", { class: r.n === 0 ? "unexplained" : r.rep ? "rep" : null, "data-id": r.id,
            title: r.n === 0 ? "no perturbation explained for " + rm + ": " + WHY_UNEXPLAINED : null },
            el("td", { title: r.rep ? "representative: " + r.rep.join("; ") : null }, r.rep ? "★" : ""),
            el("td", null, el("a", { href: href(["cmp", d.name, m.name, rm, r.id]), class: "cmp-link" }, r.id)),
            el("td", null, r.prompt),
            el("td", null, r.plus === null ? "tie" : TARGET[r.plus]),
            el("td", { class: "num" }, fmt(r.margin)), el("td", { class: "num" }, r.n),
            el("td", { class: "num" }, r.cfp), el("td", { class: "num" }, r.cfm), el("td", { class: "num" }, r.cf));
        });
        add(out, sortableTable(columns, trs, state, function (key) {
          if (state.key === key) state.desc = !state.desc; else { state.key = key; state.desc = key !== "i" && key !== "prompt"; }
          draw();
        }, "comparison-table"));
        if (shown.length > state.shown) {
          add(out, el("p", { class: "pager" }, el("button", { class: "link", onclick: function () { state.shown += PAGE; draw(); } }, "show " + Math.min(PAGE, shown.length - state.shown) + " more")));
        }
      }
      draw();
    });
  }

  // ── view: one comparison ────────────────────────────────────────────────────────────────────────────
  function viewComparison(view, ctx, cid, params) {
    var d = ctx.d, m = ctx.m, rm = ctx.rm;
    var files = [comparisonsOf(d.name)].concat(m.rms.map(function (r) { return rmFile(d.name, m.name, r); }));
    return Promise.all(files).then(function (res) {
      var cmp = res[0], i = cmp.id.indexOf(cid);
      if (i < 0) throw new Error("No comparison " + cid + " in " + d.name);
      var k = Math.floor(i / M.per_file);
      return Promise.all([textsOf(d.name, k), editsOf(d.name, m, k)]).then(function (more) {
        drawComparison(view, ctx, cmp, i, res.slice(1), more[0], more[1], params);
      });
    });
  }
  function drawComparison(view, ctx, cmp, i, rmFiles, texts, edits, params) {
    var d = ctx.d, m = ctx.m, rm = ctx.rm, cid = cmp.id[i], rep = representative(m)[cid];
    var t = i - texts.first;
    var original = [texts.chosen[t], texts.rejected[t]];
    var p = plusTarget(cmp, rm, i);
    var nav = el("p", null, el("a", { href: href(["list", d.name, m.name, rm]) }, "← comparisons"), " · ",
      i > 0 ? el("a", { href: href(["cmp", d.name, m.name, rm, cmp.id[i - 1]]), id: "prev" }, "previous") : "previous", " · ",
      i + 1 < cmp.id.length ? el("a", { href: href(["cmp", d.name, m.name, rm, cmp.id[i + 1]]), id: "next" }, "next") : "next");
    add(view, nav, el("h2", { id: "comparison-title" }, cid, rep ? el("span", { class: "badge rep", title: "representative example" }, "★ " + rep.join("; ")) : null));
    add(view, el("p", { class: "meta" }, "seed " + cmp.seed[i] + " · method " + m.name + " · perturbations explained for " + rm +
      " (set: " + (m.orienters[rm] || "–") + ")"));
    add(view, el("h4", null, "Prompt"), el("div", { class: "text prompt", id: "prompt" }, texts.prompt[t]));
    var order = p === null ? [0, 1] : [p, 1 - p];
    add(view, el("div", { class: "texts" }, order.map(function (target, n) {
      var label = (p === null ? "" : (n === 0 ? "y+ · " : "y− · ")) + TARGET[target] +
        (target === 0 ? " (human-preferred)" : " (human-rejected)") + (p === null ? " · " + rm + " ties" : "");
      return el("div", null, el("h4", null, label), el("div", { class: "text " + (p === null ? "" : SIDE[n]), id: "response-" + TARGET[target] }, original[target]));
    })));
    // every RM's rewards of the two originals
    var rwRows = m.rms.map(function (r) {
      var rw = rewardsOf(cmp, r, i), pr = plusTarget(cmp, r, i);
      return el("tr", null, el("td", null, r), el("td", { class: "num" }, rw ? fmt(rw.chosen) : "–"), el("td", { class: "num" }, rw ? fmt(rw.rejected) : "–"),
        el("td", null, pr === null ? "tie" : TARGET[pr]), el("td", { class: "num" }, rw ? fmt(rw.margin) : "–"));
    });
    add(view, el("h4", null, "Rewards of the originals"), el("table", { id: "original-rewards" }, el("thead", null, el("tr", null, el("th", null, "RM"), el("th", { class: "num" }, "r(chosen)"),
      el("th", { class: "num" }, "r(rejected)"), el("th", null, "prefers"), el("th", { class: "num" }, "margin r(y+) − r(y−)"))), el("tbody", null, rwRows)));

    // the perturbations explained for the chosen RM, with every RM's result on each
    var index = {};
    rmFiles.forEach(function (f, n) {
      f.pid.forEach(function (pid, j) { if (f.c[j] === i) (index[pid] = index[pid] || {})[m.rms[n]] = j; });
    });
    var mine = rmFiles[m.rms.indexOf(rm)];
    var perts = [];
    if (edits) {
      edits.pid.forEach(function (pid, j) {
        if (edits.c[j] !== i || !index[pid] || index[pid][rm] === undefined) return;
        var jr = index[pid][rm];
        var results = m.rms.filter(function (r) { return index[pid][r] !== undefined; }).map(function (r) {
          var f = rmFiles[m.rms.indexOf(r)], jj = index[pid][r], rw = rewardsOf(cmp, r, i);
          var margin = rw ? (f.side[jj] === 0 ? f.r[jj] - rw.minus : rw.plus - f.r[jj]) : null;
          return { rm: r, side: f.side[jj], r: f.r[jj], kind: f.kind[jj], sub: f.sub[jj], delta: f.delta[jj], margin: margin };
        });
        var kinds = results.map(function (x) { return x.kind; });
        perts.push({
          j: j, pid: pid, side: mine.side[jr], attr: edits.attr[j], target: edits.target[j], variant: edits.variant[j],
          kind: mine.kind[jr], delta: mine.delta[jr], r: mine.r[jr], results: results,
          disagree: kinds.some(function (x) { return x !== kinds[0]; }),
          size: edits.edit[j].reduce(function (s, st) { return s + st[1] + words(st[2]).length; }, 0),
        });
      });
    }
    var state = { attr: params.get("attr") || "", cf: params.get("cf") === "1", dis: params.get("dis") === "1",
      sort: params.get("sort") || "attribute", open: params.get("open") || "" };
    var controls = el("div", { class: "controls", id: "pert-controls" });
    var attrSel = el("select", { id: "filter-attr" }, el("option", { value: "" }, "all attributes"));
    m.attributes.concat(perts.some(function (x) { return x.attr < 0; }) ? ["(no attribute)"] : []).forEach(function (a) {
      add(attrSel, el("option", { value: a, selected: a === state.attr ? "selected" : null }, a));
    });
    var cfBox = el("input", { type: "checkbox", id: "filter-cf", checked: state.cf ? "checked" : null });
    var disBox = el("input", { type: "checkbox", id: "filter-disagree", checked: state.dis ? "checked" : null });
    var sortSel = el("select", { id: "sort-perts" });
    [["attribute", "attribute"], ["delta", "Δ against preference (largest first)"], ["reward", "reward (highest first)"], ["size", "words changed (most first)"]].forEach(function (o) {
      add(sortSel, el("option", { value: o[0], selected: o[0] === state.sort ? "selected" : null }, o[1]));
    });
    function sync() {
      state.attr = attrSel.value; state.cf = cfBox.checked; state.dis = disBox.checked; state.sort = sortSel.value;
      history.replaceState(null, "", href(["cmp", d.name, m.name, rm, cid], { attr: state.attr, cf: state.cf ? 1 : 0, dis: state.dis ? 1 : 0, sort: state.sort === "attribute" ? "" : state.sort, open: state.open }));
      draw();
    }
    [attrSel, cfBox, disBox, sortSel].forEach(function (c) { c.addEventListener("change", sync); });
    add(controls, el("label", null, "attribute ", attrSel), el("label", null, cfBox, " CFs only (for " + rm + ")"));
    if (perts.some(function (x) { return x.results.length > 1; })) {
      add(controls, el("label", { title: "perturbations that are a CF for one RM and an SF for another" }, disBox, " RMs disagree"));
    }
    add(controls, el("label", null, "sort ", sortSel));
    var out = el("div", { id: "perturbations" });
    add(view, el("h3", null, "Perturbations"), controls, out);
    if (m.judged) add(controls, el("span", { class: "meta" }, "judge verdicts shown where the judge ran"));

    function draw() {
      clear(out);
      var shown = perts.filter(function (x) {
        return (!state.attr || attrName(m, x.attr) === state.attr) && (!state.cf || x.kind === 1) && (!state.dis || x.disagree);
      });
      var sorters = {
        attribute: function (x, y) { return attrName(m, x.attr) < attrName(m, y.attr) ? -1 : attrName(m, x.attr) > attrName(m, y.attr) ? 1 : x.variant - y.variant || x.j - y.j; },
        delta: function (x, y) { return y.delta - x.delta || x.j - y.j; },
        reward: function (x, y) { return y.r - x.r || x.j - y.j; },
        size: function (x, y) { return y.size - x.size || x.j - y.j; },
      };
      shown.sort(sorters[state.sort] || sorters.attribute);
      add(out, el("p", { class: "note", id: "pert-count" }, shown.length + " of " + perts.length + " perturbations shown"));
      SIDE.forEach(function (side, s) {
        var mineSide = shown.filter(function (x) { return x.side === s; });
        var target = p === null ? null : (s === 0 ? p : 1 - p);
        add(out, el("h3", { class: "side-head" }, "Perturbations of " + SIDE_LABEL[side] + (target === null ? "" : " (" + TARGET[target] + ")") + " · " + mineSide.length));
        var lastAttr = null;
        mineSide.forEach(function (x) {
          if (state.sort === "attribute" && x.attr !== lastAttr) {
            add(out, el("h4", { class: "attr-head" }, attrName(m, x.attr)));
            lastAttr = x.attr;
          }
          add(out, perturbationCard(x, original[x.target]));
        });
      });
      if (state.open) {
        var target = document.getElementById("p-" + state.open);
        if (target) { target.open = true; target.scrollIntoView({ block: "center" }); }
      }
    }
    function perturbationCard(x, orig) {
      var j = x.j, edit = edits.edit[j], judge = edits.judge[j];
      var summary = el("summary", null, el("span", { class: "badge " + SIDE[x.side] }, SIDE_LABEL[SIDE[x.side]]), attrName(m, x.attr) + " #" + x.variant + " ",
        x.results.map(function (r) {
          return el("span", { title: r.rm + ": reward " + fmt(r.r) + ", Δ " + fmt(r.delta) }, m.rms.length > 1 ? r.rm + " " : "", kindBadge(r.kind, r.sub));
        }),
        judge ? judge.map(function (v) { return el("span", { class: "badge judge", title: "judge: " + v.answer }, "judge: " + (v.verdict || "unparsed") + (v.agrees === true ? " ✓" : v.agrees === false ? " ✗" : "")); }) : null,
        el("span", { class: "preview" }, editPreview(orig, edit)));
      var body = el("div", { class: "pert-body" });
      var card = el("details", { class: "pert", id: "p-" + x.pid, "data-pid": x.pid }, summary, body);
      var filled = false;
      function fill() {
        if (filled) return;
        filled = true;
        add(body, el("p", { class: "meta" }, "edit of the " + TARGET[x.target] + " response · direction " + edits.direction[j] + " · generator " + edits.generator[j] +
          (edits.focus[j].length ? " · focus: " + edits.focus[j].join(", ") : "") + " · set " + edits.orienter[j] + " · id " + x.pid));
        add(body, renderEdit(orig, edit));
        var rows = x.results.map(function (r) {
          return el("tr", null, el("td", null, r.rm), el("td", null, SIDE_LABEL[SIDE[r.side]]), el("td", { class: "num" }, fmt(r.r)),
            el("td", { class: "num", title: "preference margin after the edit: positive where the original preference holds" }, fmt(r.margin)),
            el("td", null, kindBadge(r.kind, r.sub)), el("td", { class: "num" }, fmt(r.delta)));
        });
        add(body, el("table", { class: "results" }, el("thead", null, el("tr", null, el("th", null, "RM"), el("th", null, "side"), el("th", { class: "num" }, "r(y′)"),
          el("th", { class: "num" }, "margin after edit"), el("th", null, "kind"), el("th", { class: "num" }, "Δ against preference"))), el("tbody", null, rows)));
        if (judge) judge.forEach(function (v) {
          add(body, el("p", { class: "meta" }, "Judge (" + v.judge + "): intended " + v.intended + ", verdict " + (v.verdict || "unparsed") + " — " + v.answer));
        });
      }
      card.addEventListener("toggle", function () { if (card.open) fill(); });
      if (state.open === x.pid) fill();
      return card;
    }
    draw();
  }

  // ── view: tokens ────────────────────────────────────────────────────────────────────────────────────
  function viewTokens(view, params) {
    var T = M.tokens;
    add(view, el("h2", null, "Optimal and pessimal tokens"));
    if (!T) { add(view, el("p", { class: "note" }, "This run scanned no tokens (tokens.enabled is off).")); return; }
    var q = params.get("q") || "";
    var form = el("form", { class: "controls", id: "token-form" });
    var box = el("input", { type: "search", id: "token-search", placeholder: "a token or word", value: q });
    add(form, el("label", null, "Search ", box), el("button", { type: "submit", id: "token-go" }, "search"),
      el("span", { class: "meta" }, "exact match after trimming and lower-casing; otherwise tokens starting with it"));
    form.addEventListener("submit", function (ev) { ev.preventDefault(); go(["tokens"], { q: box.value }); });
    add(view, form);
    var results = el("div", { id: "token-results" });
    add(view, results);
    var prompts = T.prompts.map(function (p) { return p.id; });
    var jobs = [];
    if (q) {
      var b = bucket(q);
      T.rms.forEach(function (rm) {
        prompts.forEach(function (p) {
          if (T.scans[rm] && T.scans[rm][p]) jobs.push(scanPart(rm, p, b).then(function (s) { return { rm: rm, p: p, s: s, n: T.scans[rm][p].n }; }));
        });
      });
      if (M.human) jobs.push(load("data/tokens/human.js", "human").then(function (h) { return { human: h }; }));
    }
    var done = Promise.all(jobs).then(function (scans) {
      if (q) drawSearch(results, q, scans);
    });
    // top and bottom lists
    T.prompts.forEach(function (p) {
      add(view, el("h3", null, "Prompt " + p.id + (p.text ? ": " + p.text : "")));
      var cols = el("div", { class: "cols" });
      T.rms.forEach(function (rm) {
        var e = T.scans[rm] && T.scans[rm][p.id];
        if (!e) return;
        var list = function (items, from) {
          return el("ol", { start: from }, items.map(function (it) {
            return el("li", null, el("a", { href: href(["tokens"], { q: it[0] }), class: "tok" }, quoted(it[0])), " " + fmt(it[1], 2));
          }));
        };
        add(cols, el("div", { class: "extremes", "data-rm": rm }, el("h4", null, rm + " (" + e.n + " tokens)"),
          el("div", { class: "meta" }, "top"), list(e.top, 1), el("div", { class: "meta" }, "bottom"),
          el("ol", { reversed: "reversed", start: e.n }, e.bottom.map(function (it) {
            return el("li", null, el("a", { href: href(["tokens"], { q: it[0] }), class: "tok" }, quoted(it[0])), " " + fmt(it[1], 2));
          }))));
      });
      add(view, cols);
    });
    if (M.human) {
      var humanBox = el("div", { id: "human" });
      add(view, el("h3", null, "Human ranking" + (M.human_prompt ? " · prompt: " + M.human_prompt : "")), humanBox);
      done = done.then(function () { return load("data/tokens/human.js", "human"); }).then(function (h) { drawHuman(humanBox, h, q); });
    }
    return done;
  }
  // The search key and file of a token, as rmexplain.explorer.build.token_key and token_bucket compute them.
  function norm(s) { return String(s).replace(/^[ \t\n\r\f\v]+|[ \t\n\r\f\v]+$/g, "").toLowerCase(); }
  function bucket(s) { var k = norm(s); return k ? k.codePointAt(0) % M.tokens.buckets : 0; }
  function drawSearch(box, q, scans) {
    var nq = norm(q), human = null, rows = [];
    scans.forEach(function (x) {
      if (x.human) { human = x.human; return; }
      var hits = [], part = [];
      x.s.text.forEach(function (t, j) {
        var n = norm(t);
        if (n === nq) hits.push(j);
        else if (nq && part.length < 5 && n.indexOf(nq) === 0) part.push(j);
      });
      (hits.length ? hits : part).forEach(function (j) { rows.push({ rm: x.rm, p: x.p, j: j, n: x.n, exact: hits.length > 0, s: x.s }); });
    });
    var humanRank = {};
    if (human) {
      Object.keys(human.rms).forEach(function (rm) {
        var h = human.rms[rm];
        h.item.forEach(function (it, k) { if (norm(it) === nq) humanRank[rm] = { human: h.human_rank[k], rank: h.rank[k], n: h.item.length, score: h.score[k] }; });
      });
    }
    add(box, el("h3", null, "Results for " + quoted(q)));
    if (!rows.length) add(box, el("p", { class: "note", id: "token-none" }, "No token matches."));
    else {
      add(box, el("table", { id: "token-table", class: "long" }, el("thead", null, el("tr", null, ["RM", "prompt", "token", "score", "rank", "percentile", "match"].map(function (h, i) {
        return el("th", { class: i >= 3 && i <= 5 ? "num" : null }, h);
      }))), el("tbody", null, rows.map(function (r) {
        var n = r.n, rank = r.s.rank[r.j];
        return el("tr", null, el("td", null, r.rm), el("td", null, r.p), el("td", null, el("span", { class: "tok" }, quoted(r.s.text[r.j]))),
          el("td", { class: "num" }, fmt(r.s.score[r.j])), el("td", { class: "num" }, rank + " / " + n),
          el("td", { class: "num" }, fmt(100 * (1 - (rank - 1) / Math.max(1, n - 1)), 1)), el("td", null, r.exact ? "exact" : "starts with"));
      }))));
    }
    var hr = Object.keys(humanRank);
    if (hr.length) {
      add(box, el("p", { id: "token-human" }, "Human ranking: " + quoted(q) + " is item " + humanRank[hr[0]].human + " of " + humanRank[hr[0]].n + " by human rank; " +
        hr.map(function (rm) { return rm + " ranks it " + humanRank[rm].rank + " (score " + fmt(humanRank[rm].score) + ")"; }).join(", ") + "."));
    }
  }
  function drawHuman(box, h, q) {
    var rms = Object.keys(h.rms);
    if (!rms.length) return;
    var first = h.rms[rms[0]], nq = norm(q);
    var rows = first.item.map(function (it, k) {
      return el("tr", { class: norm(it) === nq ? "rep" : null }, el("td", { class: "num" }, first.human_rank[k]),
        el("td", null, el("a", { href: href(["tokens"], { q: it }), class: "tok" }, quoted(it))),
        rms.map(function (rm) {
          var r = h.rms[rm], kk = r.item.indexOf(it);
          return el("td", { class: "num" }, kk < 0 ? "–" : r.rank[kk] + " (" + fmt(r.score[kk], 2) + ")");
        }));
    });
    add(box, el("p", { class: "note" }, "Each item's human rank (1 = best) beside each RM's rank of it among the items (its reward in brackets)."));
    add(box, el("table", { id: "human-table" }, el("thead", null, el("tr", null, el("th", { class: "num" }, "human rank"), el("th", null, "item"),
      rms.map(function (rm) { return el("th", { class: "num" }, rm + " rank"); }))), el("tbody", null, rows)));
  }

  // ── dispatch ────────────────────────────────────────────────────────────────────────────────────────
  function render() {
    var route = parseRoute();
    var view = clear(document.getElementById("view"));
    if (!route.view) {
      var first = firstAnalysed();
      if (M.findings.length) route = { view: "findings", args: [firstWithFindings()], params: route.params };
      else if (first) route = { view: "flips", args: first, params: route.params };
      else if (explained().length) route = { view: "list", args: [], params: route.params };
      else route = { view: "tokens", args: [], params: route.params };
    }
    var own = route.view === "findings" || route.view === "effect" || route.view === "discovered";
    var ctx = route.view === "tokens" || own || !explained().length ? null : context(route.args);
    header(route, ctx);
    var done;
    try {
      if (route.view === "findings") done = viewFindings(view, route.args[0] || firstWithFindings());
      else if (route.view === "effect") done = viewEffect(view, route.args, route.params);
      else if (route.view === "discovered") done = viewDiscovered(view, route.args);
      else if (route.view === "flips" && ctx) done = viewFlips(view, ctx);
      else if (route.view === "bar" && ctx) done = viewBar(view, ctx, route.args);
      else if (route.view === "list" && ctx) done = viewList(view, ctx, route.params);
      else if (route.view === "cmp" && ctx) {
        add(view, el("p", { class: "note", id: "loading" }, "Loading " + route.args[3] + "…"));
        done = viewComparison(view, ctx, route.args[3], route.params).then(function () {
          var l = document.getElementById("loading");
          if (l) l.remove();
        });
      } else done = viewTokens(view, route.params);
    } catch (err) {
      showError(err);
    }
    Promise.resolve(done).then(function () {
      document.body.setAttribute("data-ready", location.hash);
    }, function (err) {
      var l = document.getElementById("loading");
      if (l) l.remove();
      showError(err);
      document.body.setAttribute("data-ready", location.hash);
    });
  }
  window.addEventListener("hashchange", function () { document.body.removeAttribute("data-ready"); render(); });
  render();
})();
