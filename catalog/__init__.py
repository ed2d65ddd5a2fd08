"""The catalog snapshot: its schema, the rules that turn raw Amazon Reviews 2023 records into its rows, writing it
(`ecombench ingest`) and reading it back (the build, inspect, validate)."""
