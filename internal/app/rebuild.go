package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/waitq/waitq/internal/config"
	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/rebuild"
	"github.com/waitq/waitq/internal/redisstore"
)

// Rebuild is waitq-rebuild: it rebuilds events' live state from their logs
// and exits.
type Rebuild struct {
	Broker kafkajoin.BrokerConfig
	Redis
	Events []string
	All    bool
}

var _ Service = (*Rebuild)(nil)

// Name implements Service.
func (*Rebuild) Name() string { return "waitq-rebuild" }

// Bind implements Service.
func (r *Rebuild) Bind(l *config.Loader) {
	bindKafka(l, &r.Broker)
	r.Redis.bind(l)
	l.List(&r.Events, "events", "WAITQ_REBUILD_EVENTS", "", "comma-separated ids of the events to rebuild")
	l.Bool(&r.All, "all", "WAITQ_REBUILD_ALL", false, "rebuild every event that has a topic (after a loss of all of Redis)")
}

// Validate implements Service.
func (r *Rebuild) Validate() error {
	var errs []error
	if len(r.Events) == 0 && !r.All {
		errs = append(errs, errors.New("name the events to rebuild (WAITQ_REBUILD_EVENTS) or ask for all (WAITQ_REBUILD_ALL)"))
	}
	for _, ev := range r.Events {
		if err := queue.CheckEventID(ev); err != nil {
			errs = append(errs, fmt.Errorf("WAITQ_REBUILD_EVENTS: %w", err))
		}
	}
	return errors.Join(append(errs, r.Broker.Validate(), r.Redis.validate())...)
}

// Run implements Service: it rebuilds each event in turn and stops at the
// first failure (that event stays marked rebuilding: run again). With All,
// a deleted event whose topic remains (its tombstone stands) is skipped.
func (r *Rebuild) Run(ctx context.Context, log *slog.Logger) error {
	store, err := r.open(redisstore.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	pub, err := kafkajoin.NewPublisher(kafkajoin.PublisherConfig{BrokerConfig: r.Broker})
	if err != nil {
		return err
	}
	defer pub.Close()
	admin := pub.Admin()
	events := r.Events
	if r.All {
		topics, err := admin.JoinTopics(ctx)
		if err != nil {
			return err
		}
		prefix := r.Broker.Topic("")
		events = nil
		for _, t := range topics {
			events = append(events, strings.TrimPrefix(t, prefix))
		}
	}
	rb := &rebuild.Rebuilder{Log: admin, Store: store, Logger: log}
	rebuilt := 0
	for _, ev := range events {
		_, err := rb.Rebuild(ctx, ev)
		if r.All && errors.Is(err, queue.ErrLogNotDeleted) {
			// A deleted event's leftover topic: not brought back.
			log.Warn("skipped a deleted event whose topic remains: DELETE it again to remove the topic", "event", ev)
			continue
		}
		if err != nil {
			return err
		}
		rebuilt++
	}
	log.Info("rebuilt", "events", rebuilt)
	return nil
}
