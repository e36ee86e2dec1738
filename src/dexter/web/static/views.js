// Beside a streamed answer, once its run is over and recorded: the run's statement tables and
// charts, as the server rendered them (dexter.web.views.sources). Sessions reopened later have
// them in the page already.
"use strict";
document.addEventListener("dexter:end", async (event) => {
  const section = event.target;
  const run = section.dataset.answered;
  if (!run || section.querySelector("aside.evidence")) return;
  try {
    const response = await fetch(`/evidence/${encodeURIComponent(run)}`, { credentials: "same-origin" });
    if (!response.ok) return;
    const html = await response.text();
    if (!html.trim()) return;
    section.querySelector(".after").insertAdjacentHTML("afterend", html);
  } catch (error) { /* the tables are extra; the answer stands without them */ }
});
