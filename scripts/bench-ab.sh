#!/usr/bin/env bash
# Two kairos builds side by side with the peers, in one run (docs/benchmarks.md, issue 14):
# two rounds of compare.sh's peer commands (20,000 no-op jobs, 10 workers) between the two
# builds, then `kairos bench` at the defaults, --concurrency 2000, --webhook and --backlog.
# Each line: a label and the JSON line the program printed last.
#   BEFORE=/path/to/kairos AFTER=/path/to/kairos PEERS_TARGET_DIR=/path scripts/bench-ab.sh
# Needs release builds of both, the peers built (../shared/peers-bench/compare.sh builds them
# into $PEERS_TARGET_DIR/release), and PostgreSQL at 127.0.0.1:5432.
set -u
PG=${KAIROS_PEERS_PG:-postgres://postgres@127.0.0.1:5432/postgres}
T=${PEERS_TARGET_DIR:-$PWD/target/peers}/release
: "${BEFORE:?set BEFORE to a kairos binary}" "${AFTER:?set AFTER to a kairos binary}"
DB=$(mktemp -d); trap 'rm -rf "$DB"' EXIT
last() { tail -n 1; }
load() { cut -d' ' -f1 /proc/loadavg; }
for r in 1 2; do
  echo "# round $r, load $(load)"
  "$T/bench-effectum" throughput "$DB/e$r.db" 20000 10 batch 2>/dev/null | last
  for b in BEFORE AFTER; do echo "$b sqlite10 $("${!b}" bench --jobs 20000 --concurrency 10 2>/dev/null | last)"; done
  "$T/bench-graphile" throughput "${PG%/*}" 20000 10 batch tuned 2>/dev/null | last
  for b in BEFORE AFTER; do echo "$b pg10 $("${!b}" bench --jobs 20000 --concurrency 10 --database-url "$PG" 2>/dev/null | last)"; done
done
echo "# defaults, 100,000 jobs, load $(load)"
for b in BEFORE AFTER; do
  echo "$b sqlite100k $("${!b}" bench --jobs 100000 2>/dev/null | last)"
  echo "$b pg100k $("${!b}" bench --jobs 100000 --database-url "$PG" 2>/dev/null | last)"
done
echo "AFTER sqlite100k-c2000 $("$AFTER" bench --jobs 100000 --concurrency 2000 2>/dev/null | last)"
echo "AFTER pg100k-c2000 $("$AFTER" bench --jobs 100000 --concurrency 2000 --database-url "$PG" 2>/dev/null | last)"
echo "# webhooks, load $(load)"
echo "AFTER webhook-sqlite $("$AFTER" bench --webhook --jobs 10000 2>/dev/null | last)"
echo "AFTER webhook-pg $("$AFTER" bench --webhook --jobs 10000 --database-url "$PG" 2>/dev/null | last)"
echo "# backlog, load $(load)"
echo "AFTER sqlite10k $("$AFTER" bench --jobs 10000 2>/dev/null | last)"
echo "AFTER sqlite10k-backlog $("$AFTER" bench --jobs 10000 --backlog 1000000 2>/dev/null | last)"
echo "AFTER pg10k $("$AFTER" bench --jobs 10000 --database-url "$PG" 2>/dev/null | last)"
echo "AFTER pg10k-backlog $("$AFTER" bench --jobs 10000 --backlog 1000000 --database-url "$PG" 2>/dev/null | last)"
echo "# end, load $(load)"
