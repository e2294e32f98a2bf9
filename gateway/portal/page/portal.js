// The key holder's page (GET /portal). The key lives in this tab only: a variable and
// sessionStorage (so a reload keeps it), sent in the Authorization header to this origin, never
// put in an address, never logged. No inline script: the page's CSP forbids it.
"use strict";
(function () {
  const STORAGE_KEY = "petstore.portal.key";
  const HOUR = 3_600_000;
  const DAY = 24 * HOUR;
  const OUTCOMES = [
    { field: "2xx", label: "2xx", color: "#2e8540" },
    { field: "4xx", label: "4xx", color: "#e0a100" },
    { field: "5xx", label: "5xx", color: "#c62828" },
    { field: "limited", label: "limited (429)", color: "#7b3fb6" },
    { field: "banned", label: "banned (429)", color: "#3b3b3b" },
    { field: "forbidden", label: "forbidden (403)", color: "#1e88c7" },
  ];

  const $ = (id) => document.getElementById(id);
  let key = sessionStorage.getItem(STORAGE_KEY);
  const charts = {};

  function show(el, visible) {
    el.hidden = !visible;
  }

  function showMessage(title, text) {
    $("message-title").textContent = title;
    $("message-text").textContent = text;
    show($("message"), true);
  }

  function hideResults() {
    show($("message"), false);
    show($("overview"), false);
    show($("history"), false);
  }

  /** A JSON answer of this origin, or { status: 0 } when the request did not get one. */
  async function getJson(path) {
    try {
      const res = await fetch(path, { headers: { Authorization: `Bearer ${key}`, Accept: "application/json" }, cache: "no-store" });
      let body = null;
      try {
        body = await res.json();
      } catch {
        body = null;
      }
      return { status: res.status, body, retryAfter: Number(res.headers.get("Retry-After")) || null };
    } catch {
      return { status: 0, body: null, retryAfter: null };
    }
  }

  const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
  const when = (iso) => (iso ? timeFormat.format(new Date(iso)) : "never");
  const count = (n) => Number(n).toLocaleString();
  /** The gateway's message as a sentence ("API key revoked" → "API key revoked."). */
  const sentence = (text) => (text && !/[.!?]$/.test(text) ? `${text}.` : text);
  const inSeconds = (s) => (s >= 7200 ? `${Math.round(s / 3600)} hours` : s >= 120 ? `${Math.ceil(s / 60)} minutes` : `${s} seconds`);

  /** What the holder reads for an answer that is not 200: a title and a sentence. */
  function explain(answer) {
    const message = answer.body && answer.body.message;
    switch (answer.status) {
      case 0:
        return ["The gateway did not answer", "Check your connection and try again."];
      case 401:
        return ["This key is not accepted", `${sentence(message) || "The key is not valid."} A revoked or expired key stays refused; ask for a new one.`];
      case 429:
        // Not the key's quota (this page's requests never count against it): this address's.
        return ["Too many requests from your address", `Looking up keys counts against your network address's own limit, reached for now${answer.retryAfter ? `; retry in ${inSeconds(answer.retryAfter)}` : ""}.`];
      case 503:
        return ["The key service is not answering", `Usage cannot be read right now; try again${answer.retryAfter ? ` in ${inSeconds(answer.retryAfter)}` : " in a minute"}. Your key still works on the API.`];
      default:
        return [`The gateway answered ${answer.status}`, sentence(message) || "Something went wrong; try again later."];
    }
  }

  function showWindow(id, used, limit, remaining) {
    const box = $(id);
    box.querySelector(".figures").textContent = `${count(used)} used of ${count(limit)}, ${count(remaining)} remaining`;
    const meter = box.querySelector("meter");
    meter.max = limit;
    meter.value = Math.min(used, limit);
    meter.high = limit * 0.8;
    meter.optimum = 0;
  }

  /** A notice for a key the API refuses now (banned, or a window used up), else null. */
  function standing(me) {
    if (me.banned) {
      const seconds = Math.max(1, Math.ceil((Date.parse(me.bannedUntil) - Date.now()) / 1000));
      return [
        `This key is banned until ${when(me.bannedUntil)}`,
        `It kept sending requests while over its limit, so the API refuses all of them (429 api_key_banned) for ${inSeconds(seconds)}. Wait until then, and send more slowly after.`,
      ];
    }
    const spent = [me.remaining.minute === 0 && "minute", me.remaining.day === 0 && "day"].filter(Boolean);
    if (spent.length === 0) return null;
    return [
      "This key's limit is reached",
      `Its ${spent.join(" and ")} window is used up: the API refuses its requests (429 rate_limited) until the window has room again. Sending more meanwhile leads to a ban.`,
    ];
  }

  function showOverview(me) {
    const notice = standing(me);
    show($("standing"), Boolean(notice));
    if (notice) [$("standing-title").textContent, $("standing-text").textContent] = notice;
    $("key-id").textContent = me.keyId;
    $("key-name").textContent = me.name || "—";
    $("plan").textContent = me.plan;
    $("limits").textContent = `${count(me.limits.perMinute)} requests a minute, ${count(me.limits.perDay)} a day`;
    $("scopes").textContent = (me.scopes || []).join(", ") || "—";
    const banned = $("banned");
    banned.textContent = me.banned ? `yes, until ${when(me.bannedUntil)}` : "no";
    banned.className = me.banned ? "banned-yes" : "";
    $("last-used").textContent = when(me.lastUsedAt);
    showWindow("window-minute", me.used.minute, me.limits.perMinute, me.remaining.minute);
    showWindow("window-day", me.used.day, me.limits.perDay, me.remaining.day);
    show($("overview"), true);
  }

  /** Bucket starts from `first` every `step` ms, `n` of them, with each outcome's count (0 where no bucket). */
  function series(buckets, first, step, n) {
    const at = new Map(buckets.map((b) => [Date.parse(b.start), b]));
    const starts = Array.from({ length: n }, (_, i) => first + i * step);
    return {
      starts,
      counts: OUTCOMES.map((o) => starts.map((s) => Number((at.get(s) || {})[o.field] || 0))),
      total: buckets.reduce((sum, b) => sum + Number(b.total || 0), 0),
    };
  }

  function drawChart(canvasId, emptyId, data, label) {
    if (charts[canvasId]) charts[canvasId].destroy();
    delete charts[canvasId];
    const canvas = $(canvasId);
    show($(emptyId), data.total === 0);
    show(canvas.parentElement, data.total > 0);
    if (data.total === 0) return;
    charts[canvasId] = new Chart(canvas, {
      type: "bar",
      data: {
        labels: data.starts.map(label),
        datasets: OUTCOMES.map((o, i) => ({ label: o.label, data: data.counts[i], backgroundColor: o.color, stack: "requests" })),
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        scales: {
          x: { stacked: true, ticks: { maxRotation: 0, autoSkip: true, maxTicksLimit: 8 } },
          y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } },
        },
        plugins: { legend: { position: "bottom", labels: { boxWidth: 12 } } },
      },
    });
  }

  const hourLabel = new Intl.DateTimeFormat(undefined, { weekday: "short", hour: "2-digit", minute: "2-digit" });
  const dayLabel = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", timeZone: "UTC" });

  /** Whether an answer refuses the key (invalid, revoked) or the address (over its limit): nothing else will be answered either. */
  const refusesKey = (answer) => answer.status === 0 || answer.status === 401 || answer.status === 429;

  function showHistory(hours, days) {
    const failed = [hours, days].find((a) => a.status !== 200);
    show($("history"), true);
    show($("history-error"), Boolean(failed));
    for (const id of ["hours-block", "days-block"]) show($(id), !failed);
    if (failed) {
      const [title, text] = explain(failed);
      $("history-error").textContent = `${title}: ${text}`;
      return;
    }
    const now = Date.now();
    const thisHour = Math.floor(now / HOUR) * HOUR;
    const today = Math.floor(now / DAY) * DAY;
    drawChart("hours-chart", "hours-empty", series(hours.body.buckets, thisHour - 47 * HOUR, HOUR, 48), (s) => hourLabel.format(new Date(s)));
    drawChart("days-chart", "days-empty", series(days.body.buckets, today - 29 * DAY, DAY, 30), (s) => dayLabel.format(new Date(s)));
  }

  /**
   * The two histories first, together, then /v1/me: each of the page's requests counts in the
   * history (reported within about a second), so a key never used before still shows an empty
   * one. None counts against the key's quota: a banned or spent key gets the whole page.
   */
  async function load() {
    const refresh = $("refresh");
    refresh.disabled = true;
    try {
      const [hours, days] = await Promise.all([getJson("/v1/me/usage?granularity=hour"), getJson("/v1/me/usage?granularity=day")]);
      const me = refusesKey(hours) ? hours : await getJson("/v1/me");
      hideResults();
      show($("key-actions"), true);
      if (me.status !== 200) {
        const [title, text] = explain(me);
        showMessage(title, text);
        return;
      }
      showOverview(me.body);
      showHistory(hours, days);
    } finally {
      refresh.disabled = false;
    }
  }

  function useKey(value) {
    key = value.trim();
    sessionStorage.setItem(STORAGE_KEY, key);
    $("key-input").value = "";
    return load();
  }

  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const value = $("key-input").value;
    if (value.trim()) void useKey(value);
  });
  $("refresh").addEventListener("click", () => void load());
  $("forget").addEventListener("click", () => {
    key = null;
    sessionStorage.removeItem(STORAGE_KEY);
    hideResults();
    show($("key-actions"), false);
    for (const id of Object.keys(charts)) charts[id].destroy();
  });

  // Self-serve sign-up, when the gateway has it open (SIGNUP=open).
  if (document.body.dataset.signup === "open") {
    show($("signup"), true);
    let issued = null;
    $("signup-form").addEventListener("submit", async (event) => {
      event.preventDefault();
      const error = $("signup-error");
      show(error, false);
      const button = event.target.querySelector("button");
      button.disabled = true;
      let answer;
      try {
        const res = await fetch("/portal/signup", {
          method: "POST",
          headers: { "Content-Type": "application/json", Accept: "application/json" },
          body: JSON.stringify({ name: $("signup-name").value, email: $("signup-email").value }),
          cache: "no-store",
        });
        answer = { status: res.status, body: await res.json().catch(() => null), retryAfter: Number(res.headers.get("Retry-After")) || null };
      } catch {
        answer = { status: 0, body: null, retryAfter: null };
      } finally {
        button.disabled = false;
      }
      if (answer.status === 201 && answer.body && answer.body.key) {
        issued = answer.body.key;
        $("new-key").textContent = issued;
        $("copy-status").textContent = "";
        show($("signup-form"), false);
        show($("signup-result"), true);
        return;
      }
      if (answer.status === 400 && answer.body && answer.body.details) {
        error.textContent = answer.body.details.map((d) => `${d.field === "email" ? "E-mail" : d.field === "name" ? "Name" : d.field} ${d.message}.`).join(" ");
      } else if (answer.status === 429) {
        // The day's sign-ups of the address (until UTC midnight), or its requests of the minute.
        const later = answer.retryAfter ? ` in ${inSeconds(answer.retryAfter)}` : " later";
        error.textContent = answer.retryAfter > 300 ? `Too many sign-ups from your address today; try again${later}.` : `Too many requests from your address; try again${later}.`;
      } else {
        const [title, text] = explain(answer);
        error.textContent = `${title}: ${text}`;
      }
      show(error, true);
    });
    $("copy-key").addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(issued);
        $("copy-status").textContent = "Copied.";
      } catch {
        // No clipboard permission (an http: page, an old browser): select it for Ctrl+C instead.
        const range = document.createRange();
        range.selectNodeContents($("new-key"));
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        $("copy-status").textContent = "Selected: press Ctrl+C (⌘C) to copy.";
      }
    });
    $("use-key").addEventListener("click", () => {
      if (issued) void useKey(issued);
    });
  }

  if (key) void load();
})();
