"""Checks for lab 02-self-attention (chapter 2)."""
