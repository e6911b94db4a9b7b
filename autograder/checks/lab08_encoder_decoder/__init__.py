"""Checks for lab 08-encoder-decoder (chapter 8): the model, greedy decoding, the loss and training."""
