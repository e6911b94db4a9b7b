"""PyTorch's own modules holding the reference's weights, used as oracles: the encoder-decoder on
``nn.Transformer`` (``baseline``, for the benchmarks and the training tests) and the conversions of
our attention and layers, and of our masks, into PyTorch's (``interop``, for the checks, the tests
and the book).

The teaching path (``autograder.reference``) imports nothing from here; what is here builds on it.
"""
