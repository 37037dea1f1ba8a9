package gateway_test

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// TestFrameSentWithTheUpgradeIsRead: a client may send its first frame in
// the same packet as the upgrade request. The bytes the HTTP server read
// ahead must reach the WebSocket when the gateway swaps in its own smaller
// buffers: the frame is answered.
func TestFrameSentWithTheUpgradeIsRead(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startGateway(t, sys, fast, nil)
	ev := testenv.EventID(t)
	sys.CreateEvent(ev, 1, 1)

	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := fmt.Sprintf("GET /queue-status/%s?ticket=%s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", ev, e.ticket(ev, "early"))
	// One write: the request and a masked text frame the gateway must
	// answer with an error frame.
	if _, err := conn.Write(append([]byte(req), maskedText(`{"type":"jump"}`)...)); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	for {
		payload, err := readServerFrame(br)
		if err != nil {
			t.Fatalf("no error frame for the frame sent with the upgrade: %v", err)
		}
		var f struct{ Type, Code string }
		_ = json.Unmarshal(payload, &f)
		if f.Type == "error" {
			if f.Code != string(queue.CodeInvalidBody) {
				t.Errorf("error frame %s", payload)
			}
			return
		}
	}
}

// maskedText is a client's text frame (masked, as RFC 6455 requires).
func maskedText(s string) []byte {
	key := [4]byte{1, 2, 3, 4}
	b := []byte{0x81, 0x80 | byte(len(s)), key[0], key[1], key[2], key[3]}
	for i := range len(s) {
		b = append(b, s[i]^key[i%4])
	}
	return b
}

// readServerFrame reads one unmasked frame and returns its payload.
func readServerFrame(r *bufio.Reader) ([]byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := int(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return nil, err
		}
		n = int(binary.BigEndian.Uint16(l[:]))
	case 127:
		return nil, fmt.Errorf("frame too large for this test")
	}
	p := make([]byte, n)
	_, err := io.ReadFull(r, p)
	return p, err
}
