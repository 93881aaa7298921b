// refresher dashboard. Plain JavaScript, no build step. The API token is
// kept in this tab's sessionStorage only and sent as a Bearer header by
// fetch(); there are no cookies.
"use strict";
(function () {
  const KEY = "refresher-api-token";
  const token = () => sessionStorage.getItem(KEY) || "";
  const flash = (msg, ok) => {
    const f = document.getElementById("flash");
    f.textContent = msg;
    f.className = ok ? "ok" : "fail";
  };
  const showTokenState = () => {
    const s = document.getElementById("token-state");
    if (s) s.textContent = token() ? "token set for this tab" : "no token: actions are refused";
  };

  async function post(url, body) {
    const headers = { "Content-Type": "application/json" };
    if (token()) headers["Authorization"] = "Bearer " + token();
    const resp = await fetch(url, { method: "POST", headers, body: JSON.stringify(body || {}), credentials: "omit" });
    let data = {};
    try { data = await resp.json(); } catch (e) { data = { error: "the server answered " + resp.status }; }
    if (!resp.ok) throw new Error(data.error || ("the server answered " + resp.status));
    return data;
  }

  // Replace <main> with a fresh copy of this page, unless the user is typing in it.
  async function refreshMain() {
    const main = document.getElementById("main");
    if (main.contains(document.activeElement) && document.activeElement.tagName === "INPUT") return;
    // same-origin: a page read with HTTP Basic (reads off loopback) needs it
    // again; actions never send it (see post).
    const resp = await fetch(location.href, { credentials: "same-origin" });
    if (!resp.ok) return;
    const doc = new DOMParser().parseFromString(await resp.text(), "text/html");
    const fresh = doc.getElementById("main");
    if (fresh) main.innerHTML = fresh.innerHTML;
  }

  document.addEventListener("DOMContentLoaded", () => {
    const form = document.getElementById("token-form");
    const input = document.getElementById("token");
    if (form && input) {
      form.addEventListener("submit", (e) => {
        e.preventDefault();
        if (input.value.trim()) sessionStorage.setItem(KEY, input.value.trim());
        input.value = "";
        showTokenState();
      });
      document.getElementById("token-forget").addEventListener("click", () => { sessionStorage.removeItem(KEY); showTokenState(); });
      showTokenState();
    }
    const main = document.getElementById("main");
    const every = Number(main.dataset.refresh || 0);
    if (every > 0) setInterval(() => refreshMain().catch(() => {}), every * 1000);

    // Action buttons (delegated: <main> may be replaced).
    document.addEventListener("click", async (e) => {
      const b = e.target.closest("button.action");
      if (!b) return;
      if (b.dataset.confirm && !confirm(b.dataset.confirm)) return;
      b.disabled = true;
      try {
        const data = await post(b.dataset.url, b.dataset.body ? JSON.parse(b.dataset.body) : {});
        let msg = b.dataset.label + ": done";
        if (data.note) msg = b.dataset.label + ": " + data.note;
        if (data.done !== undefined) msg = b.dataset.label + ": " + data.done + " done";
        flash(msg, true);
        await refreshMain();
      } catch (err) {
        flash(b.dataset.label + " refused: " + err.message, false);
      } finally {
        b.disabled = false;
      }
    });

    // Pause and resume forms (delegated: <main> may be replaced): the note
    // field, when there is one, is sent as {"note": ...}.
    document.addEventListener("submit", async (e) => {
      const f = e.target.closest("form.pause-form");
      if (!f) return;
      e.preventDefault();
      const b = f.querySelector("button[type=submit]");
      b.disabled = true;
      try {
        const data = await post(f.dataset.url, { note: f.note ? f.note.value.trim() : "" });
        flash(f.dataset.label + ": " + (data.note || "done"), true);
        await refreshMain();
      } catch (err) {
        flash(f.dataset.label + " refused: " + err.message, false);
        b.disabled = false;
      }
    });

    // Bulk re-enable: a dry run first, then an explicit confirmation.
    const bulk = document.getElementById("bulk-form");
    if (bulk) {
      const out = document.getElementById("bulk-preview");
      const req = () => ({ reason_like: bulk.reason_like.value, disabled_since: bulk.disabled_since.value.trim() });
      bulk.addEventListener("submit", async (e) => {
        e.preventDefault();
        out.textContent = "";
        try {
          const r = await post(bulk.dataset.url, Object.assign(req(), { dry_run: true }));
          const h = document.createElement("div");
          const p = document.createElement("p");
          p.id = "bulk-count";
          p.textContent = "Dry run: " + r.matched + " disabled model(s) match. Nothing was changed.";
          h.appendChild(p);
          if (r.sample.length) {
            const ul = document.createElement("ul");
            ul.className = "sample";
            for (const m of r.sample) {
              const li = document.createElement("li");
              li.className = "reason";
              li.textContent = m.uid + " — " + m.disabled_reason + " (since " + m.disabled_until_update + ")";
              ul.appendChild(li);
            }
            if (r.matched > r.sample.length) {
              const li = document.createElement("li");
              li.textContent = "… and " + (r.matched - r.sample.length) + " more";
              ul.appendChild(li);
            }
            h.appendChild(ul);
            const c = document.createElement("button");
            c.type = "button";
            c.id = "bulk-confirm";
            c.className = "primary";
            c.textContent = "Re-enable these " + r.matched + " model(s)";
            const sent = req();
            c.addEventListener("click", async () => {
              c.disabled = true;
              try {
                const done = await post(bulk.dataset.url, Object.assign(sent, { dry_run: false }));
                out.innerHTML = "";
                const d = document.createElement("p");
                d.id = "bulk-done";
                d.textContent = "Re-enabled " + done.enabled + " model(s); they are due now.";
                out.appendChild(d);
                flash("bulk re-enable: " + done.enabled + " model(s) enabled", true);
              } catch (err) {
                c.disabled = false;
                flash("bulk re-enable refused: " + err.message, false);
              }
            });
            h.appendChild(c);
          }
          out.appendChild(h);
        } catch (err) {
          flash("dry run refused: " + err.message, false);
        }
      });
    }
  });
})();
