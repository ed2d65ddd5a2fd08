"""The catalog snapshot: its schema, the rules that make its rows, writing it and reading it back.

`schema` defines the columns; `records` turns raw Amazon Reviews 2023 records into rows or bad
records (pure); `ingest` reads the files and writes the snapshot (`ecombench ingest`);
`snapshot` loads it for the build, inspect and validate.
"""
