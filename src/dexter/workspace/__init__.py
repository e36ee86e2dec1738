"""The workspace map: a research folder seen as a structure rather than a pile of files.

A walker lists the files worth reading (honouring `.gitignore`), a tagger per kind turns each
into plain data (definitions, references, a short outline), an incremental SQLite index under
`DEXTER_HOME` keeps those tags by content hash, and a graph of which file uses which is ranked
toward a question with personalised PageRank, so an agent reads a budgeted outline instead of
every file. Staleness compares a model's or memo's periods with its ticker's latest 10-K/10-Q.
"""
