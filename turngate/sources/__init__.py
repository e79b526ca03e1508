"""The source layer: the row schema and where rows come from (a JSONL file, an orq.ai dataset)."""
