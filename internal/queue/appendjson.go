package queue

import "encoding/json"

// AppendJSONString appends s to dst as encoding/json encodes a string
// (HTML characters escaped, invalid UTF-8 replaced), for the hand-written
// encoders of the join path: plain printable ASCII, such as every id, is
// appended as it is, and anything else is left to encoding/json.
func AppendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string cannot fail
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
