"""The data tables and their loaders: the field table, intents and cues (reviewed TOML beside each loader)."""
