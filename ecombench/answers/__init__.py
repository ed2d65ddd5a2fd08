"""Catalog-wide answers: which products satisfy rubrics (the index, partitioned passes, normalised text)."""
