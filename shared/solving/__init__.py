"""Solving a request: picking the implementation and scoring its roster."""
