"""Blender point caches written by ``defo run`` (outputs.pc2, outputs.mdd).

Readers for checking and post-processing a run folder's cache/NAME.pc2 and
cache/NAME.mdd in NumPy; the layouts are described in src/cli/point_cache.c.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np


class PointCache(NamedTuple):
    """A point cache: positions[k, i] is vertex i at sample k (float32)."""

    positions: np.ndarray  # (samples, vertices, 3) float32
    start: float  # frame of sample 0
    sampling: float  # frames between samples


class MddCache(NamedTuple):
    """An MDD cache: positions[k, i] is vertex i at times[k] seconds."""

    positions: np.ndarray  # (frames, vertices, 3) float32
    times: np.ndarray  # (frames,) float32 [s]


def read_pc2(path: str) -> PointCache:
    """Read a Point Cache 2 file (little-endian; the frames its header counts)."""
    with open(path, "rb") as f:
        head = f.read(32)
        if len(head) < 32 or head[:12] != b"POINTCACHE2\0":
            raise ValueError("%s: not a Point Cache 2 file" % path)
        version, n, start, sampling, samples = struct.unpack("<iiffi", head[12:])
        if version != 1 or n < 0 or samples < 0:
            raise ValueError("%s: version %d, %d vertices, %d samples" % (path, version, n, samples))
        data = f.read(12 * n * samples)
    if len(data) != 12 * n * samples:
        raise ValueError("%s: %d samples of %d vertices announced, the file is shorter"
                         % (path, samples, n))
    return PointCache(np.frombuffer(data, "<f4").reshape(samples, n, 3), start, sampling)


def read_mdd(path: str) -> MddCache:
    """Read an MDD file (big-endian: frames, vertices, times, positions)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError("%s: not an MDD file" % path)
    frames, n = struct.unpack(">ii", raw[:8])
    if frames < 0 or n < 0 or len(raw) != 8 + 4 * frames + 12 * frames * n:
        raise ValueError("%s: %d frames of %d vertices do not match its size" % (path, frames, n))
    times = np.frombuffer(raw[8:8 + 4 * frames], ">f4").astype("f4")
    pos = np.frombuffer(raw[8 + 4 * frames:], ">f4").astype("f4").reshape(frames, n, 3)
    return MddCache(pos, times)
