package clock

import (
	"context"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want bool
	}{
		{"full time", live, time.Millisecond, true},
		{"zero, live", live, 0, true},
		{"negative, live", live, -time.Second, true},
		{"zero, ended", ended, 0, false},
		{"ended first", ended, time.Hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sleep(tt.ctx, tt.d); got != tt.want {
				t.Fatalf("Sleep(%s) = %v, want %v", tt.d, got, tt.want)
			}
		})
	}
}

func TestSleepUntilStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	start := time.Now()
	if SleepUntil(ctx, start.Add(time.Hour)) {
		t.Fatal("SleepUntil reported the full time after ctx ended")
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("SleepUntil waited %s after ctx ended", waited)
	}
	if !SleepUntil(context.Background(), start.Add(-time.Second)) {
		t.Fatal("SleepUntil of a past time on a live ctx reported false")
	}
}
