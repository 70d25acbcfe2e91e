"""TODO: experiments."""
