#!/usr/bin/env bash
# The library code that README.md and docs/first-hour.md show is the downstream example crate's
# (examples/downstream), which CI builds and runs. Each region of its sources marked
#   // docs: begin NAME (PAGE...)   ...   // docs: end NAME      (or with `#` in Cargo.toml)
# must appear in every PAGE verbatim, so the pages cannot drift from code that runs.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
regions=0
for src in examples/downstream/Cargo.toml examples/downstream/src/*.rs; do
  while IFS= read -r begin; do
    name=$(sed -E 's/.*docs: begin ([A-Za-z0-9_-]+) \((.*)\).*/\1/' <<<"$begin")
    pages=$(sed -E 's/.*docs: begin ([A-Za-z0-9_-]+) \((.*)\).*/\2/' <<<"$begin")
    region=$(mktemp)
    awk -v name="$name" '
      $0 ~ "docs: end " name "$" { inside = 0 }
      inside { print }
      $0 ~ "docs: begin " name " " { inside = 1 }' "$src" >"$region"
    if [ ! -s "$region" ]; then
      echo "$src: region '$name' is empty or has no end marker" >&2
      status=1
    fi
    for page in $pages; do
      # The region's text, newlines included, must be a substring of the page.
      if ! awk 'FNR == NR { r = r $0 "\n"; next } { t = t $0 "\n" }
                END { exit index(t, r) ? 0 : 1 }' "$region" "$page"; then
        echo "$page does not quote region '$name' of $src verbatim" >&2
        status=1
      fi
    done
    rm -f "$region"
    regions=$((regions + 1))
  done < <(grep -E 'docs: begin [A-Za-z0-9_-]+ \(' "$src" || true)
done
echo "docs regions checked: $regions"
exit $status
