"""Generated CUDA run on the CPU: g++ compiles the exact kernel text against a small shim, so CI without
a GPU can check that the kernels compute what the interpreter computes.

The shim (``SHIM``) maps the CUDA dialect the generator emits onto C++20: ``__half`` is GCC's ``_Float16``
(conversions round to nearest even, like ``__float2half``), ``uint4``/``uint2``/``uint1`` plain structs,
qualifiers vanish.
Blocks of a launch run one after another, all ``threads`` threads of a block together, in one of three
schedules that all keep ``__syncthreads()`` exact:

* ``"forward"`` / ``"reverse"``: each thread is a ucontext fiber; between two barriers the fibers run to
  the barrier one at a time, in ascending / descending ``threadIdx.x``. Deterministic and fast (no OS
  threads, no futexes). A missing barrier between a write and another thread's read shows up in at
  least one of the two orders, so running both is a cheap race check.
* ``"threads"``: one OS thread (pthread) per CUDA thread, ``std::barrier`` for ``__syncthreads()``: the
  straightforward model, about 5x slower on two cores (every barrier wakes ``threads`` OS threads).

Each block's shared memory is the planned ``smem_bytes`` plus a guard (to 256 KiB), all filled with 0xFF (NaN
as fp16 and fp32), and kernel outputs start as NaN: a read of shared memory nobody wrote, or an output element
nobody stored, turns into NaN in the result instead of passing silently. A write into the guard, or a
misaligned vector access (a fault on a GPU), raises ``EmulationError`` naming the kernel, block, thread.

The PTX helpers (``codegen.intrinsics``) have C++ versions here: a ``cp.async`` copy lands when its thread waits
for its group and poisons its destination until then (a copy still in flight when the thread ends is an error);
an ``ldmatrix`` + ``mma.sync`` fragment holds the rows and columns its lane's outputs need, read by the lane.

Predefined kernel ops run as their lowered kernels (``codegen.lower``); with ``library_calls=True`` they run in
numpy by the op table's evaluation rule in fp32 instead, as ``run.py`` does on CuPy. Inputs declared with strides
are passed laid out in them (``run.lay_out``), so the kernels' strided loads are what is checked.

Libraries are cached in the per-user private cache (``mirage_lab.cache``) and loaded only when their sha256
matches the record written when they were built.
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import shutil
import subprocess
from collections.abc import Sequence
from typing import Literal

import numpy as np

from mirage_lab.cache import HashedStore
from mirage_lab.codegen.compile import CompileError
from mirage_lab.codegen.cuda import (
    ENTRY_KEYWORDS,
    CodegenOptions,
    CudaProgram,
    KernelLaunch,
    codegen_options,
    generate_cuda,
    plan_cuda,
    prepare,
)
from mirage_lab.codegen.run import evaluate_library, lay_out
from mirage_lab.codegen.storage import storage
from mirage_lab.errors import ArgumentError, MirageError
from mirage_lab.ir.builder import KernelGraphBuilder
from mirage_lab.ir.graph import KernelGraph
from mirage_lab.semantics.interpret import check_inputs

Schedule = Literal["forward", "reverse", "threads"]
SCHEDULES: dict[str, int] = {"forward": 0, "reverse": 1, "threads": 2}
GXX_FLAGS = ("-std=c++20", "-O1", "-pthread", "-shared", "-fPIC", "-fno-strict-aliasing")  # CUDA code type-puns
#: the generator's one shared-memory declaration; rewritten to the per-block buffer of the shim
SMEM_DECL = re.compile(r"extern\s+__shared__\s+__align__\(\d+\)\s+char\s+smem\[\];")
KERNEL_NAME = re.compile(r'extern "C" __global__ void(?: __launch_bounds__\(\d+(?:, \d+)?\))? (\w+)\(')

SHIM = r"""
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>
#include <pthread.h>
#include <ucontext.h>

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) alignas(n)

typedef _Float16 __half;
struct uint4 { unsigned int x, y, z, w; };  // no alignas: misalignment is reported by mirage_vec, not a crash
struct uint2 { unsigned int x, y; };
struct uint1 { unsigned int x; };
struct dim3u { unsigned int x, y, z; };
struct __half2 { _Float16 x, y; };
struct float2 { float x, y; };

