"""sst_core: tasks, models, diagnostics, theory and training for the sst book.

Notebooks import from here and never redefine what lives here.
"""
__version__ = "0.1.0"
