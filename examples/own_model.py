"""Your own torch module as a denoiser: four members, and every policy, MI tool and evaluator works with it.

    python examples/own_model.py

A :class:`unmask.Denoiser` is anything with ``vocab_size``, ``mask_id``, ``device`` and
``__call__(tokens) -> DenoiserOutput(logits, hidden)``. The network below is untrained (random
weights), so its answers are noise; what matters is the wiring, which is the same for a trained one.
"""

# --8<-- [start:own-model]
import torch

import unmask


class MyDenoiser(torch.nn.Module):
    def __init__(self, vocab_size: int = 10, width: int = 32):
        super().__init__()
        self.vocab_size, self.mask_id = vocab_size, vocab_size  # the mask id may lie outside range(V)
        self.embed = torch.nn.Embedding(vocab_size + 1, width)
        self.body = torch.nn.TransformerEncoderLayer(width, nhead=4, batch_first=True)
        self.head = torch.nn.Linear(width, vocab_size)
        self.device = torch.device("cpu")

    def forward(self, tokens):  # (B, L) ids -> logits (B, L, V) and hidden states (B, L, D)
        hidden = self.body(self.embed(tokens))
        return unmask.DenoiserOutput(logits=self.head(hidden), hidden=hidden)


model = MyDenoiser().eval()
tokens = torch.full((4, 16), model.mask_id)  # four sequences of 16 positions, all masked
result = unmask.decode(model, tokens, unmask.build_policy("topk:k=4"))
print(result.tokens[0].tolist(), "forward passes:", result.nfe.tolist())
# --8<-- [end:own-model]
