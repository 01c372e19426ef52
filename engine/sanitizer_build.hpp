// Which sanitizer this build runs under (tools/sanitize.sh), for the few places that must know:
// GCC says so with __SANITIZE_*__, clang with __has_feature.
#pragma once

#if defined(__has_feature)
#define BACKSCROLL_HAS_FEATURE(name) __has_feature(name)
#else
#define BACKSCROLL_HAS_FEATURE(name) 0
#endif

namespace backscroll {

#if defined(__SANITIZE_THREAD__) || BACKSCROLL_HAS_FEATURE(thread_sanitizer)
inline constexpr bool kThreadSanitizerBuild = true;
#else
inline constexpr bool kThreadSanitizerBuild = false;
#endif
#if defined(__SANITIZE_ADDRESS__) || BACKSCROLL_HAS_FEATURE(address_sanitizer)
inline constexpr bool kAddressSanitizerBuild = true;
#else
inline constexpr bool kAddressSanitizerBuild = false;
#endif

}  // namespace backscroll
