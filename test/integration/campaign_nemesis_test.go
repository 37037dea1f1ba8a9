//go:build integration

package integration

import (
	"errors"
	"sync"
	"time"

	"github.com/waitq/waitq/internal/testkit/chaos"
)

// nemesis runs the plan: each step at its time, healed after its length.
func (c *campaign) nemesis(start time.Time, plan []chaos.Step) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, st := range plan {
		time.Sleep(time.Until(start.Add(st.At)))
		wg.Go(func() { c.inject(st) })
	}
}

// inject runs one fault: waits for the consumer group to settle first when
// the target is a consumer (skipping the fault if it does not within 5 s),
// injects it, waits its length and heals it.
func (c *campaign) inject(st chaos.Step) {
	if st.Target.Role == chaos.Admin {
		c.adminScene(st)
		return
	}
	n := c.nodes[st.Target.Name]
	if st.Target.Role == chaos.Consumer {
		deadline := time.Now().Add(5 * time.Second)
		for !c.groupSettled() {
			if time.Now().After(deadline) {
				c.t.Logf("nemesis: %s %s skipped, the consumer group did not settle", st.Kind, n.alias)
				c.h.AddFault(chaos.Fault{Kind: st.Kind, Target: n.alias, Role: st.Target.Role, Skipped: true})
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if _, busy := c.faulted.LoadOrStore(n.alias, true); busy {
		c.h.AddFault(chaos.Fault{Kind: st.Kind, Target: n.alias, Role: st.Target.Role, Skipped: true})
		return
	}
	defer c.faulted.Delete(n.alias)
	f := chaos.Fault{Kind: st.Kind, Target: n.alias, Role: st.Target.Role, Start: time.Now()}
	var inject, heal func() error
	switch st.Kind {
	case chaos.Outage:
		inject, heal = c.outage(n)
	case chaos.Rebuild:
		inject, heal = c.flushAll, c.rebuild
	case chaos.Kill:
		inject, heal = n.kill, n.start
	case chaos.Pause:
		inject, heal = n.pause, n.unpause
	case chaos.Restart:
		inject, heal = n.stop, n.start
	case chaos.Partition:
		inject = func() error { return n.disconnect(c.s.net) }
		heal = func() error { return n.connect(c.s.net) }
	}
	// An injection that fails left the target as it was (the engine
	// refused: a pause's cgroup freeze can fail under load): tried again a
	// few times, then counted as skipped, not as a broken promise.
	var injectErr error
	for try := range 3 {
		if injectErr = inject(); injectErr == nil {
			break
		}
		c.t.Logf("nemesis: %s %s: inject (try %d): %v", st.Kind, n.alias, try+1, injectErr)
		time.Sleep(500 * time.Millisecond)
	}
	if injectErr != nil {
		f.Skipped = true
		c.h.AddFault(f)
		return
	}
	f.Start = time.Now()
	c.t.Logf("nemesis: %s %s for %v", st.Kind, n.alias, st.For)
	time.Sleep(time.Until(f.Start.Add(st.For)))
	// Heal for sure: a failed heal is retried, and reported.
	var errs []error
	for range healTries(st.Kind) {
		err := heal()
		if err == nil {
			f.Healed = time.Now()
			break
		}
		errs = append(errs, err)
		time.Sleep(time.Second)
	}
	if f.Healed.IsZero() {
		f.Err = "heal: " + errors.Join(errs...).Error()
	}
	c.h.AddFault(f)
}

// healTries is how often a heal is tried: a rebuild three times (the
// runbook's "run it again if it failed": the event stays rebuilding until
// one succeeds), anything else five times.
func healTries(k chaos.Kind) int {
	if k == chaos.Rebuild {
		return 3
	}
	return 5
}
