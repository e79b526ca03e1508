"""The results record: the one typed file every later command reads, and its integrity checks."""
