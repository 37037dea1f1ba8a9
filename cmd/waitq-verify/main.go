// Command waitq-verify checks a ticket drop's draw. A classic draw (the
// admin export, GET /v1/admin/events/{eventId}/draw): that the revealed seed
// matches the commitment published before the opening, and that the order
// the service holds is exactly the one package draw's rule gives for the
// pre-queue's users. A chain draw (the public GET /v1/events/{eventId}/draw,
// told apart by its entryRoot): the seed's commitment, the entry root over
// the published entries, the public value mixed in, every number and the
// order; with -receipt, one visitor's receipt against it. It reads the
// draw from a file, from stdin, or from the service, prints the drawn order
// and exits 0 when it verifies, 1 when it does not, 2 on bad usage or input.
//
//	waitq-verify export.json
//	curl -H "Authorization: Bearer $T" https://api/v1/admin/events/sale/draw | waitq-verify
//	waitq-verify -url https://api/v1/admin/events/sale/draw -token "$T" -user alice
//	waitq-verify -url https://api/v1/events/sale/draw -receipt my-receipt.json
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/waitq/waitq/pkg/draw"
)

// errMismatch marks a draw that does not verify (exit status 1).
var errMismatch = errors.New("the draw does not verify")

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Getenv)
	switch {
	case err == nil:
	case errors.Is(err, errMismatch):
		fmt.Fprintln(os.Stderr, "waitq-verify:", err)
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "waitq-verify:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("waitq-verify", flag.ContinueOnError)
	fs.SetOutput(stdout)
	url := fs.String("url", "", "fetch the export from this URL (the admin API's /v1/admin/events/{eventId}/draw)")
	token := fs.String("token", getenv("WAITQ_ADMIN_TOKEN"), "admin bearer token for -url (default $WAITQ_ADMIN_TOKEN)")
	user := fs.String("user", "", "print only this user's drawn place")
	quiet := fs.Bool("q", false, "print only the verdict")
	receipt := fs.String("receipt", "", "check this visitor's receipt (a JSON file) against a chain draw")
	fs.Usage = func() {
		fmt.Fprintln(stdout, "usage: waitq-verify [-url URL [-token T]] [-user ID | -receipt FILE] [-q] [draw.json]   (stdin without a file or -url)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	raw, err := readDraw(ctx, *url, *token, fs.Arg(0), stdin)
	if err != nil {
		return err
	}
	if isChain(raw) {
		return verifyChain(raw, *receipt, *quiet, stdout)
	}
	if *receipt != "" {
		return errors.New("-receipt needs a chain draw (GET /v1/events/{eventId}/draw of a drop with a public source)")
	}
	x, err := parseExport(raw)
	if err != nil {
		return err
	}
	switch {
	case *user != "":
		place := slices.Index(x.Order, *user) + 1
		if place == 0 {
			return fmt.Errorf("%s is not in the pre-queue of %s", *user, x.EventID)
		}
		fmt.Fprintf(stdout, "%s: drawn place %d of %d\n", *user, place, len(x.Order))
	case !*quiet:
		for i, u := range x.Order {
			fmt.Fprintf(stdout, "%d\t%s\n", i+1, u)
		}
	}
	if err := x.Verify(); err != nil {
		return fmt.Errorf("%w: event %s: %w", errMismatch, x.EventID, err)
	}
	fmt.Fprintf(stdout, "ok: the draw of %s verifies: seed matches commitment %s, %d users in the drawn order\n", x.EventID, x.Commitment, len(x.Order))
	return nil
}

// readDraw reads the draw from url, from the file named path, or from
// stdin, in that order of preference.
func readDraw(ctx context.Context, url, token, path string, stdin io.Reader) ([]byte, error) {
	var r io.Reader = stdin
	switch {
	case url != "":
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
		}
		r = resp.Body
	case path != "":
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxDrawBytes))
	if err != nil {
		return nil, fmt.Errorf("read the draw: %w", err)
	}
	return b, nil
}

// maxDrawBytes bounds the draw read (a million entries' chain is ~100 MB).
const maxDrawBytes = 1 << 30

// parseExport reads a classic draw's admin export.
func parseExport(raw []byte) (*draw.Export, error) {
	var x draw.Export
	if err := json.Unmarshal(raw, &x); err != nil {
		return nil, fmt.Errorf("read the export: %w", err)
	}
	if x.Seed == "" || x.Commitment == "" {
		return nil, errors.New("the export has no seed or commitment (is the event past its opening?)")
	}
	if _, err := draw.ParseSeed(x.Seed); err != nil {
		return nil, fmt.Errorf("the export's seed: %w", err)
	}
	return &x, nil
}
