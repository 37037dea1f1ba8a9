package testclient

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
)

// ErrorKind names a dial or read error without its addresses, for counting
// failures by kind: "timeout", "refused", "reset", "EOF", "too many open
// files", "file table full", "no free source port", "address in use", or
// the error's last part.
func ErrorKind(err error) string {
	for _, e := range []struct {
		err  error
		name string
	}{
		{syscall.EMFILE, "too many open files"},
		{syscall.ENFILE, "file table full"},
		{syscall.EADDRNOTAVAIL, "no free source port"},
		{syscall.EADDRINUSE, "address in use"},
		{syscall.ECONNREFUSED, "refused"},
		{syscall.ECONNRESET, "reset"},
		{context.DeadlineExceeded, "timeout"},
		{io.EOF, "EOF"},
		{io.ErrUnexpectedEOF, "EOF"},
	} {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	s := err.Error()
	return strings.TrimSpace(s[strings.LastIndex(s, ": ")+1:])
}
