package testclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/waitq/waitq/internal/testkit/testclient"
)

func TestErrorKindNamesTheCauseWithoutAddresses(t *testing.T) {
	dial := func(err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 8080}, Err: os.NewSyscallError("connect", err)}
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{dial(syscall.ECONNREFUSED), "refused"},
		{fmt.Errorf("get: %w", dial(syscall.ECONNRESET)), "reset"},
		{dial(syscall.EMFILE), "too many open files"},
		{dial(syscall.EADDRNOTAVAIL), "no free source port"},
		{fmt.Errorf("read: %w", context.DeadlineExceeded), "timeout"},
		{&net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}, "timeout"},
		{fmt.Errorf("read frame: %w", io.ErrUnexpectedEOF), "EOF"},
		{errors.New(`Get "http://10.0.0.7:8080/readyz": proxyconnect tcp: tls: bad record`), "bad record"},
	} {
		if got := testclient.ErrorKind(c.err); got != c.want {
			t.Errorf("ErrorKind(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
