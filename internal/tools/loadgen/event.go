package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/recording"
	"github.com/waitq/waitq/internal/redisstore"
)

// The bench event joins, ingest and lag measure with.
const (
	benchEvent = "bench"
	// benchPartitions is the partition count of the bench event's topic.
	benchPartitions = 6
)

// benchEvents is the bench event's admin PUT body, for a stackSpec.
var benchEvents = map[string]string{benchEvent: fmt.Sprintf(`{"capacity":100,"partitions":%d}`, benchPartitions)}

// createEvent creates (or updates) event id with the admin PUT body through
// producer-api at base.
func createEvent(ctx context.Context, base, token, id, body string) error {
	return adminCall(ctx, http.MethodPut, base+"/v1/admin/events/"+id, token, body, nil)
}

// adminClient is the client of producer-api's admin API.
var adminClient = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{Proxy: nil}}

// adminCall sends an admin API request with token and a JSON body ("":
// none), and decodes a 2xx answer into out (nil: dropped).
func adminCall(ctx context.Context, method, url, token, body string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := adminClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return answerError(method+" "+url, resp)
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// putEvents registers evs in store and creates their topics, each with the
// event's partitions.
func putEvents(ctx context.Context, store *redisstore.Store, conn kafkajoin.BrokerConfig, evs ...queue.Event) error {
	pub, err := kafkajoin.NewPublisher(kafkajoin.PublisherConfig{BrokerConfig: conn})
	if err != nil {
		return err
	}
	defer pub.Close()
	// As the admin PUT does: the topic, then the configuration, recorded
	// in the topic so that a rebuild finds it.
	recorded := recording.New(store, pub, nil)
	for _, ev := range evs {
		if err := pub.Admin().EnsureTopic(ctx, ev.ID, ev.Partitions); err != nil {
			return fmt.Errorf("create topic of %s: %w", ev.ID, err)
		}
		if _, err := recorded.PutEvent(ctx, ev); err != nil {
			return fmt.Errorf("create event %s: %w", ev.ID, err)
		}
	}
	return nil
}
