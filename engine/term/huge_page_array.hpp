// HugePageArray<T>: a fixed-size array of a trivial type for the mirror's large, long-lived
// buffers (the history's ring), on anonymous memory with transparent huge pages asked for.
//
// Why: on the virtual machines backscroll runs on, touching fresh 4 KiB pages costs about 3 ms
// of CPU per MiB (a fault per page), so a mirror filling its 16 MiB history paid ~50 ms; in
// 2 MiB pages the same fill costs ~1.5 ms (docs/profiles/scrollback-ring.md). Below 2 MiB, or
// where the kernel gives no huge pages (transparent_hugepage=never), it is ordinary memory.
// Elements start uninitialized, as with make_unique_for_overwrite.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace backscroll::term {

template <class T>
class HugePageArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;

  HugePageArray() = default;
  explicit HugePageArray(std::size_t n) : size_(n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) {
      small_ = std::make_unique_for_overwrite<T[]>(n);
      data_ = small_.get();
      return;
    }
    // One huge page more than needed, to start at a huge page boundary (a kernel before 6.7
    // does not align anonymous mappings itself).
    mapped_ = (bytes + kHugePage - 1) / kHugePage * kHugePage + kHugePage;
    map_ = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map_ == MAP_FAILED) throw std::bad_alloc();
    const auto at = (reinterpret_cast<std::uintptr_t>(map_) + kHugePage - 1) & ~(kHugePage - 1);
    ::madvise(reinterpret_cast<void*>(at), mapped_ - kHugePage, MADV_HUGEPAGE);  // a hint
    data_ = reinterpret_cast<T*>(at);
  }
  ~HugePageArray() { release(); }
  HugePageArray(HugePageArray&& o) noexcept { *this = std::move(o); }
  HugePageArray& operator=(HugePageArray&& o) noexcept {
    if (this != &o) {
      release();
      small_ = std::move(o.small_);
      map_ = std::exchange(o.map_, nullptr);
      mapped_ = std::exchange(o.mapped_, 0);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  void release() noexcept {
    if (map_ != nullptr) ::munmap(map_, mapped_);
    small_.reset();
    map_ = nullptr;
    data_ = nullptr;
    size_ = 0;
  }

  std::unique_ptr<T[]> small_;
  void* map_ = nullptr;
  std::size_t mapped_ = 0;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace backscroll::term
