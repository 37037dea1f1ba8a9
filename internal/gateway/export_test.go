package gateway

// SetRelearn sets how many users known before one Status call reads again.
func (t *Tracker) SetRelearn(n int) { t.relearn = n }
