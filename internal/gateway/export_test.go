package gateway

// SetRelearn sets how many users known before one Status call reads again.
func (t *Tracker) SetRelearn(n int) { t.relearn = n }

// ID is the gateway id the tracker holds presences under.
func (t *Tracker) ID() uint64 { return t.id }
