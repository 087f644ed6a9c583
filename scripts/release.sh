#!/usr/bin/env bash
# Build the release archive: dist/kairos-<version>-<target>.tar.gz holding the stripped
# binary, README, LICENSE, docs/deploy.md, the example kairos.toml (every setting commented),
# the hardened systemd unit, the Grafana dashboard and the Prometheus alert rules; and its
# .sha256 beside it.
#
# Fails if the stripped binary is 30 MB (30,000,000 bytes) or more, if `systemd-analyze
# verify` (when installed) finds anything to say about the unit, or (x86_64 Linux) if the idle
# path's functions are not side by side (crates/cli/link/idle-symbols.txt; KAIROS_LINK_ORDER=0
# releases without).
#
# Usage: scripts/release.sh
# Environment: TARGET (a rustc target triple; default the host's), CARGO_TARGET_DIR,
# STRIP (default `strip`; set it for a cross target, e.g. aarch64-linux-gnu-strip).
# On a shared machine: nice -n 19 scripts/release.sh
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf '[release] %s\n' "$*"; }
die() { printf '[release] error: %s\n' "$*" >&2; exit 1; }

max_bytes=30000000
version="$(cargo pkgid -p kairos | sed 's/.*[#@]//')"
host="$(rustc -vV | sed -n 's/^host: //p')"
target="${TARGET:-$host}"
target_dir="${CARGO_TARGET_DIR:-target}"
strip="${STRIP:-strip}"

log "building kairos $version for $target"
if [ "$target" = "$host" ]; then
  cargo build --release --locked -p kairos
  bin="$target_dir/release/kairos"
else
  cargo build --release --locked -p kairos --target "$target"
  bin="$target_dir/$target/release/kairos"
fi
[ -x "$bin" ] || die "$bin was not built"

# The idle path's functions must sit side by side (crates/cli/build.rs), or an idle server
# holds about 24 MB instead of 14: 98 in 100 of the listed functions present, within 8 MB. A
# listed local copy (`name.10363`) counts when a copy numbered within SUFFIX_DRIFT of it is
# there, the rule build.rs links by (crates/cli/link/idle_order.rs).
if [ "$target" = x86_64-unknown-linux-gnu ] && [ "${KAIROS_LINK_ORDER:-}" != 0 ]; then
  drift="$(sed -n 's/^pub const SUFFIX_DRIFT: u32 = \([0-9]*\);$/\1/p' crates/cli/link/idle_order.rs)"
  [ -n "$drift" ] || die "no SUFFIX_DRIFT in crates/cli/link/idle_order.rs"
  read -r listed found span < <(nm --defined-only -t d "$bin" | awk -v drift="$drift" '
    NR == FNR { if ($0 !~ /^#/ && NF && !($1 in want)) { want[$1] = 1; listed++ } next }
    $2 ~ /^[tTwW]$/ && !($3 in at) { at[$3] = $1 + 0 }
    END {
      for (w in want) {
        a = ""
        if (w in at) a = at[w]
        else if (match(w, /\.[0-9]+$/)) {
          base = substr(w, 1, RSTART - 1); n = substr(w, RSTART + 1) + 0
          for (d = 1; d <= drift && a == ""; d++) {
            if ((base "." (n + d)) in at) a = at[base "." (n + d)]
            else if (n >= d && (base "." (n - d)) in at) a = at[base "." (n - d)]
          }
        }
        if (a != "") { found++; if (lo == "" || a < lo) lo = a; if (a > hi) hi = a }
      }
      printf "%d %d %d\n", listed, found, hi - lo
    }' crates/cli/link/idle-symbols.txt -)
  log "idle functions: $found of $listed listed, spanning $span bytes"
  [ $((found * 100)) -ge $((listed * 98)) ] && [ "$span" -lt $((8 << 20)) ] \
    || die "the idle functions are not side by side: run scripts/idle-symbols.sh, or set KAIROS_LINK_ORDER=0"
fi

name="kairos-$version-$target"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
root="$stage/$name"
mkdir -p "$root/grafana" "$root/prometheus"

cp "$bin" "$root/kairos"
"$strip" "$root/kairos"
size="$(stat -c %s "$root/kairos")"
log "stripped binary: $size bytes ($(awk -v b="$size" 'BEGIN { printf "%.1f", b / 1e6 }') MB; limit $max_bytes bytes)"
[ "$size" -lt "$max_bytes" ] || die "the stripped binary is $size bytes: it must stay under $max_bytes"
if [ "$target" = "$host" ]; then
  "$root/kairos" --version >/dev/null || die "the stripped binary does not run"
fi

install -m 0644 README.md LICENSE "$root/"
install -m 0644 docs/deploy.md "$root/deploy.md"
install -m 0644 packaging/kairos.toml packaging/kairos.service "$root/"
install -m 0644 docs/grafana/kairos.json "$root/grafana/kairos.json"
install -m 0644 docs/grafana/alerts.yml "$root/prometheus/kairos-alerts.yml"

# The unit as installed runs /usr/local/bin/kairos; verify it against the binary just built.
if command -v systemd-analyze >/dev/null 2>&1; then
  unit_dir="$stage/unit"
  mkdir -p "$unit_dir"
  sed "s#/usr/local/bin/kairos#$root/kairos#" packaging/kairos.service >"$unit_dir/kairos.service"
  out="$(systemd-analyze verify "$unit_dir/kairos.service" 2>&1)" ||
    die "systemd-analyze verify failed: $out"
  [ -z "$out" ] || die "systemd-analyze verify reported: $out"
  log "systemd-analyze verify: kairos.service is clean"
else
  log "systemd-analyze not found: skipping the check of kairos.service"
fi

mkdir -p dist
archive="dist/$name.tar.gz"
tar -C "$stage" --owner=0 --group=0 --numeric-owner -czf "$archive" "$name"
(cd dist && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
log "wrote $archive ($(stat -c %s "$archive") bytes) and $archive.sha256"
tar -tzf "$archive" | sed 's/^/  /'
