"""TODO: bench."""
