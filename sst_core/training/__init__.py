"""TODO: training."""
