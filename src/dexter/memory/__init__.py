"""Long-term memory: markdown files as the source of truth, a SQLite index beside them.

`embeddings` turns text into unit vectors (local int8 MiniLM by default, so memory works with no
key and no network; OpenAI, Gemini or Ollama when configured; keyword-only when none loads), and
`chunking` cuts markdown into overlapping, paragraph-aligned chunks with 1-based line ranges.
"""
