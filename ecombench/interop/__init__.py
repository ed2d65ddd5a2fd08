"""Conversational-recommendation interop: exports the CRS tools load, dialogues read back, rankings.

`usersimcrs` writes a split as UserSimCRS input (needs, items, domain, interaction model, seed dialogues,
config) and `information_need` loads those needs as UserSimCRS does; `dialoguekit` writes a run's
trajectories as DialogueKit dialogues and `dialogue_import` reads dialogue files (ours, UserSimCRS's,
CRSArena-Dial's) back as trajectories for `grade`; `slots` maps requirements to slots; `arena` ranks
graded runs or vote tables. All read published files (tasks.jsonl, products.parquet, trajectory
JSONL), never the build's internals; `extra` checks the optional crs extra they need.
"""
