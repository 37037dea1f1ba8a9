package chaos

import (
	"slices"
	"testing"
	"time"
)

var targets = []Target{
	{"producer-a", Producer}, {"producer-b", Producer},
	{"ingest-a", Consumer}, {"ingest-b", Consumer}, {"ingest-c", Consumer},
	{"gateway-a", Gateway}, {"gateway-b", Gateway}, {"gateway-c", Gateway},
	{"redis", Redis}, {"kafka", Broker},
}

func TestPlanIsReplayableAndKeepsItsRules(t *testing.T) {
	cfg := DefaultPlan(30 * time.Minute)
	a, b := Plan(42, cfg, targets), Plan(42, cfg, targets)
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave two schedules")
	}
	if slices.Equal(a, Plan(43, cfg, targets)) {
		t.Fatal("two seeds gave the same schedule")
	}
	if len(a) < 300 {
		t.Fatalf("%d faults in 30 minutes", len(a))
	}
	kinds, roles, together := map[Kind]int{}, map[Role]int{}, 0
	for i, s := range a {
		kinds[s.Kind]++
		roles[s.Target.Role]++
		if s.At < cfg.Quiet || s.At+s.For > cfg.Length || s.For < cfg.MinFor || s.For > cfg.MaxFor {
			t.Fatalf("step %d %+v outside the plan's bounds", i, s)
		}
		if !slices.Contains(kindsOf[s.Target.Role], s.Kind) {
			t.Fatalf("step %d: %s on a %s", i, s.Kind, s.Target.Role)
		}
		if i > 0 && a[i-1].At == s.At {
			together++
		}
		active := 0
		for _, o := range a[:i] {
			if o.At+o.For > s.At {
				active++
				if o.Target == s.Target {
					t.Fatalf("step %d faults %s while step %+v still does", i, s.Target.Name, o)
				}
			}
		}
		if active >= cfg.MaxConcurrent {
			t.Fatalf("step %d starts with %d faults active", i, active)
		}
	}
	for _, k := range []Kind{Kill, Pause, Restart, Partition} {
		if kinds[k] == 0 {
			t.Errorf("no %s in %d steps", k, len(a))
		}
	}
	for _, r := range []Role{Producer, Consumer, Gateway, Redis, Broker} {
		if roles[r] == 0 {
			t.Errorf("no fault on a %s", r)
		}
	}
	if together == 0 {
		t.Error("no two faults began together")
	}
	t.Logf("%d steps: %v, %v, %d begun together", len(a), kinds, roles, together)
}

func TestPlanRunsItsScenesAloneWhereTheyMustBe(t *testing.T) {
	cfg := DefaultPlan(2 * time.Minute)
	cfg.Scenes = []Scene{
		{AdminCapacity, Target{"chaos-main", Admin}, 10 * time.Second},
		{Outage, Target{"kafka", Broker}, 12 * time.Second},
		{AdminPause, Target{"chaos-main", Admin}, 8 * time.Second},
		{Rebuild, Target{"redis", Redis}, 0},
		{AdminRate, Target{"chaos-main", Admin}, 10 * time.Second},
	}
	a := Plan(42, cfg, targets)
	if !slices.Equal(a, Plan(42, cfg, targets)) {
		t.Fatal("the same seed gave two schedules")
	}
	var scenes []Step
	for _, s := range a {
		if s.Target.Role == Admin || s.Kind == Outage || s.Kind == Rebuild {
			scenes = append(scenes, s)
		}
	}
	if len(scenes) != len(cfg.Scenes) {
		t.Fatalf("%d scenes in two minutes, want each of the %d once: %v", len(scenes), len(cfg.Scenes), scenes)
	}
	for i, s := range scenes {
		want := cfg.Scenes[i]
		if s.Kind != want.Kind || s.At != cfg.SceneStart+time.Duration(i)*cfg.SceneEvery || s.For != want.For {
			t.Errorf("scene %d is %+v, want %s at %v", i, s, want.Kind, cfg.SceneStart+time.Duration(i)*cfg.SceneEvery)
		}
		if !s.Kind.exclusive() {
			continue
		}
		for _, o := range a {
			if o.Target.Role != Admin && o != s && o.At < s.At+s.For+cfg.SceneClear && o.At+o.For > s.At-cfg.SceneClear {
				t.Errorf("fault %+v overlaps the %s scene at %v", o, s.Kind, s.At)
			}
		}
	}
	if len(a) < len(scenes)+10 {
		t.Errorf("only %d random faults besides the scenes", len(a)-len(scenes))
	}
}
