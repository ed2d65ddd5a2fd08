"""The agent sandbox of the paper (reference §11).

Ten tools over a catalog snapshot, reference agents, the grader (reference §12, with its §15.23-28
bugs fixed) and the build's construction check.

Modules: `catalog` (the snapshot as SQLite FTS5 + row views), `tools` (one episode's tools and their
OpenAI function schemas), `agents` (oracle, null, LLM), `grader` (code checkers first, an LLM judge only
for what code cannot decide), `check` (the build's oracle gate), `trajectory` (JSONL records).
"""
