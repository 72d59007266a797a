"""ffb's version, in a module of its own: what reports it imports no more than this."""
__version__ = "0.1.0"
