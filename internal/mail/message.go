package mail

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	netmail "net/mail"
	"strings"
	"time"
)

// Message is one mail to send: plain text, UTF-8.
type Message struct {
	To      string
	Subject string
	Body    string
	// Tag names the message in logs (such as the event and the kind of
	// mail): never the address.
	Tag string
}

// errHeader refuses a header value with a line break: that is how a
// header (a Bcc, a second body) would be injected.
var errHeader = errors.New("mail: a header value holds a line break")

// oneAddress checks that a is one plain address on one line.
func oneAddress(a string) error {
	if strings.ContainsAny(a, "\r\n") {
		return errHeader
	}
	p, err := netmail.ParseAddress(a)
	if err != nil || p.Name != "" || p.Address != a {
		return errors.New("mail: not one plain address")
	}
	return nil
}

// render writes m from from as RFC 5322 text with CRLF line ends: every
// header value on one line (a line break anywhere is refused), the subject
// encoded when not ASCII, the body quoted-printable.
func (m Message) render(from string, now time.Time) ([]byte, error) {
	if err := oneAddress(from); err != nil {
		return nil, err
	}
	if err := oneAddress(m.To); err != nil {
		return nil, err
	}
	if strings.ContainsAny(m.Subject, "\r\n") {
		return nil, errHeader
	}
	var id [12]byte
	_, _ = rand.Read(id[:])
	domain := from[strings.LastIndexByte(from, '@')+1:]
	var b bytes.Buffer
	for _, h := range [][2]string{
		{"From", from},
		{"To", m.To},
		{"Subject", mime.QEncoding.Encode("utf-8", m.Subject)},
		{"Date", now.UTC().Format(time.RFC1123Z)},
		{"Message-ID", "<" + hex.EncodeToString(id[:]) + "@" + domain + ">"},
		{"MIME-Version", "1.0"},
		{"Content-Type", "text/plain; charset=utf-8"},
		{"Content-Transfer-Encoding", "quoted-printable"},
		{"Auto-Submitted", "auto-generated"},
	} {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	b.WriteString("\r\n")
	w := quotedprintable.NewWriter(&b)
	if _, err := w.Write([]byte(strings.ReplaceAll(m.Body, "\r\n", "\n"))); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
