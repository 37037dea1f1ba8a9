// Package sse reads a text/event-stream (server-sent events) as a client
// does: the gateway's tests and loadgen's SSE clients read the stream route
// of ws-gateway with it. It follows the event-stream interpretation of the
// HTML standard: a line starting with a colon is a comment; an empty line
// dispatches the event gathered, unless it has no data. Lines end in LF or
// CRLF (a lone CR, which the standard also allows and no waitq server
// writes, is not a line end here). A Reader is not safe for concurrent use.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
)

// Event is one dispatched event.
type Event struct {
	Type string // the event: field; "message" when none was given
	ID   string // the id: field of this event; empty when it had none
	Data []byte // the data: lines joined with LF; valid until the next Next
}

// Reader reads events from a stream.
type Reader struct {
	br          *bufio.Reader
	line        []byte // a line longer than the buffer, gathered
	data        []byte
	lastEventID string
	retry       int
}

// maxLine bounds one line of the stream: a longer one is an error, not a
// reason to grow without end.
const maxLine = 1 << 20

// ErrLineTooLong is returned for a line over 1 MiB.
var ErrLineTooLong = errors.New("sse: line over 1 MiB")

// NewReader reads the stream r through a buffer of size bytes (at least
// 16); lines longer than the buffer are gathered.
func NewReader(r io.Reader, size int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, max(size, 16))}
}

// LastEventID is the last event id the stream set, as a client sends it back
// in Last-Event-ID when it reconnects: it persists across events without id.
func (r *Reader) LastEventID() string { return r.lastEventID }

// Retry is the reconnection time the stream asked for, in milliseconds (0:
// none yet).
func (r *Reader) Retry() int { return r.retry }

// Next returns the next event; at the end of the stream it returns io.EOF
// (an event not completed by an empty line is discarded, as the standard
// says).
func (r *Reader) Next() (Event, error) {
	var ev Event
	r.data = r.data[:0]
	hasData := false
	for {
		line, err := r.readLine()
		if err != nil {
			return Event{}, err
		}
		if len(line) == 0 {
			if !hasData {
				ev = Event{}
				continue
			}
			if ev.Type == "" {
				ev.Type = "message"
			}
			ev.Data = r.data
			return ev, nil
		}
		if line[0] == ':' {
			continue
		}
		name, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(name) {
		case "event":
			ev.Type = string(value)
		case "data":
			if hasData {
				r.data = append(r.data, '\n')
			}
			r.data = append(r.data, value...)
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.ID = string(value)
				r.lastEventID = ev.ID
			}
		case "retry":
			if n, err := strconv.Atoi(string(value)); err == nil && n >= 0 {
				r.retry = n
			}
		}
	}
}

// readLine returns the next line without its end; valid until the next
// call.
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		switch {
		case err == nil:
			if len(r.line) == 0 { // the common case: no copy
				return bytes.TrimSuffix(chunk[:len(chunk)-1], []byte{'\r'}), nil
			}
			r.line = append(r.line, chunk[:len(chunk)-1]...)
			return bytes.TrimSuffix(r.line, []byte{'\r'}), nil
		case errors.Is(err, bufio.ErrBufferFull):
			r.line = append(r.line, chunk...)
			if len(r.line) > maxLine {
				return nil, ErrLineTooLong
			}
		case errors.Is(err, io.EOF) && len(chunk)+len(r.line) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}
