"""Runnable benchmarks that print their figures (see benchmarks/README.md)."""
