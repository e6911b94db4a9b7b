"""Training the reference encoder-decoder (chapter 8 and the appendix "Training that survives the
real world"): the loop (``train``), its settings (``train_config``) and the course's recipe of them
(``recipe``), one optimizer step (``step``), eager, compiled or replayed as a CUDA graph
(``captured``), the batches (``stream``), mixed precision (``precision``), data-parallel processes
(``distributed``), checkpoints that resume exactly (``checkpoint``) and scoring by greedy decoding
(``evaluation``).

The teaching path (``autograder.reference``) imports nothing from here; what is here builds on it.
"""
