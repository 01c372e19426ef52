#!/usr/bin/env bash
# Which folders each folder's sources include (docs/code-map.md keeps its output), and the
# layering rules the tree keeps (docs/decisions.md 28):
#   - engine/term/ includes nothing from engine/ outside engine/term/;
#   - tools/ and bench/ include nothing from engine/ outside engine/term/; fuzz/ may also
#     include engine/store/ (its transcript target fuzzes the store);
#   - nothing includes tests/ except tests/.
#   tools/deps.sh           prints "folder: folders it includes", one line per folder
#   tools/deps.sh --check   prints the includes that break a rule, and a docs/code-map.md whose
#                           folder list differs from the tree's; exit status 1 if any
# One awk pass over every source file (a shell loop per include took ~25 s: it runs in ctest).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

sources() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -- '*.cpp' '*.hpp'
  else
    find shm engine tools bench fuzz tests -name node_modules -prune -o \
      \( -name '*.cpp' -o -name '*.hpp' \) -print
  fi
}

# Reads the source list (first input), then every source: "mode" is "edges" ("folder<TAB>
# included folder" per include, and "folder<TAB>" per folder) or "check" (one line per include
# that breaks a rule, exit status 1 if any).
scan() {
  local list
  list=$(sources)
  # shellcheck disable=SC2086  # the tracked paths have no spaces
  awk -v mode="$1" '
    function folder(path) { sub(/\/[^\/]*$/, "", path); return path }
    function under(path, top) { return path == top || index(path, top "/") == 1 }
    # Why including folder `to` from folder `from` breaks a rule ("" when it does not).
    function broken(from, to) {
      if (under(to, "tests") && !under(from, "tests")) return "only tests/ includes tests/"
      if (!under(to, "engine") || under(to, "engine/term")) return ""
      if (under(from, "engine/term")) return "engine/term/ includes only itself from engine/"
      if (under(from, "tools") || under(from, "bench"))
        return "tools/ and bench/ include only engine/term/ from engine/"
      if (under(from, "fuzz") && !under(to, "engine/store"))
        return "fuzz/ includes only engine/term/ and engine/store/ from engine/"
      return ""
    }
    FILENAME == "-" { known[$0] = 1; next }
    FNR == 1 { from = folder(FILENAME); if (mode == "edges") print from "\t" }
    /^[[:space:]]*#[[:space:]]*include[[:space:]]*"/ {
      included = $0
      sub(/^[^"]*"/, "", included); sub(/".*/, "", included)
      if (!(included in known)) next  # a library header or one beside the file
      to = folder(included)
      if (mode == "check") {
        reason = broken(from, to)
        if (reason != "") { print FILENAME " includes " to "/: " reason; status = 1 }
      } else if (to != from) {
        print from "\t" to
      }
    }
    END { exit status }' - $list <<<"$list"
}

folders() {
  scan edges | sort -u | awk -F'\t' '
    $1 != last { if (NR > 1) print line; line = $1 ":"; last = $1 }
    $2 != "" { line = line " " $2 }
    END { if (NR > 0) print line }'
}

if [ "${1:-}" = "--check" ]; then
  status=0
  # docs/code-map.md quotes the folder list: it must be this tree's.
  if ! diff -u <(sed -n '/^bench:/,/^tools\/bridge\/client:/p' docs/code-map.md) <(folders) >&2; then
    echo "docs/code-map.md's folder list is out of date: put tools/deps.sh's output in it" >&2
    status=1
  fi
  scan check || status=1
  exit $status
fi
folders
