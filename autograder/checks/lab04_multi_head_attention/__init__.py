"""Checks for lab 04-multi-head-attention (chapter 4)."""
