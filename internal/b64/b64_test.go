package b64

import "testing"

func TestOneSpellingPerValue(t *testing.T) {
	v := []byte("waitq entry token")
	enc := Encode(v)
	if got, err := Decode(enc); err != nil || string(got) != string(v) {
		t.Fatalf("round trip: %q %v", got, err)
	}
	last := enc[len(enc)-1]
	other := enc[:len(enc)-1] + string(last+1) // same bytes, non-zero unused bits
	for _, bad := range []string{enc + "\n", enc[:4] + "\r\n" + enc[4:], enc + "=", other, "a+b/", "é"} {
		if _, err := Decode(bad); err == nil {
			t.Errorf("Decode(%q) accepted", bad)
		}
	}
}

func TestAppendEncodeIsEncode(t *testing.T) {
	for _, v := range [][]byte{nil, {0}, []byte("waitq"), []byte("waitq entry token\xff")} {
		got := AppendEncode([]byte("x."), v)
		if want := "x." + Encode(v); string(got) != want {
			t.Errorf("AppendEncode(%q) = %q, want %q", v, got, want)
		}
		if n := EncodedLen(len(v)); n != len(Encode(v)) {
			t.Errorf("EncodedLen(%d) = %d, want %d", len(v), n, len(Encode(v)))
		}
	}
}
