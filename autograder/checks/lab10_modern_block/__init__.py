"""Checks for lab 10-modern-block (chapter 10): RoPE, RMSNorm, SwiGLU, the KV cache, tiles and perplexity."""
