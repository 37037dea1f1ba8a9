package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitq/waitq/internal/kafkajoin"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/stack"
	"github.com/waitq/waitq/internal/tools/loadgen/procstat"
)

// RunSockets measures how many WebSockets (or SSE streams, -transport sse)
// one ws-gateway process holds with every status frame on time: it fills the
// lines in Redis, starts the gateway as a child process, connects the
// clients and watches whole status ticks.
func RunSockets(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg socketsConfig
	if ok, err := begin("sockets", &cfg, args, stdout, stderr); !ok {
		return err
	}
	soft, hard, limErr := procstat.RaiseNoFile()
	fmt.Fprintf(stdout, "limits   nofile %d (hard %d)  ephemeral ports %s  client source addresses 127.0.0.%d-127.0.0.%d\n",
		soft, hard, procstat.EphemeralPorts(), firstSourceHost, lastSourceHost)
	if limErr != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", limErr)
	}
	if need := uint64(cfg.n) + 256; soft < need {
		fmt.Fprintf(stderr, "loadgen: nofile limit %d is below the %d this run needs in each process; dials past it will fail\n", soft, need)
	}

	st, err := startInfra(ctx, false)
	if err != nil {
		return err
	}
	defer st.Close()
	rc := st.client
	events := socketEvents(cfg.events)
	if err := seedLines(ctx, rc, kafkajoin.BrokerConfig{Brokers: st.Brokers()}, events, cfg.n, stderr); err != nil {
		return err
	}

	secret := stack.RandomHex(16)
	gw, err := startGateway(ctx, cfg, st, secret, stderr)
	if err != nil {
		return err
	}
	defer gw.stop(stderr)
	fmt.Fprintf(stdout, "target   ws-gateway %s child (pid %d)  redis-server %s child  kfake in-process; admissions off (WAITQ_ADMIT_INTERVAL=1h)%s\n",
		cfg.gatewayBin, gw.Pid(), st.redisVersion(ctx), gw.passedEnv())

	rssBefore, err := procstat.RSS(gw.Pid())
	if err != nil {
		return err
	}
	idle, err := gw.metrics(ctx)
	if err != nil {
		return err
	}
	signer, err := queue.NewTicketSigner(secret)
	if err != nil {
		return fmt.Errorf("ticket signer: %w", err)
	}
	fl := newFleet(ctx, cfg.n)
	defer fl.close(stderr)
	dr := fl.dialAll(ctx, cfg, gw, events, signer, stderr)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	rssAfter, err := procstat.RSS(gw.Pid())
	if err != nil {
		return err
	}
	res := socketsResult{cfg: cfg, dial: dr, rssBefore: rssBefore, rssAfter: rssAfter, idle: idle,
		gwFDs: procstat.OpenFDs(gw.Pid()), gwNoFile: procstat.NoFileLimit(gw.Pid()), selfFDs: procstat.OpenFDs(os.Getpid()), selfNoFile: procstat.NoFileLimit(os.Getpid())}
	if dr.connected == 0 {
		err = errors.New("no client connected")
	} else {
		if err = fl.measure(ctx, cfg, gw, rc, &res, stderr); err != nil {
			err = fmt.Errorf("measure: %w", err)
		}
	}
	fl.collectErrors(&res)
	res.gwLogDropped = gw.Discarded()
	fmt.Fprintln(stdout)
	printSockets(stdout, &res)
	return err
}

// socketEvents returns the ids of n bench events.
func socketEvents(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = socketEventPrefix + strconv.Itoa(i+1)
	}
	return ids
}

// socketUser returns the id of user i and the event of its line.
func socketUser(i int, events []string) (user, event string) {
	return fmt.Sprintf("u%07d", i), events[i%len(events)]
}

// seedLines creates the events and their topics and puts n users straight
// into the waiting lines, round-robin over the events.
func seedLines(ctx context.Context, rc redis.UniversalClient, conn kafkajoin.BrokerConfig, events []string, n int, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, seedTimeout)
	defer cancel()
	store, err := redisstore.New(rc, redisstore.Options{})
	if err != nil {
		return err
	}
	evs := make([]queue.Event, len(events))
	for i, ev := range events {
		evs[i] = queue.Event{ID: ev, Capacity: 10, StaySeconds: 3600, State: queue.StateOpen, Partitions: 1}
	}
	if err := putEvents(ctx, store, conn, evs...); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	start := time.Now()
	msgs := make([]queue.Message, 0, seedChunk)
	joined := 0
	for i := 0; i < n; i += seedChunk {
		msgs = msgs[:0]
		for j := i; j < min(i+seedChunk, n); j++ {
			user, ev := socketUser(j, events)
			msgs = append(msgs, queue.Message{V: queue.MessageVersion, Op: queue.OpJoin, EventID: ev, UserID: user, TS: int64(j + 1), ID: "x"})
		}
		res, err := store.Ingest(ctx, msgs, 0)
		if err != nil {
			return fmt.Errorf("seed: users %d-%d: %w", i, i+len(msgs)-1, err)
		}
		if len(res.UnknownEvents) > 0 {
			return fmt.Errorf("seed: users %d-%d: unknown events %v", i, i+len(msgs)-1, res.UnknownEvents)
		}
		joined += res.Joined
	}
	if joined != n {
		return fmt.Errorf("seed: %d of %d users joined", joined, n)
	}
	fmt.Fprintf(stderr, "  seed %5.1fs  %d users in %d lines\n", time.Since(start).Seconds(), n, len(events))
	return nil
}
