// Command bbolt-kv is a workload and a checker for flushproof crashlab:
// an embedded Go key-value store (go.etcd.io/bbolt) that acknowledges
// every key once its transaction committed.
//
//	go build -o /tmp/bbolt-kv ./examples/crashlab/bbolt-kv
//	flushproof crashlab -check '/tmp/bbolt-kv check' -- /tmp/bbolt-kv put -keys 50
//	flushproof crashlab -check '/tmp/bbolt-kv check' -- /tmp/bbolt-kv put -keys 50 -nosync
//
// put commits one key a transaction into kv.db in the working directory
// (the fresh file system) and acknowledges it with crashlab/ack. By
// default bbolt syncs each commit (fdatasync of its data, then of its
// meta page): nothing acknowledged may be lost. -nosync sets bbolt's
// NoSync, so a commit returns with its pages in the page cache: the
// negative control, which must be caught losing acknowledged keys.
//
// check reads the acknowledged "KEY VALUE" lines of its standard input
// and, if there is any, opens the database in the crash state (bbolt
// picks the newest valid meta page), runs bbolt's own consistency check
// and reads every acknowledged key back; it exits 1 on the first thing
// missing or wrong. With nothing acknowledged anything passes.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/flushproof/flushproof/crashlab/ack"
)

var bucket = []byte("kv")

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bbolt-kv put [-keys N] [-nosync] | bbolt-kv check")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "put":
		err = put(os.Args[2:])
	case "check":
		err = check()
	default:
		err = fmt.Errorf("unknown command %q: want put or check", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bbolt-kv:", err)
		os.Exit(1)
	}
}

func put(args []string) error {
	fs := flag.NewFlagSet("put", flag.ContinueOnError)
	keys := fs.Int("keys", 20, "keys to put, one transaction each")
	nosync := fs.Bool("nosync", false, "bbolt's NoSync: commits are not synced (the negative control)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	db, err := bolt.Open("kv.db", 0o644, &bolt.Options{NoSync: *nosync})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	}); err != nil {
		return err
	}
	// The file's directory entry: durable before any key is acknowledged.
	if err := syncDir("."); err != nil {
		return err
	}
	for i := 1; i <= *keys; i++ {
		k, v := fmt.Sprintf("key%04d", i), fmt.Sprintf("value-%d", i)
		if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put([]byte(k), []byte(v)) }); err != nil {
			return err
		}
		if err := ack.Value(k, v); err != nil {
			return err
		}
	}
	return nil
}

func syncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func check() error {
	var acks [][2]string
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		acks = append(acks, [2]string{k, v})
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(acks) == 0 {
		return nil // nothing was promised: a database not made yet is fine
	}
	db, err := bolt.Open("kv.db", 0o644, &bolt.Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("open (%d keys acknowledged): %w", len(acks), err)
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			return fmt.Errorf("consistency: %w", errors.Join(errs...))
		}
		b := tx.Bucket(bucket)
		if b == nil {
			return fmt.Errorf("%d keys acknowledged, but the bucket is gone", len(acks))
		}
		for _, a := range acks {
			got := b.Get([]byte(a[0]))
			if got == nil {
				return fmt.Errorf("%s acknowledged with %q, missing", a[0], a[1])
			}
			if string(got) != a[1] {
				return fmt.Errorf("%s acknowledged with %q, holds %q", a[0], a[1], got)
			}
		}
		return nil
	})
}
