#!/usr/bin/env python3
"""Writes a tiny random-weight llama GGUF for the end-to-end test against llama.cpp's server.

Usage: PYTHONPATH=LLAMA_CPP_SRC/gguf-py python3 scripts/make-tiny-gguf.py OUT.gguf [--vocab ascii|bytes]

The model is llama architecture: 2 layers, hidden 64, 4 heads, FFN 128, context 2048, F32
weights drawn from a fixed seed (the same file every run). Its tokenizer is a SentencePiece-style
("llama") vocabulary that this script controls:
  0 <unk>, 1 <s>, 2 </s>; the byte tokens <0x00>..<0x7F> (type BYTE), so any ASCII prompt
  tokenizes by byte fallback; then whole-word pieces ("\u2581the", ...) so prompts of words take
  one token per word.
With --vocab ascii (the default) every token the model can emit decodes to ASCII, so output
stopped at any max_tokens is valid UTF-8. With --vocab bytes the byte tokens <0x80>..<0xFF> are
added: random weights then emit lone UTF-8 lead and continuation bytes, and a stream cut at
max_tokens can end inside a character (the server's error path that latdoc must count).

Needs numpy (Debian python3-numpy) and llama.cpp's own gguf-py on PYTHONPATH (the source tree
scripts/build-llama-server.sh clones). No network, no PyPI.
"""
import argparse
import sys

import numpy as np

try:
    import gguf
except ImportError:
    sys.exit("make-tiny-gguf: gguf-py not found: set PYTHONPATH to llama.cpp's gguf-py "
             "(build/llama.cpp/src/gguf-py after scripts/build-llama-server.sh)")

N_LAYER = 2
N_EMBD = 64
N_HEAD = 4
N_FF = 128
N_CTX = 2048

# Words of the kind latdoc's synthetic prompts use, and common English ones; each a single
# piece with SentencePiece's word-start mark.
WORDS = (
    "the of and to in is that for it as was with be by on not he this are or his from at which "
    "but have an they you were her she there one all we their has been if more when will would "
    "who so no time out up can only other new some could these two may first then do any like "
    "my now over such our man me even most made after also did many before must through back "
    "years where much your way well down should because each just those people how too little "
    "state good very make world still own see men work long get here between both life being "
    "under never day same another know while last might us great old year off come since against "
    "go came right used take three latency token server request model batch queue prefill decode "
    "cache kernel memory network engine stream"
).split()


def vocab(kind):
    tokens, scores, types = [], [], []

    def add(text, score, ttype):
        tokens.append(text)
        scores.append(score)
        types.append(ttype)

    add("<unk>", 0.0, gguf.TokenType.UNKNOWN)
    add("<s>", 0.0, gguf.TokenType.CONTROL)
    add("</s>", 0.0, gguf.TokenType.CONTROL)
    top_byte = 0x100 if kind == "bytes" else 0x80
    for b in range(top_byte):
        add("<0x%02X>" % b, 0.0, gguf.TokenType.BYTE)
    # Single characters and the word-start mark, then words: higher scores merge first.
    add("\u2581", -1.0, gguf.TokenType.NORMAL)
    for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,:;!?'-":
        add(c, -2.0, gguf.TokenType.NORMAL)
    seen = set(tokens)
    for i, w in enumerate(WORDS):
        piece = "\u2581" + w
        if piece in seen:
            continue
        seen.add(piece)
        add(piece, -3.0 - i * 1e-3, gguf.TokenType.NORMAL)
    return tokens, scores, types


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--vocab", choices=("ascii", "bytes"), default="ascii")
    ap.add_argument("--seed", type=int, default=34)
    a = ap.parse_args()

    tokens, scores, types = vocab(a.vocab)
    rng = np.random.default_rng(a.seed)

    def rand(*shape, scale=0.05):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w = gguf.GGUFWriter(a.out, "llama")
    w.add_name("latdoc-tiny-" + a.vocab)
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_vocab_size(len(tokens))
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    # numpy shapes are (rows, columns); GGUF stores them reversed (ne0 = columns).
    w.add_tensor("token_embd.weight", rand(len(tokens), N_EMBD, scale=1.0))
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    w.add_tensor("output.weight", rand(len(tokens), N_EMBD, scale=1.0))
    for i in range(N_LAYER):
        p = "blk.%d." % i
        w.add_tensor(p + "attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(p + "attn_q.weight", rand(N_EMBD, N_EMBD))
        w.add_tensor(p + "attn_k.weight", rand(N_EMBD, N_EMBD))
        w.add_tensor(p + "attn_v.weight", rand(N_EMBD, N_EMBD))
        w.add_tensor(p + "attn_output.weight", rand(N_EMBD, N_EMBD))
        w.add_tensor(p + "ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(p + "ffn_gate.weight", rand(N_FF, N_EMBD))
        w.add_tensor(p + "ffn_up.weight", rand(N_FF, N_EMBD))
        w.add_tensor(p + "ffn_down.weight", rand(N_EMBD, N_FF))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
