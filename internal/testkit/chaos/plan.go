package chaos

import (
	"math/rand/v2"
	"slices"
	"sort"
	"time"
)

// Kind is a kind of fault.
type Kind string

// The faults the nemesis injects. Each heals at the end of its step: the
// killed container is started again, the paused one thawed, the cut one
// connected again.
const (
	Kill      Kind = "kill"      // SIGKILL, then start again
	Pause     Kind = "pause"     // freeze every process (cgroup freezer), then thaw
	Restart   Kind = "restart"   // SIGTERM (graceful stop), then start again
	Partition Kind = "partition" // disconnect from the network, then connect again

	// Scenes: what an operator or a longer outage does, at regular times
	// (PlanConfig.Scenes), never drawn at random.

	// Outage stops every broker (paused, or stopped gracefully) for longer
	// than the event's hold, then brings it back.
	Outage Kind = "outage"
	// Rebuild empties Redis (FLUSHALL) and runs waitq-rebuild, as the
	// runbook says; it heals when the rebuild ended.
	Rebuild Kind = "rebuild"
	// AdminPause sets the event paused, then open again.
	AdminPause Kind = "admin-pause"
	// AdminCapacity lowers the event's capacity, then raises it back.
	AdminCapacity Kind = "admin-capacity"
	// AdminRate lowers the event's rate, then raises it back.
	AdminRate Kind = "admin-rate"
)

// exclusive reports whether a scene of kind k runs alone: no random fault
// overlaps it, so that what it checks is its own doing.
func (k Kind) exclusive() bool { return k == Outage || k == Rebuild }

// Role is what a container runs.
type Role string

// The roles of a campaign's containers.
const (
	Producer Role = "producer"
	Consumer Role = "consumer"
	Gateway  Role = "gateway"
	Redis    Role = "redis"
	Broker   Role = "broker"
	// Admin is an event's configuration, changed through producer-api.
	Admin Role = "admin"
)

// kinds are the faults each role gets. Redis is in memory and is not
// killed (that loses its state by design: waitq-rebuild restores it from
// the log, a runbook step, not a fault to ride out); the test broker
// (kfake) keeps its log only through a graceful stop, so it is restarted,
// not killed.
var kindsOf = map[Role][]Kind{
	Producer: {Kill, Pause, Partition},
	Consumer: {Kill, Pause, Partition},
	Gateway:  {Kill, Pause, Partition},
	Redis:    {Pause, Partition},
	Broker:   {Pause, Restart, Partition},
}

// Target is a container the nemesis may fault.
type Target struct {
	Name string
	Role Role
}

// Step is one planned fault: Kind on Target from At to At+For after the
// campaign's start.
type Step struct {
	Kind    Kind
	Target  Target
	At, For time.Duration
}

// PlanConfig shapes a schedule.
type PlanConfig struct {
	Length        time.Duration // faults begin and heal within it
	Quiet         time.Duration // no fault before this (the load settles)
	MinGap        time.Duration // between one fault's start and the next
	MaxGap        time.Duration
	MinFor        time.Duration // how long a fault lasts
	MaxFor        time.Duration
	MaxConcurrent int // faults active at once
	// Together is the chance that a fault starts at the same moment as the
	// one before it (several at a time).
	Together float64
	// Scenes run in turn, one every SceneEvery from SceneStart, each
	// lasting its For (Outage and Rebuild alone: random faults keep
	// SceneClear away from them); none when SceneEvery is 0.
	Scenes     []Scene
	SceneStart time.Duration
	SceneEvery time.Duration
	SceneClear time.Duration
}

// Scene is a step the plan runs at regular times rather than at random.
type Scene struct {
	Kind   Kind
	Target Target
	For    time.Duration
}

// DefaultPlan is the campaign's schedule shape for length.
func DefaultPlan(length time.Duration) PlanConfig {
	return PlanConfig{
		Length: length, Quiet: 5 * time.Second,
		MinGap: time.Second, MaxGap: 6 * time.Second,
		MinFor: time.Second, MaxFor: 8 * time.Second,
		MaxConcurrent: 3, Together: 0.25,
		SceneStart: 15 * time.Second, SceneEvery: sceneEvery(length), SceneClear: 3 * time.Second,
	}
}

// sceneEvery spaces the scenes: every 20 s in a short run (each kind at
// least once in two minutes), every 45 s in a long one.
func sceneEvery(length time.Duration) time.Duration {
	if length <= 5*time.Minute {
		return 20 * time.Second
	}
	return 45 * time.Second
}

// Plan draws a fault schedule from seed: the same seed, config and targets
// give the same steps, so a run can be replayed. Faults start at random
// gaps, sometimes several at once, at most MaxConcurrent active and never
// two on one target at a time; each ends within the length.
func Plan(seed uint64, cfg PlanConfig, targets []Target) []Step {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	between := func(lo, hi time.Duration) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(r.Int64N(int64(hi-lo)))
	}
	var steps []Step
	type window struct{ from, to time.Duration }
	var alone []window // random faults keep out
	if cfg.SceneEvery > 0 {
		for i, at := 0, cfg.SceneStart; len(cfg.Scenes) > 0; i, at = i+1, at+cfg.SceneEvery {
			sc := cfg.Scenes[i%len(cfg.Scenes)]
			if at+sc.For > cfg.Length {
				break
			}
			steps = append(steps, Step{Kind: sc.Kind, Target: sc.Target, At: at, For: sc.For})
			if sc.Kind.exclusive() {
				alone = append(alone, window{at - cfg.SceneClear, at + sc.For + cfg.SceneClear})
			}
		}
	}
	scenes := len(steps)
	busyUntil := map[string]time.Duration{}
	at := cfg.Quiet
	for {
		if len(steps) > scenes && r.Float64() >= cfg.Together {
			at += between(cfg.MinGap, cfg.MaxGap)
		}
		length := between(cfg.MinFor, cfg.MaxFor)
		if at+length > cfg.Length {
			break
		}
		if i := slices.IndexFunc(alone, func(w window) bool { return at < w.to && at+length > w.from }); i >= 0 {
			at = alone[i].to
			continue
		}
		active := 0
		var free []Target
		for _, t := range targets {
			if busyUntil[t.Name] > at {
				active++
			} else {
				free = append(free, t)
			}
		}
		if active >= cfg.MaxConcurrent || len(free) == 0 {
			at += cfg.MinGap
			continue
		}
		t := free[r.IntN(len(free))]
		ks := kindsOf[t.Role]
		steps = append(steps, Step{Kind: ks[r.IntN(len(ks))], Target: t, At: at, For: length})
		busyUntil[t.Name] = at + length
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].At < steps[j].At })
	return steps
}
