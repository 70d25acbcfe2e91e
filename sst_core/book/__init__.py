"""TODO: book."""
