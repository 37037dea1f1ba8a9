package queue

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/waitq/waitq/internal/testkit/oddtext"
)

// The seeds: the usual shapes, and each way out of the scanner.
var unmarshalSeeds = []string{
	`{"v":1,"op":"join","eventId":"e1","userId":"u1","ts":1764300000123,"id":"9f86d081884c7d659a2feaa0","visit":"8f14e45f-ceea-467f-a8f0"}`,
	`{"v":1,"op":"leave","eventId":"e1","userId":"u1","ts":5,"id":"x"}`,
	` { "v" : 2 , "op":"admit","eventId":"e1","userId":"u1","ts":9,"expiresAt":99,"score":-5,"joinTs":5} `,
	`{"v":2,"op":"hold","eventId":"e1","userId":"u1","ts":9,"expiresAt":99,"item":"A-1"}`,
	`{"v":2,"op":"config","eventId":"e1","ts":9,"event":{"eventId":"e1","capacity":1}}`,
	`{}`, `null`, `[]`, `{"v":1}x`, `{"v":01}`, `{"v":-0}`, `{"v":1.0}`, `{"v":1e2}`,
	`{"ts":123456789012345678901}`, `{"TS":5}`, `{"ts":5,"Ts":6}`, `{"ts":5,"ts":6}`,
	`{"userId":"a\"b"}`, `{"userId":"é"}`, `{"userId":null}`, `{"op":5}`, `{"v":"1"}`,
	`{"v":1,}`, `{"v":1`, `{"v" 1}`, `{,}`, "{\"userId\":\"a\x7fb\"}", "{\"userId\":\"a\tb\"}",
}

// FuzzUnmarshalMessage: unmarshalMessage is json.Unmarshal into a Message:
// the same message, or an error both times.
func FuzzUnmarshalMessage(f *testing.F) {
	for _, s := range unmarshalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want Message
		gotErr, wantErr := unmarshalMessage(b, &got), json.Unmarshal(b, &want)
		if (gotErr != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: got %+v, %v; encoding/json %+v, %v", b, got, gotErr, want, wantErr)
		}
	})
}

// The usual shapes are read by the scanner, not handed to encoding/json.
func TestScanFlatMessageReadsTheUsualShapes(t *testing.T) {
	for _, s := range unmarshalSeeds[:4] {
		var m Message
		if !scanFlatMessage([]byte(s), &m) {
			t.Errorf("%s: not read by the scanner", s)
		}
	}
	join := NewMessage(OpJoin, "e1", "user-1@x", 1764300000123)
	join.JoinKey = "8f14e45f-ceea-467f-a8f0-000000000001"
	rec := NewRecord(OpAdmit, "e1", "user-1@x", 1764300000999)
	rec.ExpiresAt, rec.Score, rec.ServedMark = 1764300060999, -42, 1764300000123
	for _, m := range []Message{join, rec} {
		b, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		var got Message
		if !scanFlatMessage(b, &got) || got != m {
			t.Errorf("%s: scanned %+v", b, got)
		}
	}
}

// BenchmarkUnmarshalMessage is a join's parse: the scanner against
// encoding/json.
func BenchmarkUnmarshalMessage(b *testing.B) {
	v := []byte(unmarshalSeeds[0])
	b.Run("scanner", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m Message
			if err := unmarshalMessage(v, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m Message
			if err := json.Unmarshal(v, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// randomMessage fills every string and integer field of a Message through
// reflection, so a field added to Message and not to AppendJSON makes the
// comparison fail.
func randomMessage(r *rand.Rand) Message {
	var m Message
	v := reflect.ValueOf(&m).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(oddtext.String(r))
		case reflect.Int, reflect.Int64:
			if r.IntN(4) > 0 {
				f.SetInt(r.Int64() - r.Int64())
			}
		case reflect.Pointer: // Event: encoding/json's path, checked apart
		default:
			panic("randomMessage: field " + v.Type().Field(i).Name + " of an unknown kind")
		}
	}
	return m
}

func TestAppendJSONIsMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	msgs := []Message{
		NewMessage(OpJoin, "ev-1", "alice", 1000),
		{V: 1, Op: OpJoin, EventID: "ev", UserID: "alice", TS: 1000, ID: "alice-join"},
		NewConfigRecord(Event{ID: "ev", Capacity: 10}, 2000),
	}
	for range 20000 {
		msgs = append(msgs, randomMessage(r))
	}
	for _, m := range msgs {
		want, err := json.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.AppendJSON([]byte("x"))
		if err != nil || string(got) != "x"+string(want) {
			t.Fatalf("%+v: AppendJSON = %s, %v\nwant x%s", m, got, err, want)
		}
	}
}

func FuzzAppendJSON(f *testing.F) {
	f.Add(1, "join", "ev", "alice", int64(1000), "id", int64(0), int64(0), int64(0), "", "", "visit")
	f.Add(2, "admit", "ev<", "a&b\u2028", int64(-5), "", int64(9), int64(-3), int64(7), "00ff", "it\xffem", "")
	f.Fuzz(func(t *testing.T, v int, op, ev, user string, ts int64, id string, exp, score, servedMark int64, seed, item, visit string) {
		m := Message{V: v, Op: Op(op), EventID: ev, UserID: user, TS: ts, ID: id, ExpiresAt: exp, Score: score, ServedMark: servedMark, Seed: seed, Item: item, JoinKey: visit}
		want, err := json.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := m.AppendJSON(nil); err != nil || string(got) != string(want) {
			t.Fatalf("AppendJSON = %s, %v\nwant          %s", got, err, want)
		}
	})
}
