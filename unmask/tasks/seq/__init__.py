"""Your own sequences (text prompts and answers, DNA, a protein family): read, lay out, fill, score.

:mod:`~unmask.tasks.seq.data` reads FASTA, JSONL or plain text; :mod:`~unmask.tasks.seq.codec` turns
text into the model's ids (its own tokenizer, or a given alphabet); :mod:`~unmask.tasks.seq.layout`
marks the positions to fill (mask characters, spans, or tokens to generate after a prompt);
:mod:`~unmask.tasks.seq.task` decodes them length by length and scores them; :mod:`~unmask.tasks.seq.pll`
scores fills without targets by pseudo-log-likelihood.
"""
