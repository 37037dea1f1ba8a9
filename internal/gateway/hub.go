package gateway

import "sync"

const hubShards = 64

// hub registers the open sockets, sharded by user so that connects and
// disconnects of many users do not contend on one lock.
type hub struct {
	slicer slicer
	shards [hubShards]hubShard
}

type hubShard struct {
	mu    sync.Mutex
	conns map[userKey][]*conn
}

type userKey struct{ event, user string }

func newHub() *hub {
	h := &hub{slicer: newSlicer()}
	for i := range h.shards {
		h.shards[i].conns = map[userKey][]*conn{}
	}
	return h
}

func (h *hub) shard(k userKey) *hubShard {
	return &h.shards[h.slicer.shard(k.event, k.user)]
}

func (h *hub) add(c *conn) {
	k := userKey{c.eventID, c.userID}
	s := h.shard(k)
	s.mu.Lock()
	s.conns[k] = append(s.conns[k], c)
	s.mu.Unlock()
}

// remove unregisters c and reports whether it was its user's last socket.
func (h *hub) remove(c *conn) bool {
	k := userKey{c.eventID, c.userID}
	s := h.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.conns[k]
	for i, x := range list {
		if x == c {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.conns, k)
		return true
	}
	s.conns[k] = list
	return false
}

// user returns the sockets of one user of one event.
func (h *hub) user(event, user string) []*conn {
	k := userKey{event, user}
	s := h.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*conn(nil), s.conns[k]...)
}

// eachInSlice calls f for every socket of slice j of statusSlices, one
// shard locked at a time; f must not block.
func (h *hub) eachInSlice(j int, f func(*conn)) {
	per := hubShards / statusSlices
	h.eachIn(j*per, (j+1)*per, f)
}

// each calls f for every socket, one shard locked at a time; f must not
// block.
func (h *hub) each(f func(*conn)) { h.eachIn(0, hubShards, f) }

// eachIn calls f for every socket of shards [from, to), one shard locked at
// a time.
func (h *hub) eachIn(from, to int, f func(*conn)) {
	for i := from; i < to; i++ {
		s := &h.shards[i]
		s.mu.Lock()
		for _, list := range s.conns {
			for _, c := range list {
				f(c)
			}
		}
		s.mu.Unlock()
	}
}

// count returns the number of open sockets.
func (h *hub) count() int {
	n := 0
	for i := range h.shards {
		s := &h.shards[i]
		s.mu.Lock()
		for _, list := range s.conns {
			n += len(list)
		}
		s.mu.Unlock()
	}
	return n
}
