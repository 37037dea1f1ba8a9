package redisstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/waitq/waitq/internal/queue"
)

// SubscribeAdmissions calls f with the notice of every admission any
// service makes, as published on AdmissionsChannel, until ctx ends. A
// notice missed while the subscription reconnects is not replayed: the
// next status round tells the user.
func (s *Store) SubscribeAdmissions(ctx context.Context, f func(queue.AdmissionNotice)) error {
	sub := s.c.Subscribe(ctx, AdmissionsChannel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the server's confirmation
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("redisstore: subscribe to admissions: %w", err)
	}
	ch := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-ch:
			if !ok {
				return nil
			}
			var a queue.AdmissionNotice
			if err := json.Unmarshal([]byte(m.Payload), &a); err != nil {
				return fmt.Errorf("redisstore: admission notice %q: %w", m.Payload, err)
			}
			f(a)
		}
	}
}
