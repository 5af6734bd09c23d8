"""Stochastic simulation of evaluation scores: margins, copulas, fitted models and designs.

Modules are imported by their full path (``irsim.simulate.<module>``); this package file
re-exports nothing, so that each generator piece stays independent.
"""
