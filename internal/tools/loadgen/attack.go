package loadgen

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitq/waitq/internal/challenge"
	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/stack"
	"github.com/waitq/waitq/internal/testkit/testclient"
)

// The settings of "loadgen attack", fixed.
const (
	attackPlaces  = 1000             // places the script tries to take in each step
	attackBudget  = 20 * time.Second // longest each step runs
	attackWorkers = 2                // the script's concurrent visitors (its solver uses one core each)
)

// attackSteps are the challenge difficulties tried (0: no challenge), up
// to the ceiling.
var attackSteps = []int{0, 12, 16, queue.MaxChallengeDifficulty}

// attackConfig is the settings of "loadgen attack": no flags, its settings
// line names the fixed ones.
type attackConfig struct{ shown }

// bind shows the fixed settings.
func (c *attackConfig) bind(s *settings) {
	s.showAs("", func() string {
		return fmt.Sprintf("places=%d budget=%s workers=%d bits=%s", attackPlaces, attackBudget, attackWorkers, strings.Trim(fmt.Sprint(attackSteps), "[]"))
	})
}

// RunAttack measures what one place in a line costs a script on this
// machine: a script (Go, the fastest solver waitq knows: challenge.Solve)
// tries to take attackPlaces places in an event with no challenge, with each
// difficulty, and with join tokens required (it holds no key of the shop).
// producer-api runs as shipped: no X-User-Id trusted, so each place needs
// a visitor identity of its own, which the script gets for free (a new
// cookie a place), and no per-address limit (an attacker with many
// addresses). It prints places per minute and the solver's CPU-seconds per
// place.
func RunAttack(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg attackConfig
	if ok, err := begin("attack", &cfg, args, stdout, stderr); !ok {
		return err
	}
	st, err := startStack(ctx, stackSpec{producer: true, producerEnv: map[string]string{
		"WAITQ_TRUST_USER_HEADER": "false", "WAITQ_COOKIE_INSECURE": "true",
	}}, stderr)
	if err != nil {
		return err
	}
	defer st.close()
	fmt.Fprintf(stdout, "target producer-api (as shipped: visitor identities, no trusted X-User-Id, no per-address limit) over %s and kfake\n\n", st.redisKind(ctx))
	fmt.Fprintln(stdout, "| the event asks | places taken | refused | time | places a minute | solver CPU-s a place |")
	fmt.Fprintln(stdout, "|---|---:|---:|---:|---:|---:|")
	run := stack.RandomHex(3)
	for _, bits := range attackSteps {
		label, challenge := "no challenge", ""
		if bits > 0 {
			label, challenge = fmt.Sprintf("a %d-bit challenge", bits), fmt.Sprintf(`,"challenge":{"mode":"fixed","difficulty":%d}`, bits)
		}
		ev := fmt.Sprintf("attack-%s-%d", run, bits)
		if err := createEvent(ctx, st.producer, st.token, ev, `{"capacity":1,"holdSeconds":3600,"partitions":3`+challenge+`}`); err != nil {
			return err
		}
		fmt.Fprintln(stdout, attack(ctx, st.producer, ev, "", label))
	}
	ev := "attack-" + run + "-invite"
	secret := strings.Repeat("k", 43) // a shop's key the script does not hold
	if err := createEvent(ctx, st.producer, st.token, ev, `{"capacity":1,"partitions":3,"joinToken":{"required":true,"keys":[{"kid":"shop","alg":"HS256","secret":"`+secret+`"}]}}`); err != nil {
		return err
	}
	// Its best try: a token of its own making, under the shop's kid.
	forged := "eyJhbGciOiJIUzI1NiIsImtpZCI6InNob3AiLCJ0eXAiOiJKV1QifQ.eyJzdWIiOiJib3QiLCJhdWQiOiJ4In0.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	fmt.Fprintln(stdout, attack(ctx, st.producer, ev, forged, "join tokens (invite only)"))
	return nil
}

// attack runs one step: workers take places in ev until attackPlaces are
// taken or the budget ends, and returns the table's row.
func attack(ctx context.Context, base, ev, joinToken, label string) string {
	ctx, cancel := context.WithTimeout(ctx, attackBudget)
	defer cancel()
	var taken, refused, solveNs atomic.Int64
	transport := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: attackWorkers}
	start := time.Now()
	var wg sync.WaitGroup
	for range attackWorkers {
		wg.Go(func() {
			for ctx.Err() == nil && taken.Load() < attackPlaces {
				v := testclient.NewVisitor(base) // a new person: a new cookie
				jar, _ := cookiejar.New(nil)
				v.HTTP = &http.Client{Jar: jar, Transport: transport, Timeout: 10 * time.Second}
				v.JoinToken = joinToken
				ok, solved, err := take(ctx, v, ev)
				solveNs.Add(int64(solved))
				switch {
				case ok:
					taken.Add(1)
				case err == nil:
					refused.Add(1)
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	n := taken.Load()
	perPlace := "–"
	if n > 0 {
		perPlace = fmt.Sprintf("%.4f", time.Duration(solveNs.Load()/n).Seconds())
	}
	return fmt.Sprintf("| %s | %d | %d | %.1f s | %.0f | %s |", label, n, refused.Load(), took.Seconds(), float64(n)/took.Minutes(), perPlace)
}

// take tries one place as a fresh visitor: the identity, the challenge
// solved, the join. It reports whether the join was taken and how long the
// solver ran; err is a failure that is neither (the budget ended).
func take(ctx context.Context, v *testclient.Visitor, ev string) (bool, time.Duration, error) {
	if v.JoinToken == "" {
		if _, _, err := v.Identify(ctx); err != nil {
			return false, 0, err
		}
	}
	ch, err := v.Challenge(ctx, ev)
	if err != nil {
		return false, 0, nil // refused at the door: no place
	}
	var body *producer.JoinBody
	var solved time.Duration
	if ch.Required {
		t0 := time.Now()
		sol, err := challenge.Solve(ctx, ch.Challenge, nil)
		solved = time.Since(t0)
		if err != nil {
			return false, solved, err
		}
		body = &producer.JoinBody{Challenge: ch.Challenge, Solution: sol}
	}
	_, ref, err := v.JoinWith(ctx, ev, body)
	return err == nil && ref == nil, solved, err
}
