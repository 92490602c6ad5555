#!/bin/sh
# The workload of `flushproof crashlab`: SQLite in WAL mode, one row per
# transaction, each acknowledged once sqlite3 has committed it.
#
#   flushproof crashlab -check examples/crashlab/sqlite-wal/check.sh -- examples/crashlab/sqlite-wal/workload.sh FULL
#
# $1 is PRAGMA synchronous: FULL (and NORMAL) must lose nothing; OFF is the
# negative control (a commit returns before the WAL is synced) and must be
# caught losing acknowledged rows. $2 is the number of rows (default 20).
# It runs in the root of the fresh file system; an acknowledgement is a
# line "ack KEY VALUE" on file descriptor 3, answered on descriptor 4.
set -eu
mode=${1:-FULL}
rows=${2:-20}
sqlite3 db "PRAGMA journal_mode=WAL; CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT);" >/dev/null
# The database file and the directory entries of the new files: made
# durable before any row is acknowledged.
sync db .
i=1
while [ "$i" -le "$rows" ]; do
	sqlite3 db "PRAGMA synchronous=$mode; INSERT INTO t VALUES($i, 'v$i');"
	echo "ack $i v$i" >&3
	read -r _ <&4 # crashlab's answer: the promise is stamped where it was made
	i=$((i + 1))
done
