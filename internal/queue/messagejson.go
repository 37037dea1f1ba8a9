package queue

import (
	"encoding/json"
	"strconv"
)

// AppendJSON appends m's JSON to dst, byte for byte what json.Marshal
// writes: a message without an event configuration (every join, leave and
// record but config) by hand, in the order and with the omissions of
// Message's tags, a config record and a chain draw's by encoding/json.
// TestAppendJSONIsMarshal and FuzzAppendJSON hold the two equal.
func (m *Message) AppendJSON(dst []byte) ([]byte, error) {
	if m.Event != nil || m.Draw != nil {
		b, err := json.Marshal(m)
		return append(dst, b...), err
	}
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(m.V), 10)
	dst = append(dst, `,"op":`...)
	dst = AppendJSONString(dst, string(m.Op))
	dst = append(dst, `,"eventId":`...)
	dst = AppendJSONString(dst, m.EventID)
	dst = appendStringField(dst, `,"userId":`, m.UserID)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, m.TS, 10)
	dst = appendStringField(dst, `,"id":`, m.ID)
	dst = appendIntField(dst, `,"expiresAt":`, m.ExpiresAt)
	dst = appendIntField(dst, `,"score":`, m.Score)
	dst = appendIntField(dst, `,"joinTs":`, m.ServedMark)
	dst = appendStringField(dst, `,"seed":`, m.Seed)
	dst = appendStringField(dst, `,"saltKey":`, m.SaltKey)
	dst = appendStringField(dst, `,"item":`, m.Item)
	dst = appendStringField(dst, `,"visit":`, m.JoinKey)
	return append(dst, '}'), nil
}

// appendIntField appends an omitempty integer field.
func appendIntField(dst []byte, name string, v int64) []byte {
	if v == 0 {
		return dst
	}
	return strconv.AppendInt(append(dst, name...), v, 10)
}

// appendStringField appends an omitempty string field.
func appendStringField(dst []byte, name, v string) []byte {
	if v == "" {
		return dst
	}
	return AppendJSONString(append(dst, name...), v)
}

// unmarshalMessage parses b into m as json.Unmarshal does. Messages of the
// usual shape (one flat object of the known keys, spelled as Encode spells
// them, with plain ASCII strings and integers) are read by a scanner of
// their own, about ten times cheaper than reflection; anything else (a
// config record's event, escapes, other spellings, null, floats, syntax
// errors) goes to encoding/json, which has the last word on its meaning.
// FuzzUnmarshalMessage holds the two to the same results.
func unmarshalMessage(b []byte, m *Message) error {
	var flat Message
	if scanFlatMessage(b, &flat) {
		*m = flat
		return nil
	}
	return json.Unmarshal(b, m)
}

// scanFlatMessage reads b into m when b is a message of the usual shape,
// and reports whether it was; when false, m holds nothing of use.
func scanFlatMessage(b []byte, m *Message) bool {
	s := flatScanner{b: b}
	if !s.byte('{') {
		return false
	}
	if s.byte('}') {
		return s.end()
	}
	for {
		key, ok := s.str()
		if !ok || !s.byte(':') {
			return false
		}
		if key := string(key); key == "v" {
			n, ok := s.int()
			if !ok || n != int64(int(n)) {
				return false
			}
			m.V = int(n)
		} else if dst := m.flatInt(key); dst != nil {
			if *dst, ok = s.int(); !ok {
				return false
			}
		} else if dst := m.flatString(key); dst != nil {
			v, ok := s.str()
			if !ok {
				return false
			}
			*dst = string(v)
		} else {
			return false // another key, or another spelling of one
		}
		if s.byte('}') {
			return s.end()
		}
		if !s.byte(',') {
			return false
		}
	}
}

// flatInt is the integer field of m named key as Encode spells it, or nil.
func (m *Message) flatInt(key string) *int64 {
	switch key {
	case "ts":
		return &m.TS
	case "expiresAt":
		return &m.ExpiresAt
	case "score":
		return &m.Score
	case "joinTs":
		return &m.ServedMark
	}
	return nil
}

// flatString is the string field of m named key as Encode spells it, or nil.
func (m *Message) flatString(key string) *string {
	switch key {
	case "op":
		return (*string)(&m.Op)
	case "eventId":
		return &m.EventID
	case "userId":
		return &m.UserID
	case "id":
		return &m.ID
	case "visit":
		return &m.JoinKey
	case "item":
		return &m.Item
	case "seed":
		return &m.Seed
	case "saltKey":
		return &m.SaltKey
	}
	return nil
}

// flatScanner reads the tokens of a flat JSON object from b at i.
type flatScanner struct {
	b []byte
	i int
}

func (s *flatScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte consumes c, after white space, if it is next.
func (s *flatScanner) byte(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (s *flatScanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// str reads a string of printable ASCII without escapes.
func (s *flatScanner) str() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	start := s.i
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// int reads an integer of at most 18 digits, as JSON writes it (no leading
// zero, no fraction or exponent).
func (s *flatScanner) int() (int64, bool) {
	s.space()
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	start := s.i
	var n int64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		n = n*10 + int64(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	if digits == 0 || digits > 18 || digits > 1 && s.b[start] == '0' {
		return 0, false
	}
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	return n, true
}
