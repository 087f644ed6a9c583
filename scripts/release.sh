#!/usr/bin/env bash
# Build the release archive: dist/kairos-<version>-<target>.tar.gz holding the stripped
# binary, README, LICENSE, docs/deploy.md, the example kairos.toml (every setting commented),
# the hardened systemd unit, the Grafana dashboard and the Prometheus alert rules; and its
# .sha256 beside it.
#
# Builds with the `dist` profile (Cargo.toml: the release profile plus whole-program LTO and
# one codegen unit), into target/dist/. Fails if the stripped binary is 30 MB (30,000,000
# bytes) or more, or if `systemd-analyze verify` (when installed) finds anything to say about
# the unit.
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
  cargo build --profile dist --locked -p kairos
  bin="$target_dir/dist/kairos"
else
  cargo build --profile dist --locked -p kairos --target "$target"
  bin="$target_dir/$target/dist/kairos"
fi
[ -x "$bin" ] || die "$bin was not built"

# Linux with glibc: relative relocations packed (crates/cli/build.rs), as
# crates/cli/tests/binary_layout.rs checks for test builds.
case "$target" in *-linux-gnu*)
  if [ "${KAIROS_LINK_RELR:-}" != 0 ] && command -v readelf >/dev/null 2>&1; then
    case "$(readelf -SW "$bin")" in *' .relr.dyn '*) ;;
      *) die "$bin has no .relr.dyn: relative relocations were not packed" ;;
    esac
    log "relative relocations packed (.relr.dyn)"
  fi
esac

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
