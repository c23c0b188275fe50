// packsolve dashboard: live parts poll their fragment every 2 s; a 503 page retries by itself.
"use strict";
(function () {
  const EVERY_MS = 2000;
  function poll(box) {
    const url = box.dataset.live;
    let timer = null;
    async function tick() {
      try {
        const r = await fetch(url, { headers: { "X-Requested-With": "fetch" }, cache: "no-store" });
        if (r.ok) {
          box.innerHTML = await r.text();
          const done = box.querySelector("[data-done='1']");
          if (done && box.dataset.reloadWhenDone) { window.location.reload(); return; }
          if (!box.dataset.keep && !box.querySelector("[data-done='0']") && url.indexOf("/live/runs") === 0
              && !box.querySelector("tr.state-running, tr.state-sending, tr.state-unsent")) { return; }
        }
      } catch (e) { /* the server restarted or the network blinked: try again next tick */ }
      timer = setTimeout(tick, EVERY_MS);
    }
    timer = setTimeout(tick, EVERY_MS);
  }
  document.querySelectorAll("[data-live]").forEach(poll);
  const retry = document.querySelector("[data-retry]");
  if (retry) { setTimeout(function () { window.location.reload(); }, 1000 * Number(retry.dataset.retry)); }
})();
