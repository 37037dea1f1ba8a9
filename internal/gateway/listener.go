package gateway

import "net"

// DefaultWriteBuffer is the kernel send buffer given to each accepted socket
// (Linux doubles it for bookkeeping). Without a cap, send-buffer autotuning
// lets one reader that stopped reading pin megabytes of kernel memory and
// hides its slowness for minutes; frames are a few hundred bytes.
const DefaultWriteBuffer = 32 << 10

// LimitWriteBuffer wraps l so that every accepted TCP connection gets a
// kernel send buffer of bytes (0 leaves the system default).
func LimitWriteBuffer(l net.Listener, bytes int) net.Listener {
	if bytes <= 0 {
		return l
	}
	return writeBufferListener{Listener: l, bytes: bytes}
}

type writeBufferListener struct {
	net.Listener
	bytes int
}

func (l writeBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		_ = tc.SetWriteBuffer(l.bytes) // best effort: a refusal only keeps the default
	}
	return c, err
}
