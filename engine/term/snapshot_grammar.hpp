// The fixed grammar of snapshot_v1 (docs/snapshot.md, "Grammar"): what a snapshot may contain,
// checked without trusting the writer. Used by the tests and the fuzzer; cheap enough to run
// on every snapshot. Anything else (OSC other than the title, DCS, APC, PM, SOS, 8-bit C1,
// other control characters or escape sequences, invalid UTF-8) is rejected.
#pragma once

#include <string>
#include <string_view>

namespace backscroll::term {

// True when `bytes` is a sequence of: printable UTF-8 (no C0, DEL or C1 code points); CR, LF,
// HT, BS, SO, SI; ESC 7, ESC 8, ESC M, ESC =, ESC >, ESC ( F, ESC ) F (F in 0x30-0x7e);
// OSC 2 ; title ST
// (title printable UTF-8, at most 256 bytes); and these CSI sequences with decimal
// parameters: SGR (m, ';' or ':' separated, at most 16 parameters), CUP (H), CUU/CUD/CUF/CUB
// (A B C D), CHA (G), VPA (d), ED (J), EL (K), ECH (X), ICH (@), DCH (P), DECSTBM (r), SM/RM
// of IRM (4 h/l), DEC private set/reset of one allowed mode (? n h/l), DECSCUSR (n SP q).
// On failure, `why` (if given) names the first offending byte.
bool is_safe_snapshot(std::string_view bytes, std::string* why = nullptr);

}  // namespace backscroll::term
