// Package promtext reads the unlabelled samples of a Prometheus text
// exposition, for the load tool and tests that watch a service's /metrics.
package promtext

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Parse returns the samples without labels of a Prometheus text exposition,
// by metric name.
func Parse(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || strings.ContainsRune(line, '{') {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[1], 64); err == nil {
			out[fields[0]] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("promtext: read: %w", err)
	}
	return out, nil
}

// Scrape fetches url (a /metrics endpoint) with c and parses it.
func Scrape(ctx context.Context, c *http.Client, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("promtext: scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("promtext: scrape %s: %s", url, resp.Status)
	}
	return Parse(resp.Body)
}
