"""The decode loop refuses what it cannot decode, in one line: a denoiser's malformed output (logits of
another shape or width, NaN or +inf, a masked position with no possible token, hidden states of
another shape) and malformed input (ids outside the vocabulary, seeds of another length, ids of
another rank or type). What is legitimate (a -inf entry: a token the model rules out) still decodes.

Each test names the planted bug it is there to catch.
"""

from __future__ import annotations

import pytest
import torch

from unmask.decode import TokenRule, decode, decode_steps, parse_policy
from unmask.denoiser import DenoiserOutput
from unmask.errors import UnmaskError

B, L, V = 4, 16, 4  # the tiny model of conftest: mask id V, outside the vocabulary


class Bent:
    """``model`` with each forward pass's ``(logits, hidden)`` passed through ``bend``."""

    def __init__(self, model, bend) -> None:
        self.model, self.bend = model, bend
        self.vocab_size, self.mask_id, self.device = model.vocab_size, model.mask_id, model.device

    def __call__(self, tokens: torch.Tensor):
        logits, hidden = self.model(tokens)
        return self.bend(logits.clone(), hidden.clone())


def with_nan(logits, hidden):
    logits[:, :, 1] = float("nan")  # (B, L, V): one token's logit at every position
    return DenoiserOutput(logits, hidden)


def at(value, position: int, column: slice | int = slice(None)):
    def bend(logits, hidden):
        logits[:, position, column] = value
        return DenoiserOutput(logits, hidden)

    return bend


BAD_OUTPUTS = {
    # name: (bend, message), each a bug of a real adapter the loop used to swallow
    "V + 1 columns": (lambda lo, h: (torch.cat([lo, lo[..., :1]], -1), h), r"logits .* shape \(4, 16, 5\).*\(4, 16, 4\)"),
    "V - 1 columns": (lambda lo, h: (lo[..., :-1], h), r"expected floats \(B, L, V\) = \(4, 16, 4\)"),
    "a row missing": (lambda lo, h: (lo[1:], h[1:]), r"shape \(3, 16, 4\)"),
    "a position missing": (lambda lo, h: (lo[:, 1:], h[:, 1:]), r"shape \(4, 15, 4\)"),
    "2-D logits": (lambda lo, h: (lo.flatten(1), h), r"shape \(4, 64\)"),
    "integer logits": (lambda lo, h: (lo.long(), h), r"torch.int64"),
    "NaN in one column": (with_nan, r"NaN at sequence 0, position 0"),
    "+inf at one position": (at(float("inf"), 5, 2), r"\+inf at sequence 0, position 5"),
    "all -inf at a masked position": (at(float("-inf"), 15), r"only -inf .* position 15"),
    "hidden of another length": (lambda lo, h: (lo, h[:, :-1]), r"hidden states of shape \(4, 15, 32\)"),
    "hidden without a width": (lambda lo, h: (lo, h[..., 0]), r"hidden states of shape \(4, 16\)"),
    "one tensor, not a pair": (lambda lo, h: lo, r"returned Tensor, not a pair"),
    "None for hidden": (lambda lo, h: (lo, None), r"not a pair of tensors"),
}


@pytest.mark.parametrize("name", sorted(BAD_OUTPUTS))
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_a_malformed_output_is_refused_in_one_line(make_model, masked_batch, name, temperature):
    # Bugs caught: each output above decoded into something (NaN logits gave all zeros, V + 1 columns
    # could reveal an id outside the vocabulary, shorter rows broadcast) instead of one UnmaskError.
    bend, message = BAD_OUTPUTS[name]
    tokens = masked_batch(B, L, V, seed=1)
    tokens[:, -1] = V  # every row runs the first pass: the shapes above are of the whole batch
    with pytest.raises(UnmaskError, match=message) as e:
        decode(Bent(make_model(seq_len=L, vocab=V), bend), tokens, parse_policy("topk:k=2"), TokenRule(temperature))
    assert "\n" not in str(e.value)


def test_nan_or_inf_at_a_given_position_is_refused_too(make_model, masked_batch):
    # Bug caught: finiteness checked only where positions are masked; a NaN anywhere means a broken model.
    tokens = masked_batch(B, L, V, seed=1)
    tokens[:, 0] = 2  # position 0 given in every row
    for value in (float("nan"), float("inf")):
        with pytest.raises(UnmaskError, match="position 0"):
            decode(Bent(make_model(seq_len=L, vocab=V), at(value, 0, 1)), tokens, parse_policy("sequential"))


def test_minus_inf_entries_and_a_given_dead_position_are_legitimate(make_model, masked_batch):
    # Bugs caught: a check that refuses any -inf (a model that rules tokens out, as never_mask itself does),
    # or an all -inf row at a position that is not generated; and a token rule that picks a ruled-out token.
    model = make_model(seq_len=L, vocab=V)
    tokens = masked_batch(B, L, V, seed=1)
    tokens[:, 3] = 1  # given everywhere: its logits do not matter

    def bend(logits, hidden):
        logits[..., 0] = float("-inf")  # token 0 ruled out everywhere
        logits[:, 3] = float("-inf")
        return DenoiserOutput(logits, hidden)

    for temperature in (0.0, 1.0):
        out = decode(Bent(model, bend), tokens, parse_policy("topk:k=3"), TokenRule(temperature))
        generated = tokens == model.mask_id
        assert (out.tokens[generated] != 0).all() and (out.tokens[generated] < V).all()
        assert torch.equal(out.tokens[~generated], tokens[~generated])


