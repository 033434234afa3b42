#!/usr/bin/env bash
# The drift check a refresh runs on a host: is what gpu-workers placed and did still there? The
# HostDriftGuard's command carries it (`bash -c SCRIPT`: it is no file on the host), and its
# stdin holds one line per thing to check (components/lib/render/drift-check.ts writes them):
#   file SHA256 PATH   PATH holds the bytes of SHA256; with "-" for SHA256, only that PATH is there
#                      (a secret's content is not known to the program).
#   check COMMAND      a step's own check: exits 0 while what the step did is still in place.
# It prints one `drift: ...` line per difference, nothing when the host is as converged, and
# exits 0 either way: a difference is an answer, not a failure.
set -u

check_line() {
  local kind=${1%% *} rest=${1#* } sum path out
  case $kind in
    file)
      sum=${rest%% *}
      path=${rest#* }
      if [ ! -e "$path" ]; then
        echo "drift: $path is missing"
      elif [ "$sum" != - ] && [ "$(sha256sum <"$path" | cut -d' ' -f1)" != "$sum" ]; then
        echo "drift: $path was changed"
      fi
      ;;
    check)
      out=$(eval "$rest" 2>&1 </dev/null) || echo "drift: $(printf '%s' "$out" | tail -n 1)"
      ;;
    *) echo "drift-check: unknown line: $1" >&2 ;;
  esac
}

# Reads the lines of its stdin.
check_all() {
  local line
  while IFS= read -r line; do check_line "$line"; done
}
check_all
exit 0
