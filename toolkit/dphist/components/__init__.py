"""Component interfaces (SORTaki's four slots) and the core's built-ins."""
from .base import KINDS, Component, Context, Finalizer, Initializer, Partitioner, ReferenceCalibration, Sorter

__all__ = ["KINDS", "Component", "Context", "Finalizer", "Initializer", "Partitioner", "ReferenceCalibration", "Sorter"]
