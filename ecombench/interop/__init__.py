"""Exports of published splits and agent runs into the formats conversational-recommendation tools read.

`ecombench.interop.usersimcrs` writes a split as UserSimCRS information needs, item collection and domain;
`ecombench.interop.dialoguekit` writes a run's trajectories as DialogueKit dialogues. Both read published
files (tasks.jsonl, products.parquet, trajectory JSONL), never the build's internals.
"""
