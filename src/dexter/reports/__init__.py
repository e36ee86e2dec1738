"""Research reports from stored runs: a plain report model, charts, and Markdown, HTML, PDF and
XLSX renderers. Built from what a run recorded; no model call is needed."""
