# The libFuzzer targets (fuzz/<target>_fuzz.cpp) and each one's input bound (the header comment
# of its source says why). Sourced by tools/fuzz.sh (the long runs) and tools/test.sh (CI's
# short fixed-seed runs).
fuzz_targets=(frame_decoder ring_header vt_scanner mirror transcript plain_lines)

fuzz_max_len() {
  case "$1" in
    frame_decoder|mirror|plain_lines) echo 4096 ;;
    ring_header) echo 512 ;;
    transcript) echo 1024 ;;
    vt_scanner) echo 16384 ;;
    *) echo "unknown fuzz target '$1' (one of: ${fuzz_targets[*]})" >&2; return 2 ;;
  esac
}
