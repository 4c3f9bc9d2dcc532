"""The PTX the generated kernels reach through inline assembly, as small device functions: asynchronous copies
(``cp.async``, ``codegen.pipeline``) and tensor-core products (``ldmatrix`` + ``mma.sync``, ``codegen.matmul``).

Each group is guarded by a macro, so that the CPU emulation (``codegen.emulate``) can bring its own versions of
the same functions: there, a copy lands when it is waited for (a read before the wait sees poison), and a
fragment holds the values its lane needs rather than packed registers.
"""

from __future__ import annotations

ASYNC_COPIES = r"""#ifndef MIRAGE_LAB_SMEM_ADDRESS
#define MIRAGE_LAB_SMEM_ADDRESS
// the 32-bit shared-memory address of a generic pointer into shared memory (PTX, so no header is needed)
__device__ __forceinline__ unsigned mirage_smem_address(const void* p) {
  unsigned a;
  asm("{ .reg .u64 s; cvta.to.shared.u64 s, %1; cvt.u32.u64 %0, s; }" : "=r"(a) : "l"(p));
  return a;
}
#endif
#ifndef MIRAGE_LAB_ASYNC_COPY  // sm_80+: global -> shared without registers (LDGSTS)
#define MIRAGE_LAB_ASYNC_COPY
// B bytes (16: bypassing L1, .cg; 8 or 4: .ca) from global memory to shared memory, in this thread's open group
template <int B> __device__ __forceinline__ void mirage_cp_async(void* smem, const void* gmem) {
  const unsigned s = mirage_smem_address(smem);
  if (B == 16) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(s), "l"(gmem) : "memory");
  else asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" :: "r"(s), "l"(gmem), "n"(B) : "memory");
}
__device__ __forceinline__ void mirage_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// wait until at most N of this thread's committed groups are still in flight
template <int N> __device__ __forceinline__ void mirage_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}
#endif
"""

TENSOR_CORES = r"""#ifndef MIRAGE_LAB_MMA  // sm_80+: mma.sync.m16n8k16, fp16 in, fp32 accumulators
#define MIRAGE_LAB_MMA
struct mirage_frag_a { unsigned x[4]; };
struct mirage_frag_b { unsigned x[2]; };
// (ldmatrix reads shared memory the compiler cannot see: "memory" keeps it after the stores and barriers before it)
// A's 16x16 fragment at a (row pitch lda halves); rows from `rows` on read row rows - 1 (small M, padded)
__device__ __forceinline__ void mirage_load_a(mirage_frag_a& f, const __half* a, int lda, int rows) {
  const int lane = threadIdx.x % 32, r = lane % 16 < rows ? lane % 16 : rows - 1;
  const unsigned s = mirage_smem_address(a + r * lda + lane / 16 * 8);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]) : "r"(s) : "memory");
}
// B's 16x8 fragment at b (row-major K x N, row pitch ldb halves), transposed into mma's column layout
__device__ __forceinline__ void mirage_load_b(mirage_frag_b& f, const __half* b, int ldb) {
  const unsigned s = mirage_smem_address(b + (threadIdx.x % 16) * ldb);
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(f.x[0]), "=r"(f.x[1]) : "r"(s) : "memory");
}
// c += a * b; lane l holds c at rows l/4 (c[0], c[1]) and l/4 + 8 (c[2], c[3]), columns 2*(l%4) and the next
__device__ __forceinline__ void mirage_mma(float (&c)[4], const mirage_frag_a& a, const mirage_frag_b& b) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(b.x[0]), "r"(b.x[1]));
}
#endif
"""
