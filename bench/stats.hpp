// Order statistics of benchmark samples.
#pragma once

#include <algorithm>
#include <vector>

namespace backscroll::bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Percentiles {
  double p50 = 0, p99 = 0, max = 0;
};

// Nearest-rank percentiles (p99 of 100 samples is the largest).
inline Percentiles percentiles(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return {};
  auto at = [&](double q) {
    return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
  };
  return {at(0.50), at(0.99), v.back()};
}

}  // namespace backscroll::bench
