package producer_test

import (
	"strings"
	"testing"

	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/recording"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// eventsOnly hides every port of its store but the events'.
type eventsOnly struct{ queue.EventStore }

// TestNewFindsEveryPortOrFails: producer-api as shipped (the recording
// store over Redis) finds every port its routes read, and a store that
// hides one is refused at start, naming what is missing, rather than
// failing each request that reads it.
func TestNewFindsEveryPortOrFails(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	shipped := recording.New(sys.Store, sys.Pub, nil)
	if _, err := producer.New(producer.Config{}, producer.Deps{Store: shipped, Topics: sys.Pub.Admin(), Publisher: sys.Pub}); err != nil {
		t.Fatalf("producer-api over the recording store: %v", err)
	}
	_, err := producer.New(producer.Config{}, producer.Deps{Store: eventsOnly{sys.Store}, Topics: sys.Pub.Admin(), Publisher: sys.Pub})
	if err == nil || !strings.Contains(err.Error(), "Addresses, Door, Reports, Resumes") {
		t.Fatalf("a store hiding its ports: err %v, want one naming Addresses, Door, Reports, Resumes", err)
	}
	_, err = producer.New(producer.Config{}, producer.Deps{Store: eventsOnly{sys.Store}, Topics: sys.Pub.Admin(), Publisher: sys.Pub,
		Door: sys.Store, Resumes: sys.Store, Addresses: sys.Store, Reports: sys.Store})
	if err != nil {
		t.Fatalf("the ports given one by one: %v", err)
	}
}