// A table, because without F16C every _Float16 -> float conversion is a libgcc call and the matmul
// loops do two per multiply-add; both directions are exact / round-to-nearest-even as in CUDA.
static float mirage_h2f[65536];
__attribute__((constructor)) static void mirage_init_h2f() {
  for (unsigned b = 0; b < 65536; ++b) { uint16_t u = b; __half h; std::memcpy(&h, &u, 2); mirage_h2f[b] = (float)h; }
}
static inline float __half2float(__half h) { uint16_t u; std::memcpy(&u, &h, 2); return mirage_h2f[u]; }
static inline __half __float2half(float f) { return (__half)f; }
static inline float2 __half22float2(__half2 h) { return {__half2float(h.x), __half2float(h.y)}; }
static inline __half2 __floats2half2_rn(float a, float b) { return {__float2half(a), __float2half(b)}; }

// bf16 in software (GCC 12 has no __bf16 arithmetic): the top half of an fp32. Widening is exact; narrowing
// rounds to nearest even, and a NaN stays a NaN, as __float2bfloat16 does (numpy's side: codegen/storage.py).
struct __nv_bfloat16 { uint16_t bits; };
static inline float __bfloat162float(__nv_bfloat16 h) {
  uint32_t u = uint32_t(h.bits) << 16; float f; std::memcpy(&f, &u, 4); return f;
}
static inline __nv_bfloat16 __float2bfloat16(float f) {
  uint32_t u; std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {uint16_t((u >> 16) | 0x40u)};
  return {uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}

static dim3u blockIdx;                     // blocks run one at a time
static thread_local dim3u threadIdx;       // set per OS thread, or by the fiber scheduler on each switch
static char* mirage_smem;                  // this block's shared memory
static int mirage_mode;                    // 0 forward fibers, 1 reverse fibers, 2 OS threads
static std::barrier<>* mirage_barrier;
static ucontext_t mirage_scheduler;
static ucontext_t* mirage_fiber;           // the running fiber's context
static bool mirage_finished;               // the running fiber returned from the kernel
static void (*mirage_kernel)(void**);      // the launched kernel, called with its arguments
static void** mirage_args;
static char mirage_error[512];             // first error of the last launch, read by Python

static void mirage_fail(const char* what) {
  if (!mirage_error[0])
    std::snprintf(mirage_error, sizeof mirage_error, "%s (block (%u, %u, %u), thread %u)", what,
                  blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x);
}
extern "C" const char* mirage_last_error() { return mirage_error; }

// vector accesses fault on a GPU unless aligned to their size; here they would silently work, so check.
template <class T> static T* mirage_vec(std::conditional_t<std::is_const_v<T>, const void*, void*> p) {
  if (reinterpret_cast<uintptr_t>(p) % sizeof(T))
    mirage_fail(sizeof(T) == 16 ? "misaligned 16-byte vector access"
                : sizeof(T) == 8 ? "misaligned 8-byte vector access" : "misaligned 4-byte vector access");
  return static_cast<T*>(p);
}

// split sums add their partials into shared fp32 accumulators; real atomics under the OS-thread schedule
static float atomicAdd(float* p, float v) { return std::atomic_ref<float>(*p).fetch_add(v); }

static void __syncthreads() {
  if (mirage_mode == 2) mirage_barrier->arrive_and_wait();
  else swapcontext(mirage_fiber, &mirage_scheduler);  // back to the scheduler: the next fiber runs
}

// Asynchronous copies (cp.async). A copy lands when its thread waits for its group, the latest a GPU may land
// it, and its destination reads as poison (0xFF: NaN) from the issue on: a read before the wait (or, in another
// thread, before the barrier after it) sees NaN, and so does a read of a slot refilled while still in use.
// A thread that finishes with copies in flight is an error: the generator must wait for every copy it reads.
#define MIRAGE_LAB_SMEM_ADDRESS  // the generator's PTX helpers below are replaced, so no address conversion
#define MIRAGE_LAB_ASYNC_COPY
struct mirage_copy { char* dst; const char* src; int bytes; };
// Per thread, plain arrays (no static destructors in a library Python never unloads): the copies issued and not
// landed, oldest first, grown by realloc and freed after each launch; and where each committed group ends in them.
constexpr int MIRAGE_GROUPS = 64;
static mirage_copy* mirage_copies[1024];
static int mirage_issued[1024], mirage_capacity[1024];
static int mirage_group_end[1024][MIRAGE_GROUPS], mirage_groups[1024];
static int mirage_smem_bytes;                              // this launch's planned shared memory
template <int B> static void mirage_cp_async(void* smem, const void* gmem) {
  static_assert(B == 4 || B == 8 || B == 16, "cp.async copies 4, 8 or 16 bytes");
  char* d = static_cast<char*>(smem);
  if (reinterpret_cast<uintptr_t>(d) % B || reinterpret_cast<uintptr_t>(gmem) % B)
    return mirage_fail("misaligned cp.async (source and destination must be aligned to the copy size)");
  if (d < mirage_smem || d + B > mirage_smem + mirage_smem_bytes)
    return mirage_fail("cp.async outside the planned shared memory");
  const unsigned t = threadIdx.x;
  if (mirage_issued[t] == mirage_capacity[t]) {
    const int grown = mirage_capacity[t] ? 2 * mirage_capacity[t] : 64;
    void* q = std::realloc(mirage_copies[t], sizeof(mirage_copy) * grown);
    if (!q) return mirage_fail("out of memory for the cp.async queue");
    mirage_copies[t] = static_cast<mirage_copy*>(q);
    mirage_capacity[t] = grown;
  }
  std::memset(d, 0xFF, B);
  mirage_copies[t][mirage_issued[t]++] = {d, static_cast<const char*>(gmem), B};
}
static void mirage_cp_async_commit() {
  const unsigned t = threadIdx.x;
  if (mirage_groups[t] == MIRAGE_GROUPS) return mirage_fail("more than 64 cp.async groups in flight");
  mirage_group_end[t][mirage_groups[t]++] = mirage_issued[t];
}
template <int N> static void mirage_cp_async_wait() {
  const unsigned t = threadIdx.x;
  const int groups = mirage_groups[t];
  if (groups <= N) return;
  const int landed = mirage_group_end[t][groups - 1 - N];  // every copy of the groups older than the newest N
  mirage_copy* q = mirage_copies[t];
  for (int c = 0; c < landed; ++c) std::memcpy(q[c].dst, q[c].src, q[c].bytes);
  std::memmove(q, q + landed, sizeof(mirage_copy) * (mirage_issued[t] - landed));
  mirage_issued[t] -= landed;
  for (int g = 0; g < N; ++g) mirage_group_end[t][g] = mirage_group_end[t][groups - N + g] - landed;
  mirage_groups[t] = N;
}
static void mirage_cp_async_reset(int threads) {  // after each block: nothing may stay in flight
  for (int t = 0; t < threads; ++t) { mirage_issued[t] = 0; mirage_groups[t] = 0; }
}
static void mirage_cp_async_free(int threads) {
  for (int t = 0; t < threads; ++t) { std::free(mirage_copies[t]); mirage_copies[t] = nullptr; mirage_capacity[t] = 0; }
}

// Tensor cores (ldmatrix + mma.sync.m16n8k16). A lane's fragment holds the A rows and B columns its four
// outputs need, read from shared memory by the lane itself, where a GPU's lanes exchange packed halves; the
// products and fp32 sums are the same. ldmatrix's 16-byte row alignment is checked.
#define MIRAGE_LAB_MMA
struct mirage_frag_a { float x[2][16]; };  // rows l/4 and l/4 + 8 of the 16x16 A tile (lane l)
struct mirage_frag_b { float x[16][2]; };  // columns 2(l%4) and 2(l%4) + 1 of the 16x8 B tile
static void mirage_ldmatrix_check(const __half* p, int pitch) {
  if (reinterpret_cast<uintptr_t>(p) % 16 || pitch % 8) mirage_fail("misaligned ldmatrix row (needs 16 bytes)");
}
static void mirage_load_a(mirage_frag_a& f, const __half* a, int lda, int rows) {
  mirage_ldmatrix_check(a, lda);
  if (rows < 1) mirage_fail("an mma A fragment with no rows");
  const int g = (int)(threadIdx.x % 32) / 4;
  for (int h = 0; h < 2; ++h) {
    const int r = g + 8 * h < rows ? g + 8 * h : rows - 1;
    for (int k = 0; k < 16; ++k) f.x[h][k] = __half2float(a[r * lda + k]);
  }
}
static void mirage_load_b(mirage_frag_b& f, const __half* b, int ldb) {
  mirage_ldmatrix_check(b, ldb);
  const int c0 = (int)(threadIdx.x % 4) * 2;
  for (int k = 0; k < 16; ++k)
    for (int j = 0; j < 2; ++j) f.x[k][j] = __half2float(b[k * ldb + c0 + j]);
}
static void mirage_mma(float (&c)[4], const mirage_frag_a& a, const mirage_frag_b& b) {
  for (int e = 0; e < 4; ++e) {
    float s = c[e];
    for (int k = 0; k < 16; ++k) s += a.x[e / 2][k] * b.x[k][e % 2];
    c[e] = s;
  }
}

// Warp sums (the generator's mirage_warp_sum, a shuffle butterfly on a GPU): every lane publishes its
// values, every thread of the block waits, each lane sums its group's in a fixed order, and all wait again
// before the slots are reused. The generator calls it where every thread does, equally often. Two barriers
// per call instead of two per shuffle: the butterfly's barriers made the emulation ~10x slower.
#define MIRAGE_LAB_WARP_SUM
static float mirage_exchange[1024 * 16];
template <int N, int W> static void mirage_warp_sum(float (&v)[N]) {
  static_assert(N <= 16 && W <= 32 && (W & (W - 1)) == 0, "up to 16 values, groups of a power of two lanes");
  const unsigned t = threadIdx.x, first = t & ~(unsigned)(W - 1);
  for (int j = 0; j < N; ++j) mirage_exchange[t * 16 + j] = v[j];
  __syncthreads();
  for (int j = 0; j < N; ++j) {
    float s = 0.f;
    for (unsigned l = 0; l < (unsigned)W; ++l) s += mirage_exchange[(first + l) * 16 + j];
    v[j] = s;
  }
  __syncthreads();
}

static void mirage_fiber_main() { mirage_kernel(mirage_args); mirage_finished = true; }  // then uc_link

static void mirage_run_block_fibers(int threads, bool reverse, ucontext_t* ctx, char* done, char* stacks,
                                    size_t stack) {
  for (int t = 0; t < threads; ++t) {
    getcontext(&ctx[t]);
    ctx[t].uc_stack.ss_sp = stacks + stack * t;
    ctx[t].uc_stack.ss_size = stack;
    ctx[t].uc_link = &mirage_scheduler;
    makecontext(&ctx[t], mirage_fiber_main, 0);
    done[t] = 0;
  }
  // One round = every live thread runs up to its next barrier (or its end), so no thread passes a
  // barrier before all have reached it; a finished fiber simply drops out, like arrive_and_drop.
  for (int live = threads; live > 0;) {
    for (int k = 0; k < threads; ++k) {
      const int t = reverse ? threads - 1 - k : k;
      if (done[t]) continue;
      threadIdx = {(unsigned)t, 0, 0};
      mirage_fiber = &ctx[t];
      mirage_finished = false;
      swapcontext(&mirage_scheduler, &ctx[t]);
      if (mirage_finished) { done[t] = 1; --live; }
    }
  }
}

static void* mirage_thread_main(void* t) {
  threadIdx = {(unsigned)(uintptr_t)t, 0, 0};
  mirage_kernel(mirage_args);
  mirage_barrier->arrive_and_drop();
  return nullptr;
}

static void mirage_run_block_threads(int threads, pthread_t* pool) {
  std::barrier<> barrier(threads);
  mirage_barrier = &barrier;
  int started = 0;
  for (; started < threads; ++started)
    if (pthread_create(&pool[started], nullptr, mirage_thread_main, (void*)(uintptr_t)started)) break;
  if (started < threads) {  // the missing threads leave the barrier, so that the started ones finish
    mirage_fail("pthread_create failed; use a fiber schedule");
    for (int t = started; t < threads; ++t) barrier.arrive_and_drop();
  }
  for (int t = 0; t < started; ++t) pthread_join(pool[t], nullptr);
}

static void mirage_launch(void (*kernel)(void**), void** args, int gx, int gy, int gz, int threads, int smem_bytes,
                          int mode) {
  // The planned bytes, then a guard: a write past the plan's peak is caught, a read of it gives NaN. The guard
  // reaches past any GPU's shared memory (227 KiB), so a kernel generated for another plan (a test's variant
  // source) still writes inside this allocation, never into the heap beyond it.
  const int span = (std::max(smem_bytes + 4096, 256 * 1024) + 31) / 32 * 32;
  constexpr size_t STACK = 1 << 16;
  mirage_smem = static_cast<char*>(std::aligned_alloc(32, span));
  mirage_smem_bytes = smem_bytes;
  char* stacks = new char[STACK * threads];
  ucontext_t* ctx = new ucontext_t[threads];
  char* done = new char[threads];
  pthread_t* pool = new pthread_t[threads];
  mirage_kernel = kernel;
  mirage_args = args;
  mirage_mode = mode;
  mirage_error[0] = 0;
  for (int z = 0; z < gz && !mirage_error[0]; ++z)
    for (int y = 0; y < gy && !mirage_error[0]; ++y)
      for (int x = 0; x < gx && !mirage_error[0]; ++x) {
        blockIdx = {(unsigned)x, (unsigned)y, (unsigned)z};
        std::memset(mirage_smem, 0xFF, span);  // NaN: unwritten shared memory must not look like data
        if (mode == 2) mirage_run_block_threads(threads, pool);
        else mirage_run_block_fibers(threads, mode == 1, ctx, done, stacks, STACK);
        for (int b = smem_bytes; b < span; ++b)
          if (mirage_smem[b] != (char)0xFF) { mirage_fail("write past the planned shared memory"); break; }
        for (int t = 0; t < threads && !mirage_error[0]; ++t)
          if (mirage_issued[t])
            std::snprintf(mirage_error, sizeof mirage_error, "cp.async copies still in flight when thread %d "
                          "finished (block (%d, %d, %d)): every copy must be waited for", t, x, y, z);
        mirage_cp_async_reset(threads);
      }
  std::free(mirage_smem);
  mirage_cp_async_free(threads);
  delete[] stacks; delete[] ctx; delete[] done; delete[] pool;
}

// Kernel parameters are pointers; the thunk casts each void* to the kernel's parameter type.
template <class... P, size_t... I>
static void mirage_invoke(void (*kernel)(P...), void** args, std::index_sequence<I...>) {
  kernel(static_cast<P>(args[I])...);
}
template <class... P>
static void mirage_invoke(void (*kernel)(P...), void** args) {
  mirage_invoke(kernel, args, std::index_sequence_for<P...>{});
}
template <auto K> static void mirage_thunk(void** args) { mirage_invoke(K, args); }
"""


def gxx_path() -> str | None:
    return shutil.which("g++")


def gxx_available() -> bool:
    return gxx_path() is not None


def cpu_source(source: str) -> str:
    """``source`` made plain C++20: the shim, the kernels (shared memory rewritten), one launcher each."""
    names = KERNEL_NAME.findall(source)
    body = SMEM_DECL.sub("char* smem = mirage_smem;", source)
    for header in ("#include <cuda_fp16.h>", "#include <cuda_bf16.h>", "#include <mma.h>"):  # the shim has them
        body = body.replace(header, "")
    vectors = ("uint4", "const uint4", "uint2", "const uint2", "uint1", "const uint1", "__half2")
    for ty in vectors:  # checked, same parentheses
        body = body.replace(f"reinterpret_cast<{ty}*>(", f"mirage_vec<{ty}>(")
    launchers = [f'extern "C" void launch_{n}(void** a, int gx, int gy, int gz, int threads, int smem, int mode) '
                 f"{{ mirage_launch(mirage_thunk<{n}>, a, gx, gy, gz, threads, smem, mode); }}" for n in names]
    return SHIM + "\n" + body + "\n" + "\n".join(launchers) + "\n"


class EmulationError(MirageError, RuntimeError):
    """A generated kernel did something that is an error on a GPU (misaligned vector, shared-memory overrun)."""


_LOADED: dict[str, ctypes.CDLL] = {}
#: g++-built libraries, each loaded only when its sha256 matches the record written when we built it
STORE = HashedStore("emulate")


def build_library(source: str) -> ctypes.CDLL:
    """g++-compile the CPU form of a generated ``source`` into a shared library, cached by source hash in the
    per-user private cache (``mirage_lab.cache``): a cached library is loaded only when its sha256 matches the one
    recorded when we built it; a planted, tampered or unrecorded one is rebuilt, never loaded."""
    text = cpu_source(source)
    key = _library_key(text)
    if key in _LOADED:
        return _LOADED[key]
    gxx = gxx_path()
    if gxx is None:
        raise MirageError("g++ not found on PATH; the CPU emulation of generated CUDA needs g++ >= 12 "
                          "(C++20 <barrier>, _Float16): apt-get install g++")
    name = f"{key}.so"
    lib = STORE.load(name)
    if lib is None:
        with STORE.scratch() as tmp:
            src, out = tmp / f"{key}.cpp", tmp / name
            src.write_text(text)
            proc = subprocess.run([gxx, *GXX_FLAGS, "-o", str(out), str(src)],
                                  capture_output=True, text=True, timeout=300, check=False)
            if proc.returncode != 0:
                kept = STORE.keep(f"{key}.cpp", text)  # for the reader of the error; never compiled from there
                raise CompileError(f"g++ failed on the CPU form of {_kernels_in_log(text, proc.stderr)} "
                                   f"({kept}):\n{proc.stderr.strip()[-4000:]}")
            lib = STORE.save(name, out)
    loaded = ctypes.CDLL(str(lib))
    loaded.mirage_last_error.restype = ctypes.c_char_p
    _LOADED[key] = loaded
    return loaded


def _library_key(text: str) -> str:
    return hashlib.sha256((text + " ".join(GXX_FLAGS)).encode()).hexdigest()[:24]


def library_file(source: str) -> str:
    """The name under which ``build_library(source)`` caches its library."""
    return f"{_library_key(cpu_source(source))}.so"


def _kernels_in_log(text: str, log: str) -> str:
    """The generated kernel(s) the g++ errors point into, by line number."""
    starts = [(i + 1, m.group(1)) for i, ln in enumerate(text.splitlines()) if (m := KERNEL_NAME.search(ln))]
    hit = {next((n for s, n in reversed(starts) if s <= int(m.group(1))), "the shim")
           for m in re.finditer(r"\.cpp:(\d+):\d+: error", log)}
    return "kernel " + ", ".join(sorted(hit)) if hit else "the source"


def run_cuda_on_cpu(graph: KernelGraph | KernelGraphBuilder, inputs: Sequence[np.ndarray], *,
                    source: str | None = None, schedule: Schedule = "forward", options: CodegenOptions | None = None,
                    library_calls: bool = False, **flags: bool) -> list[np.ndarray]:
    """Run ``graph``'s (a builder or a frozen graph) generated CUDA on the CPU; outputs in the tensors' dtype
    (bf16 ones as float32 arrays holding the bf16 values: numpy has no bf16).
    ``options`` or keyword flags (``codegen.cuda.CodegenOptions``) choose the code; ``source`` replaces it with a
    variant (whose shared memory must fit the plan of those options). Every op runs a generated kernel;
    ``library_calls=True`` evaluates predefined kernel ops in numpy instead. Inputs declared with strides are
    passed laid out in them."""
    if schedule not in SCHEDULES:
        raise ArgumentError(f"schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
    opts = codegen_options(options, flags, (*ENTRY_KEYWORDS, "source", "schedule"))
    graph = prepare(graph, library_calls)
    program = plan_cuda(graph, opts, library_calls=library_calls)
    text = generate_cuda(graph, opts, library_calls=library_calls) if source is None else source
    check_inputs(graph, inputs)
    lib = build_library(text) if program.launches else None
    types = program.tensors
    env: dict[int, np.ndarray] = {}
    for i, (t, a) in enumerate(zip(program.inputs, inputs, strict=True)):
        held = storage(types[t].dtype)
        env[t] = lay_out(np, held.encode(np, a), held.array, types[t].dims, program.strides.get(t),
                         f"input {i} (d{t})")
    for step in program.steps:
        if isinstance(step, KernelLaunch):
            assert lib is not None
            _launch(lib, program, graph, step, env, SCHEDULES[schedule])
        else:  # a library call computes in fp32 (bf16 operands widened), and its result is stored in its dtype
            args = [storage(types[t].dtype).decode(np, env[t]) for t in step.inputs]
            held = storage(types[step.outputs[0]].dtype)
            out = evaluate_library(step, args, [types[t].dims for t in step.inputs], held.value, "numpy")
            env[step.outputs[0]] = held.encode(np, np.asarray(out))
    return [storage(types[t].dtype).decode(np, env[t]) for t in program.outputs]


def _launch(lib: ctypes.CDLL, program: CudaProgram, graph: KernelGraph, step: KernelLaunch,
            env: dict[int, np.ndarray], mode: int) -> None:
    n_out = len(graph.nodes[step.node].outputs)
    outs = step.args[len(step.args) - n_out:]
    for t in outs:  # NaN until stored: an element no block writes is an error, not a stale value
        held = storage(program.tensors[t].dtype)
        env[t] = np.full(program.tensors[t].dims, held.nan, dtype=held.array)
    ptrs = (ctypes.c_void_p * len(step.args))(*(env[t].ctypes.data for t in step.args))
    fn = getattr(lib, f"launch_{step.name}")
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)] + [ctypes.c_int] * 6
    fn.restype = None
    fn(ptrs, *step.grid, step.threads, step.smem_bytes, mode)
    error = lib.mirage_last_error()
    if error:
        raise EmulationError(f"{step.name}: {error.decode()}")
