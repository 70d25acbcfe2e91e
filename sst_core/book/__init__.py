"""The book layer: papermill parameters and the profile ``best`` means per chapter
(:mod:`~sst_core.book.params`), the notebook runner and strict build
(:mod:`~sst_core.book.runner`), and the vendored JavaScript for offline reading
(:mod:`~sst_core.book.vendor`).
"""
