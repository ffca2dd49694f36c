"""The allocator policy of a stage process (common/node/allocator.py): with it, a buffer of a
few MB freed and asked for again is mapped on its own (handed back when freed) instead of being
cut from a thread's heap; without it glibc raises its threshold past such buffers. Each case
runs in a process of its own: the policy is the process's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PROBE = """
import ctypes, sys
from common.node.allocator import map_large_buffers

class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                               "usmblks", "fsmblks", "uordblks", "fordblks",
                                               "keepcost")]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Info
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
print(map_large_buffers(int(sys.argv[1])))
libc.free(libc.malloc(8 << 20))  # a mapped block freed: glibc's own threshold rises past 8 MiB
before = libc.mallinfo2().hblkhd
block = libc.malloc(2 << 20)
print(libc.mallinfo2().hblkhd - before)  # bytes newly mapped for the 2 MiB block
"""


def _probe(threshold_kb: int, env: dict[str, str] | None = None) -> tuple[bool, int]:
    inherited = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    full = {**inherited, "PYTHONPATH": str(REPO), **(env or {})}
    out = subprocess.run([sys.executable, "-c", PROBE, str(threshold_kb)], env=full,
                         capture_output=True, text=True, check=True, timeout=60).stdout.split()
    return out[0] == "True", int(out[1])


@pytest.fixture(autouse=True)
def _glibc() -> None:
    if not os.confstr_names.get("CS_GNU_LIBC_VERSION") or \
            "glibc" not in os.confstr("CS_GNU_LIBC_VERSION"):
        pytest.fail("these tests read glibc's mallinfo2: run them on a glibc system")


def test_a_freed_large_buffer_is_mapped_again_with_the_policy() -> None:
    assert _probe(1024) == (True, pytest.approx(2 << 20, rel=0.01))


def test_without_it_glibc_serves_the_buffer_from_its_heap() -> None:
    assert _probe(0) == (False, 0)


def test_a_threshold_the_operator_gave_glibc_is_kept() -> None:
    assert _probe(1024, {"MALLOC_MMAP_THRESHOLD_": "33554432"}) == (False, 0)


def test_each_stage_has_its_own_threshold_unless_one_is_given() -> None:
    from common.node.allocator import ONE_HEAP, stage_threshold_kb

    # asr keeps its buffers in one heap (the encoder's come back without faults), enhance maps
    # its large buffers (flat memory on long members), tokenize keeps glibc's own threshold
    from services.pipeline import PIPELINE

    kb = {s: PIPELINE.spec(s).mmap_threshold_kb for s in ("asr", "enhance", "tokenize")}
    assert [stage_threshold_kb(kb[s], -1) for s in kb] == [ONE_HEAP, 1024, 0]
    assert [stage_threshold_kb(kb[s], 512) for s in ("asr", "enhance")] == [512, 512]
    assert stage_threshold_kb(kb["enhance"], 0) == 0
    assert stage_threshold_kb(kb["enhance"], ONE_HEAP) == ONE_HEAP


AFTER_ENHANCE = PROBE.replace("print(map_large_buffers(int(sys.argv[1])))",
                              "map_large_buffers(1024); print(map_large_buffers(0))")


def test_a_later_stage_with_the_default_gets_large_buffers_from_the_heap_again() -> None:
    # one process running enhance then tokenize (onsei run): tokenize's 2 MiB buffers are
    # not mapped afresh each time once the threshold is raised back
    full = {**os.environ, "PYTHONPATH": str(REPO)}
    full.pop("MALLOC_MMAP_THRESHOLD_", None)
    out = subprocess.run([sys.executable, "-c", AFTER_ENHANCE, "0"], env=full,
                         capture_output=True, text=True, check=True, timeout=60).stdout.split()
    assert out == ["True", "0"]


# a buffer over glibc's largest threshold (Whisper's encoder: 72 MB of attention scores per
# layer) freed and asked for again, from a thread other than the main one, as a model's is
AGAIN = """
import ctypes, resource, sys, threading
from common.node.allocator import map_large_buffers

libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
print(map_large_buffers(int(sys.argv[1])))
if len(sys.argv) > 2:  # a later stage of the same process with its own threshold
    map_large_buffers(int(sys.argv[2]))
faults = []

def layers():
    for _ in range(4):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        block = libc.malloc(72 << 20)
        ctypes.memset(block, 1, 72 << 20)
        libc.free(block)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)

