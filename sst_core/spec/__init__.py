"""TODO: spec."""
