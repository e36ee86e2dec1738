// Dexter's page script: asks, follows a run's event stream, answers its approvals and questions.
// Everything a run sends is set as text, except the answer, which the server made safe HTML.
"use strict";
(function () {
  const csrf = () => document.querySelector('meta[name="csrf-token"]').content;
  const el = (tag, props, ...kids) => {
    const node = document.createElement(tag);
    Object.assign(node, props || {});
    for (const kid of kids) if (kid != null) node.append(kid);
    return node;
  };

  async function post(url, fields) {
    const body = new URLSearchParams(fields);
    const response = await fetch(url, {
      method: "POST", body, credentials: "same-origin",
      headers: { "X-CSRF-Token": csrf(), "Accept": "application/json" },
    });
    let data = {};
    try { data = await response.json(); } catch (e) { /* an empty answer */ }
    if (!response.ok) throw new Error(data.error || response.statusText);
    return data;
  }

  const APPROVALS = { once: "Allow once", run: "Allow for this run", always: "Always allow", deny: "Deny" };

  function follow(section, eventsUrl, runId) {
    const tools = section.querySelector(".tools");
    const prompts = section.querySelector(".prompts");
    const answer = section.querySelector(".answer");
    const after = section.querySelector(".after");
    const cancel = document.getElementById("cancel");
    const rows = new Map();
    const status = document.getElementById("live-status");
    const say = (text) => { if (status) status.textContent = text; };
    section.hidden = false;
    section.setAttribute("aria-busy", "true");
    section.dataset.run = runId;
    if (cancel) {
      cancel.hidden = false;
      cancel.onclick = () => post(`/runs/${runId}/cancel`, {}).catch(showError);
    }
    const note = (text, cls) => tools.append(el("li", { className: cls || "note", textContent: text }));
    const showError = (error) => after.append(el("p", { className: "error", role: "alert", textContent: String(error.message || error) }));

    function row(data) {
      let item = rows.get(data.call_id);
      if (!item) {
        const status = el("span", { className: "state", textContent: "running" });
        const summary = el("summary", {}, el("code", { textContent: data.tool }), " ", status);
        const details = el("details", {}, summary, el("h3", { textContent: "Arguments" }),
          el("pre", { className: "args", textContent: data.args || "" }));
        item = el("li", { className: "tool running" }, details);
        item.status = status;
        item.details = details;
        rows.set(data.call_id, item);
        tools.append(item);
      }
      return item;
    }

    const source = new EventSource(eventsUrl);
    const on = (type, handle) => source.addEventListener(type, (event) => handle(JSON.parse(event.data)));
    // The finished answer (figure marks, citation links) is final: a text update sent in the
    // same burst as it must not overwrite it.
    let answered = false;
    on("answer", (d) => { if (!answered) answer.innerHTML = d.html; });
    on("thinking", (d) => { if (d.text) note(d.text, "thinking"); });
    on("note", (d) => note(d.text));
    on("tool_start", (d) => { row(d); say(`Running ${d.tool}`); });
    on("tool_progress", (d) => { row(d).status.textContent = d.text; });
    on("tool_end", (d) => {
      const item = row(d);
      item.className = "tool done";
      item.status.textContent = `done in ${d.ms} ms` + (d.warning ? ` · ${d.warning}` : "");
      item.details.append(el("h3", { textContent: "Result" }), el("pre", { className: "result", textContent: d.result }));
    });
    on("tool_error", (d) => {
      const item = row(d);
      item.className = "tool failed";
      item.status.textContent = "failed";
      item.details.append(el("h3", { textContent: "Error" }), el("pre", { className: "result", textContent: d.error }));
    });
    on("tool_denied", (d) => {
      const item = row(d);
      item.className = "tool denied";
      item.status.textContent = d.by === "user" ? "denied by you" : `not run: ${d.reason}`;
    });
    on("approval", (d) => {
      const title = el("h3", { id: `approval-${d.id}`, textContent: `Allow ${d.tool}?` });
      const box = el("div", { className: "approval", id: `prompt-${d.id}`, role: "group" }, title,
        el("pre", { textContent: d.command ? `$ ${d.command}` : d.args }));
      box.setAttribute("aria-labelledby", title.id);
      if (d.reason) box.append(el("p", { textContent: d.reason }));
      const buttons = el("div", { className: "row" });
      for (const choice of d.choices) {
        const label = choice === "always" && d.rule ? `Always allow (saves ${d.rule})` : APPROVALS[choice];
        buttons.append(el("button", {
          type: "button", textContent: label, className: choice === "deny" ? "secondary" : "",
          onclick: () => post(`/runs/${runId}/approvals/${d.id}`, { answer: choice }).catch(showError),
        }));
      }
      box.append(buttons);
      prompts.append(box);
      say(`Approval needed: ${d.tool}`);
      buttons.querySelector("button").focus();
    });
    on("approval_settled", (d) => {
      const box = document.getElementById(`prompt-${d.id}`);
      if (box) box.remove();
      note(d.answer === "deny" ? "You denied the call." : "Approved.");
    });
    on("question", (d) => {
      const form = el("form", { className: "question", id: `prompt-${d.id}` });
      const legend = el("legend", { textContent: d.question });
      const set = el("fieldset", {}, legend);
      d.options.forEach((option, index) => {
        const id = `q-${d.id}-${index}`;
        set.append(el("div", {},
          el("input", { type: d.multi ? "checkbox" : "radio", name: "selected", value: option.label, id }),
          el("label", { htmlFor: id, textContent: option.description ? `${option.label}: ${option.description}` : option.label })));
      });
      const textId = `q-${d.id}-text`;
      set.append(el("label", { htmlFor: textId, textContent: d.options.length ? "Or type an answer" : "Your answer" }),
        el("input", { id: textId, name: "text" }));
      const skip = el("button", { type: "button", className: "secondary", textContent: "Skip" });
      form.append(set, el("div", { className: "row" }, el("button", { type: "submit", textContent: "Answer" }), skip));
      const send = (fields) => post(`/runs/${runId}/questions/${d.id}`, fields).catch(showError);
      form.onsubmit = (event) => { event.preventDefault(); send(new FormData(form)); };
      skip.onclick = () => send({ declined: "1" });
      prompts.append(form);
      say(`Dexter asks: ${d.question}`);
      (form.querySelector("input") || form).focus();
    });
    on("question_settled", (d) => { const box = document.getElementById(`prompt-${d.id}`); if (box) box.remove(); });
    on("done", (d) => {
      answered = true;
      answer.innerHTML = d.html;
      say(d.status === "answered" ? "Answer ready." : `Finished: ${d.status}.`);
      if (d.error) showError(new Error(d.error));
      if (d.figures) {
        const p = el("p", { className: "figures", textContent: d.figures.summary });
        if (d.figures.unchecked) p.append(" · ", el("span", { className: "unchecked", textContent: d.figures.unchecked }));
        after.append(p);
      }
      if (d.sources.length) {
        const list = el("ol", { className: "sources" });
        for (const s of d.sources) {
          const item = el("li", { id: s.anchor }, `[${s.id}] `);
          item.append(s.link ? el("a", { href: s.link, textContent: s.label, rel: "noopener noreferrer" }) : s.label);
          list.append(item);
        }
        after.append(el("h3", { textContent: "Sources" }), list);
      }
      if (d.status === "answered" && d.run_id) {
        const exports = el("p", { className: "exports" }, "Export: ");
        [["md", "Markdown"], ["html", "HTML"], ["pdf", "PDF"], ["xlsx", "Excel"]].forEach(([fmt, label], i) => {
          if (i) exports.append(" · ");
          exports.append(el("a", { href: `/sessions/${d.session_id}/runs/${d.run_id}/export.${fmt}`, textContent: label, download: "" }));
        });
        after.append(exports);
      }
      after.append(el("p", { className: "meta", textContent: `${d.status} · ${d.tokens.toLocaleString()} tokens · ${d.seconds} s` }));
      section.dataset.answered = d.status === "answered" ? d.run_id : "";
    });
    on("cancelled", () => { note("Cancelled.", "note stopped"); say("Cancelled."); });
    on("failed", (d) => { showError(new Error(d.error)); say("The run failed."); });
    source.addEventListener("end", () => {
      source.close();
      section.setAttribute("aria-busy", "false");
      section.dataset.finished = "1";
      section.dispatchEvent(new CustomEvent("dexter:end", { bubbles: true }));
      if (cancel) cancel.hidden = true;
    });
  }

  // A finished live run stays on the page as a plain turn when the next question is asked.
  function freshSection(section) {
    if (section.dataset.run) {
      const kept = section.cloneNode(true);
      kept.removeAttribute("id");
      kept.querySelector("h2").removeAttribute("id");
      section.before(kept);
      for (const part of [".tools", ".prompts", ".answer", ".after"]) section.querySelector(part).replaceChildren();
      section.querySelectorAll("aside.evidence").forEach((node) => node.remove());
    }
    return section;
  }

  function init() {
    const section = document.getElementById("live");
    const form = document.getElementById("ask");
    if (section && section.dataset.events) follow(section, section.dataset.events, section.dataset.run);
    if (!form || !section) return;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const fields = new URLSearchParams(new FormData(form));
      const button = form.querySelector('button[type="submit"]');
      const stale = form.querySelector(".error");
      if (stale) stale.remove();
      button.disabled = true;
      try {
        const run = await post(form.action, fields);
        const live = freshSection(section);
        live.querySelector("h2").textContent = fields.get("question");
        history.replaceState(null, "", run.url);
        if (!form.elements.session) {
          form.append(el("input", { type: "hidden", name: "session", value: run.session }));
          form.querySelector('label[for="question"]').textContent = "Ask a follow-up";
        }
        form.elements.question.value = "";
        follow(live, run.events, run.run);
      } catch (error) {
        const shown = form.querySelector(".error") || form.appendChild(el("p", { className: "error", role: "alert" }));
        shown.textContent = String(error.message || error);
      } finally {
        button.disabled = false;
      }
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