def test_the_mask_column_is_ruled_out_before_the_check(make_model):
    # Bug caught: checking before never_mask: a model whose only finite logit is the mask id's (mask id
    # inside the vocabulary) would pass, and decoding would then have nothing left to choose.
    model = make_model(seq_len=L, vocab=V)

    class MaskInside(Bent):
        def __init__(self) -> None:
            super().__init__(model, None)
            self.mask_id = 3  # inside range(V)

        def __call__(self, tokens):
            logits, hidden = model(torch.where(tokens == 3, V, tokens))
            logits[..., :3] = float("-inf")  # every mass on the mask id
            return DenoiserOutput(logits, hidden)

    with pytest.raises(UnmaskError, match="only -inf"):
        decode(MaskInside(), torch.full((2, L), 3), parse_policy("sequential"))


@pytest.mark.parametrize("bad_id", [V + 1, 99, -1])
def test_ids_outside_the_vocabulary_are_refused(make_model, masked_batch, bad_id):
    # Bug caught: an id past the model's inputs (0..max(V - 1, mask id)) taken as given (NFE 0, silent);
    # -1 would even index the embedding from its end.
    tokens = masked_batch(B, L, V, seed=1)
    tokens[2, 7] = bad_id
    with pytest.raises(UnmaskError, match=rf"token id {bad_id} \(sequence 2, position 7\) is outside the model's inputs 0\.\.4"):
        decode(make_model(seq_len=L, vocab=V), tokens, parse_policy("sequential"))


def test_input_only_ids_below_the_mask_are_given_tokens():
    # Bug caught: the protein task's end marker (id V, mask V + 1: an input the model embeds but never
    # predicts) refused as outside the vocabulary, which broke every protein decode.
    from unmask.model import ModelConfig, TransformerDenoiser

    torch.manual_seed(0)
    model = TransformerDenoiser(ModelConfig(vocab_size=V, mask_id=V + 1, seq_len=L, d_model=16, n_layers=1, n_heads=2,
                                            d_ff=32)).eval()
    tokens = torch.full((2, L), V + 1)
    tokens[:, L - 3 :] = V  # the end marker after 13 positions to fill
    out = decode(model, tokens, parse_policy("sequential"))
    assert torch.equal(out.tokens[:, L - 3 :], tokens[:, L - 3 :]) and (out.tokens[:, : L - 3] < V).all()
    assert out.nfe.tolist() == [L - 3, L - 3]


@pytest.mark.parametrize("tokens,message", [
    (torch.full((L,), V), r"shape \(B, L\), got torch.int64 of shape \(16,\)"),
    (torch.full((1, 2, L), V), r"of shape \(1, 2, 16\)"),
    (torch.full((2, L), float(V)), r"torch.float32"),
    (torch.ones(2, L, dtype=torch.bool), r"torch.bool"),
])
def test_ids_of_another_rank_or_type_are_refused(make_model, tokens, message):
    # Bug caught: float ids compared to the mask id and fed to an embedding; 1-D ids unpacked as (B, L).
    with pytest.raises(UnmaskError, match=message):
        decode(make_model(seq_len=L, vocab=V), tokens, parse_policy("sequential"))


@pytest.mark.parametrize("seeds", [torch.arange(B - 1), torch.arange(B + 1), torch.arange(B)[None], torch.tensor(3),
                                   torch.arange(B, dtype=torch.float32), [0, 1, 2, 3]])
def test_seeds_must_be_one_integer_per_sequence(make_model, masked_batch, seeds):
    # Bug caught: seeds of another length accepted (indexed by row: a short tensor raised an IndexError
    # deep in the loop or, broadcast, gave every row the same randomness); float seeds truncated.
    with pytest.raises(UnmaskError, match=r"seeds must be integers of shape \(B,\) = \(4,\), one per sequence"):
        decode(make_model(seq_len=L, vocab=V), masked_batch(B, L, V), parse_policy("random:steps=3"), TokenRule(1.0), seeds)


def test_the_step_generator_checks_too(make_model, masked_batch):
    # Bug caught: checks only in decode(), not in the generator a learned order policy trains through.
    steps = decode_steps(Bent(make_model(seq_len=L, vocab=V), with_nan), masked_batch(B, L, V), parse_policy("sequential"))
    with pytest.raises(UnmaskError, match="NaN"):
        next(steps)


def test_a_well_formed_decode_is_unchanged(make_model, masked_batch):
    # Bug caught: a check that changes what it checks (never_mask twice, a cast, a copy on another device).
    model = make_model(seq_len=L, vocab=V)
    tokens = masked_batch(B, L, V, seed=4)
    policy = parse_policy("top_prob:steps=5")
    a = decode(model, tokens, policy, TokenRule(1.0), torch.arange(B))
    b = decode(Bent(model, lambda lo, h: (lo, h)), tokens, policy, TokenRule(1.0), torch.arange(B).int())
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.nfe, b.nfe) and torch.equal(a.reveal_step, b.reveal_step)


def test_an_infinite_temperature_is_refused():
    # Bug caught: TokenRule(inf) dividing the -inf logits of ruled-out tokens by inf: NaN probabilities.
    with pytest.raises(UnmaskError, match="temperature must be finite"):
        TokenRule(float("inf"))
