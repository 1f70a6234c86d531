#!/usr/bin/env python3
"""A tiny whisper.cpp model (random weights) and a short WAV, for the compatibility matrix's whisper-cli row.

whisper.cpp 1.9.x loads its legacy ggml binary format (src/whisper.cpp, whisper_model_load): the magic 'ggml'
(0x67676d6c), eleven int32 hparams (n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer, n_text_ctx,
n_text_state, n_text_head, n_text_layer, n_mels, ftype), the mel filters (int32 n_mel, n_fft, then n_mel * n_fft
float32), the vocabulary (int32 count, then per token a uint32 length and its bytes: whisper.cpp names the tokens
the file lacks itself, "[_EOT_]", "[_SOT_]", ..., but needs " " among those it has), then each tensor: int32 n_dims, name length, type (0 F32, 1
F16), n_dims int32 sizes, the name, the data (no padding). 51864 tokens is an English-only vocabulary (no language
detection); the file carries the first 256. The dimensions are tiny (64 wide, one layer
each side, 64 text positions), so a transcription is a few graphs of milliseconds; the audio context stays 1500
(whisper-cli's 30 s window).

usage: tests/make_whisper_model.py   prints MODEL=PATH and WAV=PATH; writes them once into
       ${GGPROF_CACHE:-~/.cache/ggprof}/whisper-tiny-KEY (KEY: bump when the output changes).
"""
import os
import random
import struct
import sys
import wave

KEY = "2"
HP = dict(n_vocab=51864, n_audio_ctx=1500, n_audio_state=64, n_audio_head=2, n_audio_layer=1, n_text_ctx=64,
          n_text_state=64, n_text_head=2, n_text_layer=1, n_mels=80, ftype=1)
N_FFT = 201  # 1 + 400 / 2: whisper's frame of 400 samples
F32, F16 = 0, 1


def tensors():
    """(name, type, sizes) in whisper_model_load's order, sizes as ggml's ne (innermost first)."""
    a, t, v, m = HP["n_audio_state"], HP["n_text_state"], HP["n_vocab"], HP["n_mels"]
    out = [("encoder.positional_embedding", F32, [a, HP["n_audio_ctx"]]),
           ("encoder.conv1.weight", F16, [3, m, a]), ("encoder.conv1.bias", F32, [1, a]),
           ("encoder.conv2.weight", F16, [3, a, a]), ("encoder.conv2.bias", F32, [1, a]),
           ("encoder.ln_post.weight", F32, [a]), ("encoder.ln_post.bias", F32, [a])]

    def block(prefix, n, cross):
        blk = [(prefix + "mlp_ln.weight", F32, [n]), (prefix + "mlp_ln.bias", F32, [n]),
               (prefix + "mlp.0.weight", F16, [n, 4 * n]), (prefix + "mlp.0.bias", F32, [4 * n]),
               (prefix + "mlp.2.weight", F16, [4 * n, n]), (prefix + "mlp.2.bias", F32, [n])]
        for att in ["attn"] + (["cross_attn"] if cross else []):
            blk += [(prefix + att + "_ln.weight", F32, [n]), (prefix + att + "_ln.bias", F32, [n]),
                    (prefix + att + ".query.weight", F16, [n, n]), (prefix + att + ".query.bias", F32, [n]),
                    (prefix + att + ".key.weight", F16, [n, n]),
                    (prefix + att + ".value.weight", F16, [n, n]), (prefix + att + ".value.bias", F32, [n]),
                    (prefix + att + ".out.weight", F16, [n, n]), (prefix + att + ".out.bias", F32, [n])]
        return blk

    for i in range(HP["n_audio_layer"]):
        out += block("encoder.blocks.%d." % i, a, False)
    out += [("decoder.positional_embedding", F32, [t, HP["n_text_ctx"]]),
            ("decoder.token_embedding.weight", F16, [t, v]),
            ("decoder.ln.weight", F32, [t]), ("decoder.ln.bias", F32, [t])]
    for i in range(HP["n_text_layer"]):
        out += block("decoder.blocks.%d." % i, t, True)
    return out


def data(rng, name, typ, n):
    """Layer norms' weights 1 and biases 0; the rest small random values (a block of them repeated: fast)."""
    if name.endswith("_ln.weight") or name.endswith("ln_post.weight") or name == "decoder.ln.weight":
        return struct.pack("<f" if typ == F32 else "<e", 1.0) * n
    if name.endswith("_ln.bias") or name.endswith("ln_post.bias") or name == "decoder.ln.bias":
        return b"\0" * (n * (4 if typ == F32 else 2))
    fmt = "<f" if typ == F32 else "<e"
    block = b"".join(struct.pack(fmt, rng.uniform(-0.1, 0.1)) for _ in range(min(n, 4099)))
    size = n * (4 if typ == F32 else 2)
    return (block * (size // len(block) + 1))[:size]


def write_model(path):
    rng = random.Random(1)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<I", 0x67676D6C))
        f.write(struct.pack("<11i", *HP.values()))
        f.write(struct.pack("<2i", HP["n_mels"], N_FFT))
        f.write(struct.pack("<%df" % (HP["n_mels"] * N_FFT), *(rng.uniform(0, 0.02) for _ in range(HP["n_mels"] * N_FFT))))
        # 256 token strings (printable ASCII, the rest "<N>"): whisper.cpp names the others itself, and its decoder
        # looks up " " (suppress_blank)
        words = [chr(i).encode() if 32 <= i < 127 else b"<%d>" % i for i in range(256)]
        f.write(struct.pack("<i", len(words)))
        for w in words:
            f.write(struct.pack("<I", len(w)) + w)
        for name, typ, ne in tensors():
            n = 1
            for d in ne:
                n *= d
            raw = name.encode()
            f.write(struct.pack("<3i", len(ne), len(raw), typ))
            f.write(struct.pack("<%di" % len(ne), *ne))
            f.write(raw)
            f.write(data(rng, name, typ, n))
    os.replace(path + ".tmp", path)


def write_wav(path, seconds=2, rate=16000, hz=440):
    """16 kHz mono 16-bit: a tone (whisper-cli reads WAV itself; under 1 s it says the input is too short)."""
    import math
    frames = b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * hz * i / rate))) for i in range(seconds * rate))
    with wave.open(path + ".tmp", "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(frames)
    os.replace(path + ".tmp", path)


def main():
    if len(sys.argv) > 1:
        sys.stderr.write("usage: %s (no arguments)\n" % sys.argv[0])
        return 2
    d = os.path.join(os.environ.get("GGPROF_CACHE") or os.path.expanduser("~/.cache/ggprof"), "whisper-tiny-" + KEY)
    os.makedirs(d, exist_ok=True)
    model, wav = os.path.join(d, "tiny.bin"), os.path.join(d, "tone.wav")
    if not os.path.exists(model):
        write_model(model)
    if not os.path.exists(wav):
        write_wav(wav)
    print("WHISPER_MODEL=" + model)
    print("WHISPER_WAV=" + wav)
    return 0


if __name__ == "__main__":
    sys.exit(main())
