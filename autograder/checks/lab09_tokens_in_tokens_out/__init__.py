"""Checks for lab 09-tokens-in-tokens-out (chapter 9): byte-pair encoding, then generation."""
