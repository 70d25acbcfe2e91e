"""TODO: analysis."""
