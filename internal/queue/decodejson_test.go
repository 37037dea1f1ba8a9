package queue

import (
	"encoding/json"
	"reflect"
	"testing"
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
	join.Visit = "8f14e45f-ceea-467f-a8f0-000000000001"
	rec := NewRecord(OpAdmit, "e1", "user-1@x", 1764300000999)
	rec.ExpiresAt, rec.Score, rec.JoinTS = 1764300060999, -42, 1764300000123
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
