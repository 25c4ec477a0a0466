"""A Hugging Face masked LM from a local folder, decoded by unmask's policies.

    python examples/huggingface.py [MODEL_DIR]

With no argument the script first makes a tiny *random* BERT masked LM in a temporary folder (so it
runs anywhere, offline, in seconds); give the folder of a real model instead — ESM-2, AntiBERTy, a
BERT-style MLM, or LLaDA / Dream with ``trust_remote_code`` — and the same lines decode it. unmask
never downloads weights: the folder must already be on disk. Needs ``pip install 'unmask[hf]'``.
"""

import sys
import tempfile

import torch


def tiny_random_mlm(folder: str) -> str:
    """Save a 2-layer random BertForMaskedLM and a word-level tokenizer of 15 tokens in ``folder``."""
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"ACDEFGHIKL"]
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=core, pad_token="[PAD]", unk_token="[UNK]",
                                                     mask_token="[MASK]", cls_token="[CLS]", sep_token="[SEP]")
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=len(words), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=64)
    transformers.BertForMaskedLM(config).save_pretrained(folder)
    return folder


def main(folder: str) -> None:
    # --8<-- [start:huggingface]
    import unmask

    loaded = unmask.load_denoiser(f"hf:{folder}")  # unmask.HFOptions(trust_remote_code=True) for LLaDA / Dream
    model, tokenizer = loaded.denoiser, loaded.tokenizer
    tokens = torch.full((2, 12), model.mask_id)  # two sequences of 12 positions, all masked
    result = unmask.decode(model, tokens, unmask.build_policy("eb:gamma=0.5"), unmask.TokenRule(temperature=1.0))
    print(tokenizer.batch_decode(result.tokens), "forward passes:", result.nfe.tolist())
    # --8<-- [end:huggingface]


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(tiny_random_mlm(tmp))
