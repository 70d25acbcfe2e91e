"""Theory of the two papers: symbolic derivations and the numerics they rest on.

- ``memory``: Paper 2's memory function, Vandermonde projection, readout gradient, S4D
  initialisations, dense S4 with the same spectrum, HiPPO-LegS, and the chapter's run
  functions;
- ``memory_sym``: the SymPy derivations of that chapter, each with a numeric twin;
- ``configs``: the chapter's experiment configs and grids.
"""
