// Package ack is the program's side of flushproof crashlab's
// acknowledgement protocol, for Go programs: after your program has made
// something durable (its fsync returned, its transaction committed), it
// says so, and crashlab holds every crash state cut after that point to
// it (docs/crashlab.md, "Your program").
//
//	if err := f.Sync(); err != nil { ... }
//	ack.Value("orders/42", "paid")
//
// Each call returns once crashlab has stamped the acknowledgement with the
// log's position, so the program's next write comes after it. Outside
// crashlab (FLUSHPROOF_ACK_FD unset) every call does nothing and returns
// nil, so the same binary runs anywhere.
package ack

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// EnvFD names the environment variable that holds the descriptor crashlab
// reads acknowledgements from; EnvReplyFD the one it answers each on,
// once it has stamped it with the log's position.
const (
	EnvFD      = "FLUSHPROOF_ACK_FD"
	EnvReplyFD = "FLUSHPROOF_ACK_REPLY_FD"
)

var (
	once  sync.Once
	mu    sync.Mutex
	out   *os.File
	reply *bufio.Reader // nil: no answers to wait for
	bad   error
)

func open() {
	s, ok := os.LookupEnv(EnvFD)
	if !ok {
		return
	}
	fd, err := strconv.Atoi(s)
	if err != nil || fd < 0 {
		bad = fmt.Errorf("ack: %s=%q is not a file descriptor", EnvFD, s)
		return
	}
	out = os.NewFile(uintptr(fd), "flushproof-ack")
	if s, ok := os.LookupEnv(EnvReplyFD); ok {
		rfd, err := strconv.Atoi(s)
		if err != nil || rfd < 0 {
			bad = fmt.Errorf("ack: %s=%q is not a file descriptor", EnvReplyFD, s)
			return
		}
		reply = bufio.NewReader(os.NewFile(uintptr(rfd), "flushproof-ack-reply"))
	}
}

// Key acknowledges key: it is durable. key is one word: no space and no
// control character.
func Key(key string) error { return write(key, "", false) }

// Value acknowledges key with value: key holds value durably. value may
// hold spaces, not newlines or other control characters but tab.
func Value(key, value string) error { return write(key, value, true) }

func write(key, value string, hasValue bool) error {
	once.Do(open)
	if bad != nil {
		return bad
	}
	if out == nil {
		return nil
	}
	if key == "" || strings.IndexFunc(key, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("ack: key %q: want one word without spaces or control characters", key)
	}
	if strings.IndexFunc(value, func(r rune) bool { return r != '\t' && unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("ack: the value of %q has a control character", key)
	}
	line := "ack " + key
	if hasValue {
		line += " " + value
	}
	mu.Lock()
	defer mu.Unlock()
	// One write per line: lines of concurrent callers never interleave
	// (a pipe write of up to PIPE_BUF bytes is atomic).
	if _, err := out.WriteString(line + "\n"); err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	if reply != nil {
		// Wait until crashlab has stamped the line: what the program does
		// next comes after it in the log.
		if _, err := reply.ReadString('\n'); err != nil {
			return fmt.Errorf("ack: waiting for crashlab's answer: %w", err)
		}
	}
	return nil
}
