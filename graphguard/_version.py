"""The package version, read by the CLI and the JSON report."""
__all__ = ["__version__"]
__version__ = "0.1.0"
