//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/chaos"
)

// The campaign's scenes: what an operator does mid-run (a rebuild after
// Redis lost its data, admin changes) and a broker outage longer than a
// hold. The plan runs them at regular times (chaos.PlanConfig.Scenes).

// scenes are the campaign's scenes, in the order the plan runs them.
func (c *campaign) scenes() []chaos.Scene {
	main := chaos.Target{Name: c.main, Role: chaos.Admin}
	return []chaos.Scene{
		{Kind: chaos.AdminCapacity, Target: main, For: 10 * time.Second},
		{Kind: chaos.Outage, Target: chaos.Target{Name: "kafka", Role: chaos.Broker}, For: holdMs*time.Millisecond + 4*time.Second},
		{Kind: chaos.AdminPause, Target: main, For: 6 * time.Second},
		{Kind: chaos.Rebuild, Target: chaos.Target{Name: "redis", Role: chaos.Redis}},
		{Kind: chaos.AdminRate, Target: main, For: 10 * time.Second},
	}
}

// outage stops every broker (the stack's one) for longer than a stay: paused
// one time, stopped gracefully (and started again) the next.
func (c *campaign) outage(n *node) (inject, heal func() error) {
	if c.outages.Add(1)%2 == 1 {
		return n.pause, n.unpause
	}
	return n.stop, n.start
}

// flushAll empties Redis, as a lost volume or a replica promoted empty
// would: the runbook's reason to rebuild. In the same transaction it
// counts each event's unrecorded holders: admissions nobody was told of,
// whose records may still reach the log after the rebuild read its end.
// Their users are back in line after the rebuild and admitted again, and a
// later rebuild counts both records (chaos.Final.Untold).
func (c *campaign) flushAll() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts := make([]*redis.IntCmd, len(c.events))
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, e := range c.events {
			counts[i] = p.ZCard(ctx, redisstore.UnrecordedKey(e.ID))
		}
		p.FlushAll(ctx)
		return nil
	})
	if err != nil {
		return err
	}
	c.untoldMu.Lock()
	defer c.untoldMu.Unlock()
	if c.untold == nil {
		c.untold = map[string]int64{}
	}
	for i, e := range c.events {
		c.untold[e.ID] += counts[i].Val()
	}
	return nil
}

// rebuild runs waitq-rebuild -all as a container on the stack's network,
// as an operator would after a loss of Redis, and waits for it to exit 0.
func (c *campaign) rebuild() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ctr, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image: img.rebuild,
			Env: serviceEnv(map[string]string{
				"WAITQ_REBUILD_ALL": "true",
			}),
			Networks:   []string{c.s.net.Name},
			Labels:     map[string]string{label: runLabel},
			WaitingFor: wait.ForExit().WithExitTimeout(2 * time.Minute),
		},
		Started: true,
	})
	if ctr != nil {
		defer func() { _ = ctr.Terminate(context.Background()) }()
	}
	if err != nil {
		return fmt.Errorf("waitq-rebuild: %w", err)
	}
	st, err := ctr.State(ctx)
	if err != nil {
		return fmt.Errorf("waitq-rebuild: %w", err)
	}
	logs := ""
	if rc, err := ctr.Logs(ctx); err == nil {
		b, _ := io.ReadAll(rc)
		rc.Close()
		logs = string(b)
	}
	if st.ExitCode != 0 {
		return fmt.Errorf("waitq-rebuild exited %d: %s", st.ExitCode, tail(logs, 2000))
	}
	c.t.Logf("nemesis: waitq-rebuild: %s", tail(logs, 600))
	return nil
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// adminScene changes the event's configuration through producer-api and
// changes it back the scene's length after the change was stored: paused then open, capacity
// lowered then raised back, rate lowered then unlimited again.
func (c *campaign) adminScene(st chaos.Step) {
	event := st.Target.Name
	spec := c.events[0]
	var change, back string
	switch st.Kind {
	case chaos.AdminPause:
		change, back = `{"state":"paused"}`, `{"state":"open"}`
	case chaos.AdminCapacity:
		change, back = fmt.Sprintf(`{"capacity":%d}`, spec.Capacity/4), fmt.Sprintf(`{"capacity":%d}`, spec.Capacity)
	case chaos.AdminRate:
		change, back = `{"admitPerMinute":120}`, `{"admitPerMinute":0}`
	}
	f := chaos.Fault{Kind: st.Kind, Target: event, Role: chaos.Admin, Start: time.Now()}
	if err := c.putEvent(event, change); err != nil {
		f.Err = "change: " + err.Error()
	}
	// Held for the scene's length from when the change was stored (it may
	// take a few tries while the broker is faulted), so that the checker
	// sees the setting in force for that long.
	c.t.Logf("nemesis: %s %s for %v", st.Kind, event, st.For)
	time.Sleep(st.For)
	if err := c.putEvent(event, back); err != nil {
		f.Err = strings.TrimPrefix(f.Err+"; back: "+err.Error(), "; ")
	} else {
		f.Healed = time.Now()
	}
	c.h.AddFault(f)
}

// putEvent sends an admin PUT of body through either producer-api until one
// answers 200 (tries a second apart for at most a minute), each try in the
// history.
func (c *campaign) putEvent(event, body string) error {
	var fields struct {
		Capacity       *int64  `json:"capacity"`
		AdmitPerMinute *int64  `json:"admitPerMinute"`
		State          *string `json:"state"`
	}
	if err := json.Unmarshal([]byte(body), &fields); err != nil {
		return err
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	var last string
	// Tried for up to a minute, as an operator would: a scene that gave up
	// on changing the capacity back left the event at a quarter of it for
	// the rest of a 30-minute run, and the line never drained.
	deadline := time.Now().Add(time.Minute)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		p := c.producers[attempt%len(c.producers)]
		a := chaos.AdminChange{Event: event, Sent: time.Now(), Outcome: chaos.NoAnswer, Capacity: -1, Rate: -1}
		if fields.Capacity != nil {
			a.Capacity = *fields.Capacity
		}
		if fields.AdmitPerMinute != nil {
			a.Rate = *fields.AdmitPerMinute
		}
		if fields.State != nil {
			a.State = *fields.State
		}
		if addr := c.addr(p.alias); addr != "" {
			req, _ := http.NewRequest(http.MethodPut, "http://"+addr+"/v1/admin/events/"+event, bytes.NewReader([]byte(body)))
			req.Header.Set("Authorization", "Bearer "+adminToken)
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				a.Answered = time.Now()
				a.Outcome = chaos.Outcome(fmt.Sprint(resp.StatusCode))
				var e httpkit.ErrorBody
				if resp.StatusCode != http.StatusOK && json.Unmarshal(b, &e) == nil && e.Error.Code != "" {
					a.Outcome = chaos.Outcome(fmt.Sprintf("%d %s", resp.StatusCode, e.Error.Code))
				}
			} else {
				last = err.Error()
			}
		}
		c.h.AddAdmin(a)
		if a.OK() {
			return nil
		}
		last = string(a.Outcome) + " " + last
		time.Sleep(time.Second)
	}
	return fmt.Errorf("PUT %s %s: no 200 in a minute of tries, the last %s", event, body, last)
}
