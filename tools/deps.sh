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
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# "file<TAB>included folder" for every project include of every tracked source file.
sources() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -- '*.cpp' '*.hpp'
  else
    find shm engine tools bench fuzz tests -name node_modules -prune -o \
      \( -name '*.cpp' -o -name '*.hpp' \) -print
  fi
}

edges() {
  sources | while read -r file; do
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file" |
      while read -r included; do
        [ -f "$included" ] || continue  # a library's header or one beside the file
        printf '%s\t%s\n' "$file" "$(dirname "$included")"
      done
  done
}

# Whether including `to` from `file` breaks a rule (prints the reason).
broken() {
  local file=$1 to=$2 from
  from=$(dirname "$file")
  case "$to" in tests|tests/*) case "$from" in tests|tests/*) ;; *) echo "only tests/ includes tests/" ;; esac ;; esac
  case "$to" in engine|engine/*) ;; *) return 0 ;; esac
  case "$to" in engine/term|engine/term/*) return 0 ;; esac
  case "$from" in
    engine/term|engine/term/*) echo "engine/term/ includes only itself from engine/" ;;
    tools|tools/*|bench|bench/*) echo "tools/ and bench/ include only engine/term/ from engine/" ;;
    fuzz|fuzz/*) case "$to" in engine/store|engine/store/*) ;; *)
      echo "fuzz/ includes only engine/term/ and engine/store/ from engine/" ;; esac ;;
  esac
}

if [ "${1:-}" = "--check" ]; then
  status=0
  # docs/code-map.md quotes the folder list: it must be this tree's.
  if ! diff -u <(sed -n '/^bench:/,/^tools\/bridge\/client:/p' docs/code-map.md) <("$0") >&2; then
    echo "docs/code-map.md's folder list is out of date: put tools/deps.sh's output in it" >&2
    status=1
  fi
  while IFS=$'\t' read -r file to; do
    reason=$(broken "$file" "$to")
    if [ -n "$reason" ]; then
      echo "$file includes $to/: $reason"
      status=1
    fi
  done < <(edges)
  exit $status
fi

edges | awk -F'\t' '{
    n = split($1, parts, "/"); from = parts[1]; for (i = 2; i < n; ++i) from = from "/" parts[i]
    if ($2 != from) seen[from] = seen[from] " " $2; else if (!(from in seen)) seen[from] = ""
  } END { for (f in seen) print f "\t" seen[f] }' |
  sort | while IFS=$'\t' read -r from list; do
    printf '%s:%s\n' "$from" "$(tr ' ' '\n' <<<"$list" | sed '/^$/d' | sort -u | sed 's/^/ /' | tr -d '\n')"
  done
