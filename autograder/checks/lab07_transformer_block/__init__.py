"""Checks for lab 07-transformer-block (chapter 7): the sublayers, then the encoder and decoder layers."""