t = threading.Thread(target=layers)
t.start()
t.join()
print(max(faults[1:]))  # the page faults of the block's last times
"""


def _again(*thresholds: int) -> tuple[bool, int]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", AGAIN, *map(str, thresholds)],
                         env={**inherited, "PYTHONPATH": str(REPO)}, capture_output=True,
                         text=True, check=True, timeout=60).stdout.split()
    return out[0] == "True", int(out[1])


def test_one_heap_gives_a_large_buffer_back_without_page_faults() -> None:
    from common.node.allocator import ONE_HEAP

    assert _again(ONE_HEAP) == (True, pytest.approx(0, abs=200))
    # glibc's own policy maps it afresh each time: a fault per 4 KiB page
    assert _again(0)[1] > (72 << 20) // 4096 * 0.9


def test_a_later_stage_that_maps_its_buffers_maps_them_again_after_one_heap() -> None:
    from common.node.allocator import ONE_HEAP

    assert _again(ONE_HEAP, 1024)[1] > (72 << 20) // 4096 * 0.9


def test_one_heap_leaves_what_the_operator_gave_glibc() -> None:
    from common.node.allocator import ONE_HEAP

    inherited = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", AGAIN, str(ONE_HEAP)],
                         env={**inherited, "PYTHONPATH": str(REPO), "MALLOC_ARENA_MAX": "4"},
                         capture_output=True, text=True, check=True, timeout=60).stdout.split()
    assert out[0] == "False"


# a probe's libc and its resident memory
LIBC = """
import ctypes, sys

libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]

def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
"""

GIVE_BACK = LIBC + """
from common.node.allocator import give_back

blocks = [libc.malloc(64 << 10) for _ in range(3200)]  # 200 MiB in blocks under any threshold
for b in blocks:
    ctypes.memset(b, 1, 64 << 10)
keep = libc.malloc(16)  # the heap's top stays in use: freeing alone cannot shrink it
for b in blocks:
    libc.free(b)
before = rss()
give_back(int(sys.argv[1]))
print(before - rss())
"""


def _given_back(over_mb: int) -> int:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", GIVE_BACK, str(over_mb)],
                         env={**inherited, "PYTHONPATH": str(REPO)}, capture_output=True,
                         text=True, check=True, timeout=60)
    return int(out.stdout)


def test_give_back_returns_what_the_heaps_kept() -> None:
    assert _given_back(0) > 150 << 20  # most of the 200 MiB freed but kept went back


def test_give_back_over_a_bound_keeps_what_is_under_it() -> None:
    # 200 MiB free: kept under a 300 MiB bound (a model call would fault it in again), handed
    # back over a 100 MiB one
    assert _given_back(300) < 20 << 20
    assert _given_back(100) > 150 << 20


LOADING = LIBC + """
from common.node.allocator import ONE_HEAP, loading, map_large_buffers

def read_a_model_file():  # a file read whole, converted, and the file's buffer freed
    buf = libc.malloc(100 << 20)
    ctypes.memset(buf, 1, 100 << 20)
    weights = libc.malloc(1 << 20)
    libc.free(buf)
    return weights

print(map_large_buffers(ONE_HEAP))
before = rss()
if sys.argv[1] == "loading":
    with loading():
        read_a_model_file()
else:
    read_a_model_file()
kept = rss() - before
window = libc.malloc(64 << 20)  # after loading, a window's buffer: still one heap's, kept
ctypes.memset(window, 1, 64 << 20)
libc.free(window)
again = rss()
window = libc.malloc(64 << 20)
ctypes.memset(window, 1, 64 << 20)
print(kept, rss() - again)
"""


@pytest.mark.parametrize(("how", "kept_mb"), [("loading", (-64, 16)), ("plain", (90, 200))])
def test_a_model_loaded_in_one_heap_leaves_its_file_buffer_behind_only_without_loading(
        how: str, kept_mb: tuple[int, int]) -> None:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", LOADING, how],
                         env={**inherited, "PYTHONPATH": str(REPO)}, capture_output=True,
                         text=True, check=True, timeout=60).stdout.split()
    assert out[0] == "True"
    kept, regrown = int(out[1]) >> 20, int(out[2]) >> 20
    assert kept_mb[0] <= kept < kept_mb[1]
    assert regrown < 4  # a window's buffer freed and asked for again: no fresh pages either way
