package redisstore

import (
	"errors"
	"fmt"
)

// The admission step's part of the replies of the scripts run behind it
// (lua/admission.lua's admit(): tick.lua, ingest.lua, release.lua), and the
// lists those replies are made of.

// admitReply is what admit() changed: the end of the holds it gave, the
// users it admitted, the holders it expired (their recorded stay ended).
type admitReply struct {
	expiresAt int64
	admitted  []admittedUser
	expired   []string
}

// decodeAdmit reads admit()'s part of a reply: expiresAt, the admitted
// triples (user, place score, served mark), the expired users.
func decodeAdmit(expires, adm, expired any) (admitReply, error) {
	var a admitReply
	a.expiresAt, _ = expires.(int64)
	var err1, err2 error
	a.admitted, err1 = triples(adm)
	for i := range a.admitted {
		a.admitted[i].expires = a.expiresAt
	}
	a.expired, err2 = users(expired)
	return a, errors.Join(err1, err2)
}

// changes are a's changes in event, to record.
func (a admitReply) changes(event string) changes {
	return changes{event: event, admitted: a.admitted, ended: a.expired}
}

// triples reads a script's flat list of triples (user, a, b).
func triples(v any) ([]admittedUser, error) {
	return tuples(v, 3, func(u string, n []int64) admittedUser { return admittedUser{user: u, score: n[0], served: n[1]} })
}

// quads reads a script's flat list of quads user, place score, an end
// (as expires), served mark: away_lib.lua's calls.
func quads(v any) ([]admittedUser, error) {
	return tuples(v, 4, func(u string, n []int64) admittedUser {
		return admittedUser{user: u, score: n[0], expires: n[1], served: n[2]}
	})
}

// tuples reads a script's flat list of size-tuples, each a user and
// size - 1 integers, made into admittedUsers by mk.
func tuples(v any, size int, mk func(user string, n []int64) admittedUser) ([]admittedUser, error) {
	l, ok := v.([]any)
	if !ok || len(l)%size != 0 {
		return nil, fmt.Errorf("not a list of %d-tuples: %v", size, v)
	}
	out := make([]admittedUser, 0, len(l)/size)
	n := make([]int64, size-1)
	for i := 0; i < len(l); i += size {
		u, good := l[i].(string)
		for j := range n {
			var ok bool
			n[j], ok = l[i+1+j].(int64)
			good = good && ok
		}
		if !good {
			return nil, fmt.Errorf("bad %d-tuple %v", size, l[i:i+size])
		}
		out = append(out, mk(u, n))
	}
	return out, nil
}

// users reads a script's list of user ids.
func users(v any) ([]string, error) {
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("not a list of users: %v", v)
	}
	out := make([]string, len(l))
	for i, u := range l {
		if out[i], ok = u.(string); !ok {
			return nil, fmt.Errorf("not a user id: %v", u)
		}
	}
	return out, nil
}
