"""TODO: store."""
