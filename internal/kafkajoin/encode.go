package kafkajoin

import "github.com/waitq/waitq/internal/queue"

// appendRecord appends key and then m's value (queue.Message.AppendJSON)
// to dst, and returns both as slices of one allocation.
func appendRecord(dst []byte, key string, m *queue.Message) (k, v []byte, err error) {
	dst = append(dst, key...)
	n := len(dst)
	dst, err = m.AppendJSON(dst)
	return dst[:n:n], dst[n:], err
}
