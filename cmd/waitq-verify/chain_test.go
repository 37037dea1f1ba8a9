package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waitq/waitq/pkg/draw"
)

const python = "/usr/bin/python3"

// chainDraw draws n users of a chain drop and returns the public draw with
// the first user's receipt.
func chainDraw(t *testing.T, n int) (*draw.Chain, *draw.Receipt) {
	t.Helper()
	seed, err := draw.NewSeed()
	if err != nil {
		t.Fatal(err)
	}
	key := [draw.SaltKeySize]byte{1, 2, 3}
	es := make([]draw.Entry, n)
	for i := range es {
		u := fmt.Sprintf("user-%05d", i)
		es[i] = draw.SaltedEntry(draw.Salt(key, u), u)
	}
	c, tr, err := draw.BuildChain("sale", 1, seed, &draw.PublicSource{Name: "drand", Round: 42}, []byte("drand randomness of round 42"), es)
	if err != nil {
		t.Fatal(err)
	}
	sorted := make([]draw.Entry, len(c.Entries))
	for i, h := range c.Entries {
		sorted[i], _ = draw.ParseEntry(h)
	}
	for _, e := range draw.OrderEntries(sorted, c.Numbers) {
		c.Order = append(c.Order, e.Hex())
	}
	r, ok := c.Receipt(tr, key, "user-00000")
	if !ok {
		t.Fatal("no receipt")
	}
	return c, r
}

func writeJSON(t *testing.T, name string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// verdicts runs waitq-verify and scripts/verify-draw.py on the draw (and
// receipt, when not "") and returns their exit statuses.
func verdicts(t *testing.T, drawPath, receiptPath string) (goExit, pyExit int, out string) {
	t.Helper()
	args, pyArgs := []string{"-q"}, []string{"../../scripts/verify-draw.py", "-q", drawPath}
	if receiptPath != "" {
		args = append(args, "-receipt", receiptPath)
		pyArgs = append(pyArgs, "--receipt", receiptPath)
	}
	goOut, err := runWith(t, "", append(args, drawPath)...)
	switch {
	case err == nil:
	case errors.Is(err, errMismatch):
		goExit = 1
	default:
		goExit = 2
	}
	pyOut, err := exec.Command(python, pyArgs...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		pyExit = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	return goExit, pyExit, goOut + string(pyOut)
}

func TestGoAndPythonAgreeOnAChainDraw(t *testing.T) {
	if _, err := os.Stat(python); err != nil {
		t.Skip("no", python)
	}
	c, r := chainDraw(t, 10_000)
	good, receipt := writeJSON(t, "draw.json", c), writeJSON(t, "receipt.json", r)
	if g, p, out := verdicts(t, good, receipt); g != 0 || p != 0 {
		t.Fatalf("the real draw and receipt: waitq-verify %d, verify-draw.py %d\n%s", g, p, out)
	}

	swapped := *c
	swapped.Order = append([]string(nil), c.Order...)
	swapped.Order[5000], swapped.Order[5001] = swapped.Order[5001], swapped.Order[5000]
	number := *c
	number.Numbers = append([]uint64(nil), c.Numbers...)
	number.Numbers[9999] ^= 1
	value := *c
	value.PublicValue = "00" + c.PublicValue[2:]
	forged := *r
	forged.Place = r.Place%10_000 + 1
	other := *r
	other.EventID = "another"
	for name, paths := range map[string][2]string{
		"two places swapped":   {writeJSON(t, "d.json", swapped), ""},
		"a number changed":     {writeJSON(t, "d.json", number), ""},
		"another public value": {writeJSON(t, "d.json", value), ""},
		"a forged place":       {good, writeJSON(t, "r.json", forged)},
		"another event's":      {good, writeJSON(t, "r.json", other)},
	} {
		if g, p, out := verdicts(t, paths[0], paths[1]); g != 1 || p != 1 {
			t.Errorf("%s: waitq-verify %d, verify-draw.py %d, want 1 and 1\n%s", name, g, p, out)
		} else if !strings.Contains(out, "does not verify") {
			t.Errorf("%s: no verdict said\n%s", name, out)
		}
	}
}
