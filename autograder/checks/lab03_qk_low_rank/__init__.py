"""Checks for lab 03-qk-low-rank (chapter 3)."""
