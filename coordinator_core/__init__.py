"""offsetops coordinator core: decode ``__consumer_offsets`` and rebuild the group coordinator's cache.

Pure Python. Imports neither Spark nor Dagster; everything else in offsetops builds on it.
"""

__version__ = "0.1.0"
