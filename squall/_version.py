"""squall's version, in a module of its own: any layer reads it without the package's facade."""

__version__ = "0.1.0"
