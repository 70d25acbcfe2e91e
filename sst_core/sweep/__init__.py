"""TODO: sweep."""
