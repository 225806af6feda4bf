// ShiftStream console: live fragments over server-sent events, confirmations. No build step.
"use strict";

function live(el) {
  // The server renders each fragment; this only swaps it in. EventSource reconnects itself.
  const source = new EventSource(el.dataset.sse);
  source.addEventListener(el.dataset.sseEvent, (ev) => {
    // Keep what the reader opened (a group's consumers) open across the swap.
    const open = [...el.querySelectorAll("details[open]")].map((d) => d.dataset.key);
    el.innerHTML = ev.data;
    open.forEach((key) => {
      const d = el.querySelector(`details[data-key="${CSS.escape(key)}"]`);
      if (d) d.open = true;
    });
  });
  source.onerror = () => el.classList.add("stale");
  source.onopen = () => el.classList.remove("stale");
}

function followJob(el) {
  const source = new EventSource(el.dataset.jobStream);
  if (el.dataset.reloadOnEvent) {
    // A job not accepted yet: its page proper exists from its first event on.
    ["state", "progress", "end"].forEach((kind) =>
      source.addEventListener(kind, () => { source.close(); window.location.reload(); }));
    return;
  }
  const progress = document.getElementById("progress");
  const state = document.getElementById("job-state");
  source.addEventListener("progress", (ev) => {
    progress.innerHTML = ev.data;
    state.textContent = "running";
    state.className = "state running";
  });
  source.addEventListener("state", (ev) => { state.textContent = ev.data; });
  // The end: reload to show the roster, or the failure with its dead letter.
  source.addEventListener("end", () => { source.close(); window.location.reload(); });
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-sse]").forEach(live);
  document.querySelectorAll("[data-job-stream]").forEach(followJob);
  document.querySelectorAll("form[data-confirm]").forEach((form) => {
    form.addEventListener("submit", (ev) => {
      if (!window.confirm(form.dataset.confirm)) ev.preventDefault();
    });
  });
});
