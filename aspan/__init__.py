"""A-SPAN: the snoop agent, its header fields, cache and policies (no I/O)."""
from aspan.fields import AspanFields

__all__ = ["AspanFields"]
