#!/usr/bin/env bash
# The binary's stamp follows the checkout on incremental builds (Plugins/BuildStamp): a tracked
# file edited makes the next build say "modified", undoing the edit makes the one after it clean,
# both with the same SwiftPM plan (no re-planning in between, where a prebuild command would run).
# Skipped when the checkout is not a clean git checkout (nothing to compare the stamp with).
set -euo pipefail
cd "$(dirname "$0")/.."
head=$(git rev-parse HEAD 2>/dev/null) || { echo "build stamp: skipped: not a git checkout"; exit 0; }
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "build stamp: skipped: the checkout has uncommitted changes"; exit 0
fi
version() { swift build --product continual > /dev/null && .build/debug/continual --version; }
saved=$(mktemp)
cp -p README.md "$saved"
trap 'cp -p "$saved" README.md; rm -f "$saved"' EXIT
expect() {  # expect WHAT VERSION
    case $2 in *"built from ${head:0:12}$1)") echo "build stamp: $2" ;;
               *) echo "FAIL: build stamp: expected 'built from ${head:0:12}$1', got: $2"; exit 1 ;; esac
}
expect "" "$(version)"
echo >> README.md
expect " (modified)" "$(version)"
cp -p "$saved" README.md
expect "" "$(version)"
