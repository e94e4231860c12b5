"""Placeholder: filled in by the event-family work."""
