"""The scorer layer: the typed Case, the scorer registry, the generic scorers and the judges."""
