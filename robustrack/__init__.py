"""robustrack: robust tracking control of constrained mechanical systems."""
__version__ = "0.1.0"
