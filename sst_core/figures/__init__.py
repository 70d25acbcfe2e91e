"""The book's figures: each function takes selected records (or rows) and a scale line and only
draws; the selection happens in :mod:`sst_core.reports`.
"""
