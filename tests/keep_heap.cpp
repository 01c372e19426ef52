// Linked into every test executable and corpus replay (backscroll_test_common in
// tests/CMakeLists.txt): a test process keeps the memory it frees in its heap instead of handing it
// back to the kernel.
//
// Tests build and drop big objects in loops: a screen model of 120x40 cells is ~0.8 MB, and a
// snapshot or a resized grid can be as large. By default glibc maps each block over 128 KiB on
// its own and trims the heap's top once 128 KiB of it is free, so every such object came back
// as fresh pages. Page faults are slow on virtual machines: the snapshot contract tests spent
// about 85% of their time in them (27 s against 3 s for the torture streams, 2026-12-07).
//
// Only the test process itself: the engines and programs a test starts keep glibc's defaults,
// as users run them. A test that bounds its own resident memory (MirrorHostile) only gets
// stricter, since freed memory now stays resident.
#include <malloc.h>

namespace {

const bool kHeapKept = [] {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);   // glibc's largest: blocks up to 32 MiB come from the heap
  mallopt(M_TRIM_THRESHOLD, 256 << 20);  // the heap's top is trimmed past 256 MiB free
  return true;
}();

}  // namespace
