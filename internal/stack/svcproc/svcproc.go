package svcproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// AddrVar is the setting that tells a waitq service where to listen.
const AddrVar = "WAITQ_HTTP_ADDR"

// FreeAddr returns a loopback address with a port free at the time of the
// call.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("svcproc: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// WaitReady polls url (a service's /readyz) until it answers 200, exited is
// closed (the service stopped; nil: never), ctx ends or limit passes.
func WaitReady(ctx context.Context, url string, exited <-chan struct{}, limit time.Duration) error {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer c.CloseIdleConnections()
	return poll(ctx, url, exited, limit, func() string {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err.Error()
		}
		resp, err := c.Do(req)
		if err != nil {
			return err.Error()
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return ""
		}
		return resp.Status
	})
}

// waitListening polls addr until it takes a TCP connection, as WaitReady
// polls a /readyz: the readiness of a program that serves no HTTP.
func waitListening(ctx context.Context, addr string, exited <-chan struct{}, limit time.Duration) error {
	d := &net.Dialer{Timeout: 2 * time.Second}
	return poll(ctx, addr, exited, limit, func() string {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err.Error()
		}
		c.Close()
		return ""
	})
}

// poll calls probe every 50 ms until it answers "" (ready; else what it
// saw), exited is closed, ctx ends or limit passes.
func poll(ctx context.Context, what string, exited <-chan struct{}, limit time.Duration, probe func() string) error {
	deadline := time.Now().Add(limit)
	last := "no answer yet"
	for {
		if last = probe(); last == "" {
			return nil
		}
		select {
		case <-exited:
			return errors.New("stopped before it was ready")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready within %s (last: %s)", what, limit, last)
		}
	}
}
