package queue

import (
	"reflect"
	"strings"
	"testing"
)

// TestDrawRecords: a chain draw's drawfrozen and drawmade records travel
// as JSON and back unchanged; one without its draw, with a user, a bad
// root, or a value and missed both, is invalid.
func TestDrawRecords(t *testing.T) {
	root := strings.Repeat("0a", 32)
	frozen := NewRecord(OpDrawFrozen, "ev", "", 5)
	frozen.Draw = &DrawRecord{Root: root, Count: 3, Marks: map[int]int64{0: 7, 2: -1}}
	made := NewRecord(OpDrawMade, "ev", "", 6)
	made.Draw = &DrawRecord{Root: root, Value: "beef"}
	missed := NewRecord(OpDrawMade, "ev", "", 6)
	missed.Draw = &DrawRecord{Root: root, Missed: true}
	for _, m := range []Message{frozen, made, missed} {
		b, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeMessage(b)
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("%s: %+v %v, want %+v", b, got, err, m)
		}
	}
	bad := map[string]func(m *Message){
		"no draw":          func(m *Message) { m.Draw = nil },
		"a user":           func(m *Message) { m.UserID = "u1" },
		"a short root":     func(m *Message) { m.Draw.Root = "abcd" },
		"a root not hex":   func(m *Message) { m.Draw.Root = strings.Repeat("zz", 32) },
		"value and missed": func(m *Message) { m.Draw.Missed = true },
		"neither":          func(m *Message) { m.Draw.Value = "" },
		"a value not hex":  func(m *Message) { m.Draw.Value = "xy" },
		"a negative count": func(m *Message) { m.Draw.Count = -1 },
	}
	for name, f := range bad {
		m := made
		d := *made.Draw
		m.Draw = &d
		f(&m)
		if err := m.Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
}

// TestDrawMarks: marks read back as written, by partition; a malformed
// list is an error.
func TestDrawMarks(t *testing.T) {
	marks := map[int]int64{2: 7, 0: -1, 10: 123}
	s := FormatDrawMarks(marks)
	if s != "0 -1 2 7 10 123" {
		t.Fatalf("written %q", s)
	}
	if got, err := ParseDrawMarks(s); err != nil || !reflect.DeepEqual(got, marks) {
		t.Fatalf("read back %v %v", got, err)
	}
	for _, v := range []string{"1", "a 1", "1 b", "1 2 3"} {
		if _, err := ParseDrawMarks(v); err == nil {
			t.Errorf("%q: read", v)
		}
	}
}
