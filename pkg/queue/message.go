package queue

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Op is what a message asks of the waiting line.
type Op string

// The operations a message carries.
const (
	OpJoin  Op = "join"
	OpLeave Op = "leave"
)

// MessageVersion is the only value of Message.V this code writes and reads.
const MessageVersion = 1

// Message is a join or leave as it travels through the event's Kafka topic
// (key = UserID). TS is the server stamp in unix milliseconds: the score of
// the user's place in line.
type Message struct {
	V       int    `json:"v"`
	Op      Op     `json:"op"`
	EventID string `json:"eventId"`
	UserID  string `json:"userId"`
	TS      int64  `json:"ts"`
	ID      string `json:"id"`
}

// NewMessage returns a message of op by userID in eventID stamped ts (unix
// ms), with a fresh random request id.
func NewMessage(op Op, eventID, userID string, ts int64) Message {
	var id [12]byte
	_, _ = rand.Read(id[:])
	return Message{V: MessageVersion, Op: op, EventID: eventID, UserID: userID, TS: ts, ID: hex.EncodeToString(id[:])}
}

// Validate reports the first way m breaks the contract, or nil.
func (m *Message) Validate() error {
	switch {
	case m.V != MessageVersion:
		return fmt.Errorf("queue: message version %d, want %d", m.V, MessageVersion)
	case m.Op != OpJoin && m.Op != OpLeave:
		return fmt.Errorf("queue: message op %q is neither join nor leave", m.Op)
	case !ValidEventID(m.EventID):
		return fmt.Errorf("queue: message event id %q is invalid", m.EventID)
	case !ValidUserID(m.UserID):
		return fmt.Errorf("queue: message user id %q is invalid", m.UserID)
	case m.TS <= 0:
		return fmt.Errorf("queue: message stamp %d is not a positive unix ms time", m.TS)
	}
	return nil
}

// Encode returns m as JSON.
func (m *Message) Encode() ([]byte, error) {
	return json.Marshal(m)
}

// DecodeMessage parses and validates one message value. Any error means the
// message can never be applied and belongs in the dead-letter topic.
func DecodeMessage(b []byte) (Message, error) {
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		return Message{}, fmt.Errorf("queue: decode message: %w", err)
	}
	if err := m.Validate(); err != nil {
		return Message{}, err
	}
	return m, nil
}

// IngestResult counts what applying a batch of messages to the live state did.
type IngestResult struct {
	Joined  int
	Left    int
	Ignored int
	// Admitted counts the users the fast track let in after the batch.
	Admitted int
	// Inversions counts joins that had to wait behind a user placed after
	// them who was already admitted (queue.Fairness).
	Inversions int
	// UnknownEvents lists the events with no configuration: none of their
	// messages was written.
	UnknownEvents []string
}
