"""The rules of the pipeline's stages (sampling, features, split, rubrics, text, verbalisation) and what they share.

Shared: the field, intent and cue tables, seeding (`hashing`), the LLM client and the user errors.
"""
