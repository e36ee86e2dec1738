"""MCP both ways: Dexter's data calls and research served to MCP hosts, and MCP servers' tools
offered to Dexter's agents. Everything here imports the `mcp` SDK lazily or is imported lazily."""
