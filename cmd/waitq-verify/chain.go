package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/waitq/waitq/pkg/draw"
)

// isChain tells a chain draw (it has an entryRoot) from a classic export.
func isChain(raw []byte) bool {
	var probe struct {
		EntryRoot *string `json:"entryRoot"`
	}
	return json.Unmarshal(raw, &probe) == nil && probe.EntryRoot != nil
}

// verifyChain checks a chain draw and, when receiptPath is set, the
// receipt in that file against it.
func verifyChain(raw []byte, receiptPath string, quiet bool, stdout io.Writer) error {
	var c draw.Chain
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("read the chain draw: %w", err)
	}
	if c.Seed == "" || c.PublicValue == "" {
		return errors.New("the draw has no seed or public value yet (is the public value supplied?)")
	}
	if !quiet && receiptPath == "" {
		for i, e := range c.Order {
			fmt.Fprintf(stdout, "%d\t%s\n", i+1, e)
		}
	}
	if err := c.Verify(); err != nil {
		return fmt.Errorf("%w: event %s: %w", errMismatch, c.EventID, err)
	}
	fmt.Fprintf(stdout, "ok: the chain draw of %s verifies: seed matches commitment %s, %d entries under root %s, public value %s mixed in, the order is the numbers'\n",
		c.EventID, c.Commitment, c.EntryCount, c.EntryRoot, c.PublicValue)
	if receiptPath == "" {
		return nil
	}
	b, err := os.ReadFile(receiptPath)
	if err != nil {
		return err
	}
	var r draw.Receipt
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("read the receipt: %w", err)
	}
	if err := draw.VerifyReceipt(&c, &r); err != nil {
		return fmt.Errorf("%w: the receipt of %s: %w", errMismatch, r.UserID, err)
	}
	fmt.Fprintf(stdout, "ok: the receipt of %s verifies: entry %s, number %d, place %d of %d\n", r.UserID, r.Entry, r.Number, r.Place, c.EntryCount)
	return nil
}
