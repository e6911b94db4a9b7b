"""Checks for lab 01-rnn-limits (chapter 1)."""
