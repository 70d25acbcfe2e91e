"""TODO: figures."""
