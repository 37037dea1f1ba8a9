package stack

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/waitq/waitq/internal/demoshop"
	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/jointoken"
)

// The devstack's demo events: what they are and how they are created
// through the admin API.

// demo is the configuration of the demo event and of the demo drop.
var demo = queue.Event{Capacity: 10, StaySeconds: 60, Partitions: 3}

// demoShopCapacity is how many visitors the demo shop takes at once: few,
// so that a second browser window waits in line.
const demoShopCapacity = 1

// demoShop is the demo shop's limit: two pages at once, 50 ms each, so that
// a load test through the guard finds where it slows down; the shop's event
// admits adaptively, at most demoShopPerMinute a minute, to keep the
// shop's p95 under demoShopTargetMs.
var demoShop = demoshop.Config{Workers: 2, WorkTime: 50 * time.Millisecond}

const (
	demoShopPerMinute = 120
	demoShopTargetMs  = 500
)

// demoJoinKeyID is the kid of the demo shop's join-token key.
const demoJoinKeyID = "demo-1"

// demoDropChallenge is the demo drop's proof-of-work: adaptive, a moment
// for one browser at the demo's rates, harder as joins pour in.
var demoDropChallenge = queue.ChallengePolicy{Mode: queue.ChallengeAdaptive, MinDifficulty: 16, MaxDifficulty: 18, JoinsPerSecond: 20}

// demoPage brands a demo event's waiting room in Korean (the seed
// documents' users), a browser asking for English or Japanese gets those.
func demoPage(title, message string) json.RawMessage {
	b, _ := json.Marshal(queue.Page{Title: title, Message: message, AccentColor: "#0b5cad", Locale: "ko"}) // strings only
	return b
}

// demoDropDelay is how long after the devstack's start its demo drop opens.
const demoDropDelay = time.Minute

// createDemos creates the demo event and the demo drop through the admin
// API. A drop kept from an earlier run (a persistent Kafka and Redis) whose
// pre-queue already started keeps its schedule: it cannot move.
func (d *Devstack) createDemos(ctx context.Context, base, reportToken, shopToken string) error {
	if d.DemoEvent != "" {
		body := producer.EventBody{Capacity: &demo.Capacity, StaySeconds: &demo.StaySeconds, Partitions: &demo.Partitions,
			Page: demoPage("데모 공연 티켓 예매", "잠시만 기다려 주세요. 차례가 되면 자동으로 입장합니다.\n\n1인 1매만 예매할 수 있습니다.")}
		if err := d.putEvent(ctx, base, d.DemoEvent, body); err != nil {
			return err
		}
	}
	if d.DemoShop != "" {
		capacity, hold, target, rate := demoShopCapacity, demo.StaySeconds, "http://"+d.ShopAddr+"/", demoShopPerMinute
		adaptive, err := json.Marshal(queue.Adaptive{TargetLatencyMs: demoShopTargetMs, StepMs: 2000, SignalTimeoutSeconds: 10}.WithDefaults(rate))
		if err != nil {
			return err
		}
		body := producer.EventBody{Capacity: &capacity, StaySeconds: &hold, Partitions: &demo.Partitions, TargetURL: &target,
			AdmitPerMinute: &rate, Adaptive: adaptive, ReportToken: &reportToken, ShopToken: &shopToken,
			Page: demoPage("데모 상점 봄 세일", "상점이 붐비고 있습니다. 순서대로 입장합니다.")}
		if err := d.putEvent(ctx, base, d.DemoShop, body); err != nil {
			return err
		}
	}
	if d.DemoShop != "" && d.DemoMembers != "" {
		policy, err := json.Marshal(queue.JoinTokenPolicy{Required: true, Keys: []queue.JoinTokenKey{
			{Kid: demoJoinKeyID, Alg: jointoken.HS256, Secret: base64.RawURLEncoding.EncodeToString(d.joinKey)},
		}})
		if err != nil {
			return err
		}
		body := producer.EventBody{Capacity: &demo.Capacity, StaySeconds: &demo.StaySeconds, Partitions: &demo.Partitions, JoinToken: policy,
			Page: demoPage("회원 선예매", "데모 상점 회원 전용 선예매입니다. 계정 하나에 자리 하나.")}
		if err := d.putEvent(ctx, base, d.DemoMembers, body); err != nil {
			return err
		}
	}
	if d.DemoDrop != "" {
		opensAt, prequeue := time.Now().Add(demoDropDelay).UnixMilli(), int(2*demoDropDelay/time.Second)
		pow, err := json.Marshal(demoDropChallenge)
		if err != nil {
			return err
		}
		body := producer.EventBody{Capacity: &demo.Capacity, StaySeconds: &demo.StaySeconds, Partitions: &demo.Partitions,
			OpensAt: &opensAt, PrequeueSeconds: &prequeue, Challenge: pow,
			Page: demoPage("한정판 스니커즈 드롭", "사전 대기열에 들어온 모든 분은 시작 시각에 공정한 추첨으로 순서를 받습니다.")}
		if err := d.putEvent(ctx, base, d.DemoDrop, body); err != nil && queue.ErrorCode(err) != queue.CodeScheduleLocked {
			return err
		}
	}
	return nil
}

// putEvent creates or updates event id with body; a refusal comes back as
// the *queue.Error of its body.
func (d *Devstack) putEvent(ctx context.Context, base, id string, body producer.EventBody) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, base+"/v1/admin/events/"+id, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+d.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("create event %s: %w", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		var eb httpkit.ErrorBody
		raw, _ := io.ReadAll(resp.Body)
		if json.Unmarshal(raw, &eb) == nil && eb.Error.Code != "" {
			return fmt.Errorf("create event %s: %w", id, &queue.Error{Code: eb.Error.Code, Message: eb.Error.Message})
		}
		return fmt.Errorf("create event %s: %s: %s", id, resp.Status, raw)
	}
	return nil
}
