"""Checks for lab 05-positional-encoding (chapter 5)."""
