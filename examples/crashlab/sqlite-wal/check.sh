#!/bin/sh
# The checker of `flushproof crashlab` for workload.sh: it runs in each
# crash state, in the recovered file system, with the acknowledged rows on
# its standard input ("KEY VALUE" lines). Opening the database runs
# SQLite's own recovery (the WAL is replayed); then the database must be
# consistent and hold every acknowledged row.
set -u
ok=$(sqlite3 db 'PRAGMA integrity_check' 2>&1) || { echo "open: $ok"; exit 1; }
[ "$ok" = ok ] || { echo "integrity_check: $ok"; exit 1; }
while read -r k v; do
	got=$(sqlite3 db "SELECT v FROM t WHERE k=$k" 2>&1) || { echo "row $k: $got"; exit 1; }
	[ "$got" = "$v" ] || { echo "row $k: acknowledged $v, found '$got'"; exit 1; }
done
