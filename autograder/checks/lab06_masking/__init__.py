"""Checks for lab 06-masking (chapter 6): the masks and masked attention, and the leak test."""
